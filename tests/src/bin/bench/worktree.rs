//! Worktree cost: agentd making and removing an agent's worktree (the
//! library calls the supervisor makes) against `git worktree add` and
//! `git worktree remove` + `git branch -D` on the same repository, on a
//! small repository and on one with 10,000 files.
//!
//! agentd's creation is `plan` + `create` (branch, tree checked out and
//! locked, `.agentd/` excluded, submodules initialised); its removal is
//! `remove_if_clean`, which makes a full status of the tree (untracked
//! files walked) before it deletes the tree and the branch. git's removal
//! checks the tree too (it refuses a dirty one without `--force`), and the
//! baseline deletes its branch as agentd does. git runs as a process per
//! command, agentd in this one: the baseline pays a fork and exec.
//!
//! Each iteration runs both, the order flipped every other iteration so
//! that noise and cache effects hit both. The repositories are made in the
//! temporary directory (`$TMPDIR`); on a disk, creating 10,000 files
//! dominates both sides, so set `TMPDIR=/dev/shm` to compare the code.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use agentd::worktree::{self, Settled, Target};

use super::{arg, ms, percentile, walk_size};

/// Files of the small repository.
const SMALL_FILES: usize = 10;
/// Directories the large repository's files are spread over.
const LARGE_DIRS: usize = 100;

/// A committed repository in a temporary directory, with a sibling
/// directory for git's trees (outside the checkout, as a person would put
/// them).
struct Repo {
    _dir: tempfile::TempDir,
    /// The checkout, canonical (what the supervisor passes to `plan`).
    root: PathBuf,
    trees: PathBuf,
    files: usize,
    dirs: usize,
}

/// Runs the git CLI in `cwd`, without the machine's or the user's config,
/// and fails the bench if git does.
pub(super) fn git(cwd: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args(args)
        .current_dir(cwd)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "b")
        .env("GIT_AUTHOR_EMAIL", "b@x")
        .env("GIT_COMMITTER_NAME", "b")
        .env("GIT_COMMITTER_EMAIL", "b@x")
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {} failed: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A repository of `files` small text files over `dirs` directories, in
/// one commit on `main`.
fn build_repo(files: usize, dirs: usize) -> Repo {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let root = dir.path().join("repo");
    let trees = dir.path().join("git-trees");
    for d in 0..dirs {
        std::fs::create_dir_all(root.join(format!("d{d:03}"))).expect("a directory");
    }
    std::fs::create_dir_all(&trees).expect("the trees' directory");
    for f in 0..files {
        std::fs::write(
            root.join(format!("d{:03}", f % dirs))
                .join(format!("f{f:05}.txt")),
            format!("file {f}\nthe service layer validates the request and applies it\n"),
        )
        .expect("a file");
    }
    git(&root, &["init", "-q", "-b", "main"]);
    git(&root, &["config", "user.name", "agentd bench"]);
    git(&root, &["config", "user.email", "bench@agentd.invalid"]);
    git(&root, &["add", "."]);
    git(&root, &["commit", "-q", "-m", "files"]);
    let root = root.canonicalize().expect("a canonical checkout");
    Repo {
        _dir: dir,
        root,
        trees,
        files,
        dirs,
    }
}

/// One agentd round: (plan, plan + create, remove).
fn agentd_round(repo: &Repo, short_id: &str) -> (Duration, Duration, Duration) {
    let started = Instant::now();
    let plan = worktree::plan(&repo.root, None, short_id, "bench").expect("a worktree plan");
    let planned = started.elapsed();
    worktree::create(&plan, &worktree::running_reason(short_id, "")).expect("a worktree");
    let created = started.elapsed();
    let target = Target {
        checkout: plan.checkout,
        name: short_id.to_string(),
        path: plan.path,
        branch: plan.branch,
        base: plan.base,
        base_commit: plan.base_commit.to_string(),
    };
    let started = Instant::now();
    let settled = worktree::remove_if_clean(&target).expect("a removal");
    let removed = started.elapsed();
    assert!(
        matches!(settled, Settled::Removed(_)),
        "a fresh tree is clean, yet: {settled:?}"
    );
    assert!(!target.path.exists(), "the tree is gone");
    (planned, created, removed)
}

/// One git round: (worktree add, worktree remove, branch -D).
fn git_round(repo: &Repo, i: usize) -> (Duration, Duration, Duration) {
    let branch = format!("b{i}");
    let tree = repo.trees.join(&branch);
    let tree = tree.to_str().expect("a UTF-8 path");
    let started = Instant::now();
    git(
        &repo.root,
        &["worktree", "add", "-q", "-b", &branch, tree, "HEAD"],
    );
    let added = started.elapsed();
    let started = Instant::now();
    git(&repo.root, &["worktree", "remove", tree]);
    let removed = started.elapsed();
    let started = Instant::now();
    git(&repo.root, &["branch", "-q", "-D", &branch]);
    let deleted = started.elapsed();
    (added, removed, deleted)
}

/// Wall times of one operation, sorted.
struct Times(Vec<Duration>);

impl Times {
    fn of(mut v: Vec<Duration>) -> Times {
        v.sort();
        Times(v)
    }

    fn median(&self) -> Duration {
        percentile(&self.0, 0.5)
    }

    /// p90 when there are enough runs for it to mean something, else the
    /// range.
    fn spread(&self) -> String {
        if self.0.len() >= 10 {
            format!("p90 {:.2}", ms(percentile(&self.0, 0.9)))
        } else {
            format!("{:.2}–{:.2}", ms(self.0[0]), ms(self.0[self.0.len() - 1]))
        }
    }
}

fn row(label: &str, runs: usize, op: &str, agentd: &Times, git: &Times) {
    println!(
        "| {label} | {runs} | {op} | {:.2} | {} | {:.2} | {} | {:.2}x |",
        ms(agentd.median()),
        agentd.spread(),
        ms(git.median()),
        git.spread(),
        agentd.median().as_secs_f64() / git.median().as_secs_f64()
    );
}

/// Per-repository results.
struct Measured {
    label: String,
    runs: usize,
    plan: Times,
    create: Times,
    remove: Times,
    total: Times,
    git_add: Times,
    git_remove: Times,
    git_branch: Times,
    git_total: Times,
}

/// Warms up once each, then `runs` alternating rounds. `offset` keeps the
/// short ids of this repository apart from any other run's.
fn measure(label: &str, repo: &Repo, runs: usize, offset: u32) -> Measured {
    let short = |i: usize| format!("{:08x}", offset + i as u32);
    agentd_round(repo, &short(0));
    git_round(repo, 0);
    let mut a = Vec::with_capacity(runs);
    let mut g = Vec::with_capacity(runs);
    for i in 1..=runs {
        if i % 2 == 0 {
            a.push(agentd_round(repo, &short(i)));
            g.push(git_round(repo, i));
        } else {
            g.push(git_round(repo, i));
            a.push(agentd_round(repo, &short(i)));
        }
    }
    Measured {
        label: label.to_string(),
        runs,
        plan: Times::of(a.iter().map(|t| t.0).collect()),
        create: Times::of(a.iter().map(|t| t.1).collect()),
        remove: Times::of(a.iter().map(|t| t.2).collect()),
        total: Times::of(a.iter().map(|t| t.1 + t.2).collect()),
        git_add: Times::of(g.iter().map(|t| t.0).collect()),
        git_remove: Times::of(g.iter().map(|t| t.1 + t.2).collect()),
        git_branch: Times::of(g.iter().map(|t| t.2).collect()),
        git_total: Times::of(g.iter().map(|t| t.0 + t.1 + t.2).collect()),
    }
}

fn describe(label: &str, repo: &Repo) {
    let git_dir = repo.root.join(".git");
    println!(
        "{label}: {} files in {} directories, {:.1} KiB of files, .git {:.1} KiB, at {}",
        repo.files,
        repo.dirs,
        (walk_size(&repo.root) - walk_size(&git_dir)) as f64 / 1024.0,
        walk_size(&git_dir) as f64 / 1024.0,
        repo.root.display()
    );
}

pub fn bench_worktree(args: &[String]) {
    let overridden: Option<usize> = args
        .iter()
        .any(|a| a == "--runs")
        .then(|| arg(args, "--runs", "").parse().expect("--runs N"));
    let large_files: usize = arg(args, "--files", "10000").parse().expect("--files N");
    let cases = [
        (
            "small",
            SMALL_FILES,
            2,
            overridden.unwrap_or(20),
            0x5a11_0000,
        ),
        (
            "large",
            large_files,
            LARGE_DIRS.min(large_files.max(1)),
            overridden.unwrap_or(5),
            0x1a26_0000,
        ),
    ];
    let mut results = Vec::new();
    for (label, files, dirs, runs, offset) in cases {
        let built = Instant::now();
        let repo = build_repo(files, dirs);
        describe(label, &repo);
        println!(
            "  built in {:.1} s; warm-up, then {runs} rounds of each",
            built.elapsed().as_secs_f64()
        );
        results.push(measure(label, &repo, runs, offset));
    }
    println!();
    println!(
        "agentd = worktree::plan + worktree::create; removal = worktree::remove_if_clean, which runs agentd's full status check (untracked files included) before deleting the tree and its branch."
    );
    println!(
        "git = `git worktree add -b <branch> <dir> HEAD`; removal = `git worktree remove <dir>` + `git branch -D <branch>` (agentd deletes its branch too). git runs as one process per command."
    );
    println!("Wall times in ms; spread is p90 with 10 runs or more, else min–max.");
    println!();
    println!(
        "| repository | runs | operation | agentd median | agentd spread | git median | git spread | agentd / git |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- |");
    for m in &results {
        row(&m.label, m.runs, "create", &m.create, &m.git_add);
        row(&m.label, m.runs, "remove", &m.remove, &m.git_remove);
        row(&m.label, m.runs, "create + remove", &m.total, &m.git_total);
    }
    println!();
    for m in &results {
        println!(
            "{}: agentd plan alone {:.2} ms of create's {:.2} ms (medians); git branch -D alone {:.2} ms of remove's {:.2} ms",
            m.label,
            ms(m.plan.median()),
            ms(m.create.median()),
            ms(m.git_branch.median()),
            ms(m.git_remove.median()),
        );
    }
}
