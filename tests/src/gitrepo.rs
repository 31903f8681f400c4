//! Real git repositories for end-to-end tests, made with the git CLI.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Runs git in `dir`; panics with git's words when it fails.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = git_out(dir, args);
    assert!(
        out.status.success(),
        "git {args:?} in {} failed: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Runs git in `dir` and returns what happened.
pub fn git_out(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new("git")
        .args(["-c", "protocol.file.allow=always"])
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "Person")
        .env("GIT_AUTHOR_EMAIL", "person@example.com")
        .env("GIT_COMMITTER_NAME", "Person")
        .env("GIT_COMMITTER_EMAIL", "person@example.com")
        .output()
        .expect("git runs")
}

/// Makes `dir` a repository with one commit on `main`: `README`,
/// `src/lib.rs` and `docs/guide.md`.
pub fn init_repo(dir: &Path) {
    std::fs::create_dir_all(dir.join("src")).expect("mkdir");
    std::fs::create_dir_all(dir.join("docs")).expect("mkdir");
    git(dir, &["init", "-q", "-b", "main"]);
    git(dir, &["config", "user.name", "Person"]);
    git(dir, &["config", "user.email", "person@example.com"]);
    std::fs::write(dir.join("README"), "hello\n").expect("write");
    std::fs::write(dir.join("src/lib.rs"), "pub fn a() {}\n").expect("write");
    std::fs::write(dir.join("docs/guide.md"), "# Guide\n").expect("write");
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", "first"]);
}

/// What must not change in a person's checkout: HEAD, its branch's tip,
/// the index's bytes, the status, and every tracked file's bytes.
#[derive(Debug, PartialEq, Eq)]
pub struct Snapshot {
    head: String,
    tip: String,
    index: Vec<u8>,
    status: String,
    files: Vec<(String, Vec<u8>)>,
}

pub fn snapshot(dir: &Path) -> Snapshot {
    let files = git(dir, &["ls-files"])
        .lines()
        .map(|f| {
            (
                f.to_string(),
                std::fs::read(dir.join(f)).unwrap_or_default(),
            )
        })
        .collect();
    Snapshot {
        head: std::fs::read_to_string(dir.join(".git/HEAD")).expect("HEAD"),
        tip: git(dir, &["rev-parse", "HEAD"]),
        index: std::fs::read(dir.join(".git/index")).expect("index"),
        status: git(dir, &["status", "--porcelain", "--untracked-files=all"]),
        files,
    }
}

/// Local branches named `agentd/*`.
pub fn agentd_branches(dir: &Path) -> Vec<String> {
    git(
        dir,
        &["branch", "--list", "agentd/*", "--format=%(refname:short)"],
    )
    .lines()
    .map(str::to_string)
    .collect()
}

/// `<dir>/.agentd/worktrees/<short_id>`.
pub fn tree_of(dir: &Path, short_id: &str) -> PathBuf {
    dir.join(".agentd/worktrees").join(short_id)
}
