//! Checkpoint cost (DESIGN §23): recording a 10,000-file workspace with one
//! file changed, as the supervisor does at every user turn, against what
//! git itself spends to make a tree of the same change from its index —
//! libgit2's `add_path` + `write_tree` in this process (the floor: no walk
//! of the workspace at all), and `git update-index` + `git write-tree` as
//! processes. A checkpoint must also stat every file (it has no one
//! telling it what changed: Bash, MCP servers and external agents write
//! behind its back), so the walk is the price of covering every change.
//! Then the store's growth over 100 turns of one changed file each.
//!
//! Each iteration changes one file and times all three, the order flipped
//! every other iteration. Set `TMPDIR=/dev/shm` to take the disk out.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use agentd::worktree::checkpoint::Shadow;

use super::worktree::git;
use super::{arg, ms, percentile, walk_size};

const DIRS: usize = 100;

fn make_repo(root: &Path, files: usize) {
    std::fs::create_dir_all(root).unwrap();
    git(root, &["init", "-q", "-b", "main"]);
    for i in 0..files {
        let dir = root.join(format!("d{:03}", i % DIRS));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join(format!("f{i:05}.txt")),
            format!("file {i}\n{}\n", "x".repeat(200)),
        )
        .unwrap();
    }
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "files"]);
}

fn stats(name: &str, times: &mut [Duration]) -> f64 {
    times.sort();
    let p50 = ms(percentile(times, 0.5));
    println!(
        "{name:<44} p50 {p50:>8.3} ms  p90 {:>8.3} ms",
        ms(percentile(times, 0.9))
    );
    p50
}

pub fn bench_checkpoint(args: &[String]) {
    let files: usize = arg(args, "--files", "10000").parse().unwrap();
    let runs: usize = arg(args, "--runs", "30").parse().unwrap();
    let turns: usize = arg(args, "--turns", "100").parse().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let root: PathBuf = dir.path().join("repo");
    make_repo(&root, files);
    let shadow_dir = dir.path().join("shadow.git");
    let shadow = Shadow::open(&shadow_dir).unwrap();
    let first = Instant::now();
    let r = shadow.record(&root, "turn-0", "first").unwrap();
    println!(
        "checkpoint {} files, first (every blob written): {:.1} ms, {} read",
        files,
        ms(first.elapsed()),
        r.walked.read
    );
    // Settles the racy window so the next walks trust the stat data.
    std::thread::sleep(Duration::from_millis(50));
    shadow.record(&root, "turn-0", "settled").unwrap();

    let repo = git2::Repository::open(&root).unwrap();
    let mut ours = Vec::new();
    let mut floor = Vec::new();
    let mut cli = Vec::new();
    let mut cli_all = Vec::new();
    for i in 0..runs {
        let n = (i * 7919) % files;
        let rel = format!("d{:03}/f{n:05}.txt", n % DIRS);
        std::fs::write(root.join(&rel), format!("changed in run {i}\n")).unwrap();
        let mut run_ours = || {
            let t = Instant::now();
            let r = shadow
                .record(&root, &format!("turn-{}", i + 1), "run")
                .unwrap();
            ours.push(t.elapsed());
            assert!(r.walked.read >= 1, "the change was read");
        };
        let mut run_floor = || {
            let mut index = repo.index().unwrap();
            let t = Instant::now();
            index.add_path(Path::new(&rel)).unwrap();
            index.write_tree().unwrap();
            floor.push(t.elapsed());
            index.write().unwrap();
        };
        let mut run_cli = || {
            let t = Instant::now();
            git(&root, &["update-index", &rel]);
            git(&root, &["write-tree"]);
            cli.push(t.elapsed());
        };
        if i % 2 == 0 {
            run_ours();
            run_floor();
            run_cli();
        } else {
            run_cli();
            run_floor();
            run_ours();
        }
        // What git spends when nobody says what changed either: it stats
        // every file, as a checkpoint does.
        std::fs::write(root.join(&rel), format!("changed again in run {i}\n")).unwrap();
        let t = Instant::now();
        git(&root, &["add", "-A"]);
        git(&root, &["write-tree"]);
        cli_all.push(t.elapsed());
    }
    let o = stats("agentd checkpoint (walk + one blob + trees)", &mut ours);
    let f = stats("libgit2 add_path + write_tree (floor)", &mut floor);
    let c = stats("git update-index + git write-tree", &mut cli);
    let a = stats("git add -A + git write-tree (stats all)", &mut cli_all);
    println!(
        "ratio: checkpoint / libgit2 floor {:.2}x, / git update-index + write-tree {:.2}x, / git add -A + write-tree {:.2}x",
        o / f,
        o / c,
        o / a
    );

    let before = walk_size(&shadow_dir);
    for t in 0..turns {
        let n = (t * 104_729) % files;
        let rel = format!("d{:03}/f{n:05}.txt", n % DIRS);
        std::fs::write(root.join(&rel), format!("turn {t} changed me\n")).unwrap();
        shadow
            .record(&root, &format!("growth-{t:04}"), "growth")
            .unwrap();
    }
    let after = walk_size(&shadow_dir);
    println!(
        "store growth over {turns} turns of one changed file each: {} bytes ({:.0} bytes a turn; the workspace is {} bytes)",
        after - before,
        (after - before) as f64 / turns as f64,
        walk_size(&root) - walk_size(&root.join(".git"))
    );
}
