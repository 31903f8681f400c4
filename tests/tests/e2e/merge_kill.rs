//! `agentctl merge` across a SIGKILL of the daemon (DESIGN §9): the hostile
//! review killed it mid-merge and found 1,400 to 2,800 of 3,000 files
//! rewritten under an unchanged HEAD, and a restart did not repair it. A
//! merge must be all or nothing: after the restart the checkout is either
//! wholly before the merge or wholly after it, and clean.

#![allow(clippy::unwrap_used)] // Tests: a panic is the failure report.

use std::process::Stdio;
use std::time::Instant;

use agentd_e2e::Env;
use agentd_e2e::gitrepo::{git, init_repo};
use agentd_e2e::script::{script, text, tool, turn};
use serde_json::json;

const FILES: usize = 3000;

fn all_files_hold(repo: &std::path::Path, want: &str) -> usize {
    (0..FILES)
        .filter(|i| std::fs::read_to_string(repo.join(format!("f/{i}.txt"))).unwrap() == want)
        .count()
}

#[test]
fn a_merge_killed_mid_way_is_whole_or_undone_after_the_restart() {
    let env = Env::new();
    let repo = env.project().canonicalize().unwrap();
    init_repo(&repo);
    std::fs::create_dir_all(repo.join("f")).unwrap();
    for i in 0..FILES {
        std::fs::write(repo.join(format!("f/{i}.txt")), "orig\n").unwrap();
    }
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-qm", "3000 files"]);
    let old = git(&repo, &["rev-parse", "HEAD"]).trim().to_string();
    // An agent that rewrites every file in its tree and commits.
    let model = env.script(
        "rewrite.json",
        &script(vec![
            turn(vec![tool(
                "Bash",
                json!({"command": "for f in f/*.txt; do echo changed > \"$f\"; done && git add -A && git commit -qm rewrite"}),
            )]),
            turn(vec![text("done")]),
        ]),
    );
    let mut daemon = env.start_daemon();
    let id = env
        .ctl(&[
            "run",
            "--worktree",
            "--sandbox",
            "off",
            "--background",
            "--model",
            &model,
            "rewrite",
        ])
        .expect_code(0)
        .stdout
        .trim()
        .to_string();
    env.ctl(&["wait", &id, "--timeout", "60"]).expect_code(0);

    // One merge to its end, for its duration.
    let started = Instant::now();
    env.ctl(&["merge", &id]).expect_code(0);
    let took = started.elapsed();
    let new = git(&repo, &["rev-parse", "HEAD"]).trim().to_string();
    assert_ne!(new, old);
    assert_eq!(all_files_hold(&repo, "changed\n"), FILES);
    git(&repo, &["reset", "-q", "--hard", &old]);

    let mut cut_short = 0;
    for attempt in 0..15 {
        if cut_short >= 3 {
            break;
        }
        let delay = took.mul_f64(0.1 + 0.8 * ((attempt * 7 % 10) as f64 / 10.0));
        let mut merging = env
            .ctl_command(&["--no-autostart", "merge", &id])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(delay);
        daemon.kill9();
        let _ = merging.wait();
        let log_before = env.daemon_log_text().len();
        daemon = env.start_daemon();
        let log = env.daemon_log_text();
        if log[log_before.min(log.len())..].contains("a merge a crash had cut short") {
            cut_short += 1;
        }
        // Whole or undone, and clean.
        let head = git(&repo, &["rev-parse", "HEAD"]).trim().to_string();
        let status = git(&repo, &["status", "--porcelain"]);
        assert!(
            status.is_empty(),
            "attempt {attempt} ({delay:?}): {status:.400}"
        );
        if head == new {
            assert_eq!(
                all_files_hold(&repo, "changed\n"),
                FILES,
                "attempt {attempt}"
            );
            git(&repo, &["reset", "-q", "--hard", &old]);
        } else {
            assert_eq!(head, old, "attempt {attempt}");
            assert_eq!(all_files_hold(&repo, "orig\n"), FILES, "attempt {attempt}");
        }
    }
    println!("{cut_short} kills landed inside a merge of {took:?}");
    assert!(
        cut_short >= 1,
        "no kill landed inside a merge (it took {took:?}); the test proved nothing"
    );
    drop(daemon);
}
