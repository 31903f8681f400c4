//! Real git repositories for tests, made with the git command line.

use std::path::{Path, PathBuf};
use std::process::Command;

pub struct TestRepo {
    _dir: tempfile::TempDir,
    pub root: PathBuf,
}

/// Runs git in `dir`, panicking with its output on failure.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(["-c", "protocol.file.allow=always"])
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

impl TestRepo {
    /// A repository with one commit on `main`: `README` and `src/lib.rs`.
    pub fn new() -> TestRepo {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().join("repo").canonicalize_or_make();
        git(&root, &["init", "-q", "-b", "main"]);
        git(&root, &["config", "user.name", "t"]);
        git(&root, &["config", "user.email", "t@example.com"]);
        std::fs::create_dir_all(root.join("src")).expect("mkdir");
        std::fs::write(root.join("README"), "hello\n").expect("write");
        std::fs::write(root.join("src/lib.rs"), "fn a() {}\n").expect("write");
        git(&root, &["add", "-A"]);
        git(&root, &["commit", "-q", "-m", "first"]);
        TestRepo { _dir: dir, root }
    }

    pub fn git(&self, args: &[&str]) -> String {
        git(&self.root, args)
    }

    pub fn write(&self, rel: &str, text: &str) {
        let p = self.root.join(rel);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(p, text).expect("write");
    }
}

trait MakeDir {
    fn canonicalize_or_make(self) -> PathBuf;
}

impl MakeDir for PathBuf {
    fn canonicalize_or_make(self) -> PathBuf {
        std::fs::create_dir_all(&self).expect("mkdir");
        self.canonicalize().expect("canonical")
    }
}
