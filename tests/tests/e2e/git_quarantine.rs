//! Commits from confined agents (DESIGN §23), end to end: the real daemon
//! under its default sandbox (Landlock and the agent's mount namespace),
//! real git in the agent's commands, the person's repository read with the
//! git CLI.

#![allow(clippy::unwrap_used)] // Tests: a panic is the failure report.

use std::path::{Path, PathBuf};
use std::time::Duration;

use agentd_e2e::forking::TAG;
use agentd_e2e::gitrepo::{git, init_repo};
use agentd_e2e::mock::{MODEL, MockServer, Reply, n_messages};
use agentd_e2e::parent;
use agentd_e2e::script::{bash_each, script, text, tool, turn};
use agentd_e2e::{Env, FAST_RETRY, tool_results, wait_until};
use serde_json::json;

fn repo_env(env: &Env) -> PathBuf {
    let repo = env.project().canonicalize().unwrap();
    init_repo(&repo);
    repo
}

/// The first 40-hex word of `text`.
fn hash_in(text: &str) -> Option<String> {
    text.split(|c: char| !c.is_ascii_hexdigit())
        .find(|w| w.len() == 40)
        .map(str::to_string)
}

fn results(env: &Env, id: &str) -> Vec<(bool, String)> {
    tool_results(&env.transcript(id))
}

/// What a person's git must find unchanged: hooks, config, refs, packs.
fn git_dir_state(repo: &Path) -> (Vec<String>, String, String, Vec<(String, u64)>) {
    let names = |d: &Path| -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(d)
            .map(|r| {
                r.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        v.sort();
        v
    };
    let packs = names(&repo.join(".git/objects/pack"))
        .into_iter()
        .map(|n| {
            let len = std::fs::metadata(repo.join(".git/objects/pack").join(&n))
                .unwrap()
                .len();
            (n, len)
        })
        .collect();
    (
        names(&repo.join(".git/hooks")),
        std::fs::read_to_string(repo.join(".git/config")).unwrap(),
        git(
            repo,
            &[
                "for-each-ref",
                "--format=%(refname) %(objectname)",
                "refs/heads",
                "refs/tags",
            ],
        ),
        packs,
    )
}

#[test]
fn a_worktree_fork_commits_under_the_default_sandbox_and_reports_the_real_hash() {
    let mock = MockServer::start();
    let env = Env::with_mock(&mock);
    env.write_config(FAST_RETRY);
    let repo = repo_env(&env);
    mock.when(
        |r| parent::is_parent(r) && n_messages(r) == 1,
        Reply::text("I read the code."),
    );
    let commit = "echo forked > fork.txt && git add fork.txt && git commit -q -m 'fork: add fork.txt' && git rev-parse HEAD";
    mock.respond_with(move |r| {
        if !r.json.to_string().contains(TAG) {
            return None;
        }
        let last = r.messages().last()?;
        match tool_results(std::slice::from_ref(last)).first() {
            None => Some(Reply::tool("c1", "Bash", json!({"command": commit}))),
            Some((_, out)) => {
                let hash = hash_in(out).unwrap_or_else(|| "NO-HASH".into());
                Some(Reply::text(format!(
                    "Added fork.txt.\n\nFiles changed:\n- fork.txt (commit {hash})"
                )))
            }
        }
    });
    let _daemon = env.start_daemon();
    let boss = env.run_background(MODEL, "boss", "PARENT read the code");
    env.ctl(&["wait", &boss]).expect_code(0);
    let out = env.ctl(&[
        "fork",
        "boss",
        "--worktree",
        "--background",
        "commit your change",
    ]);
    out.expect_code(0);
    let fork = out.stdout.trim().to_string();
    env.ctl(&["wait", &fork]).expect_code(0);

    let shown = env.show(&fork);
    assert_eq!(
        shown["sandbox"], "workspace-write",
        "the default sandbox: {shown}"
    );
    let got = results(&env, &fork);
    let (is_error, out) = &got[0];
    assert!(!is_error, "git commit works under the sandbox: {out}");
    let hash = hash_in(out).unwrap();
    // The hash the fork reports is a commit on its branch, with its change,
    // in the person's repository.
    let report = env.ctl(&["log", &fork]).stdout;
    assert!(
        report.contains(&format!("Files changed:\n- fork.txt (commit {hash})")),
        "{report}"
    );
    let branch = format!("agentd/{}", shown["short_id"].as_str().unwrap());
    assert_eq!(git(&repo, &["rev-parse", &branch]).trim(), hash);
    assert_eq!(git(&repo, &["cat-file", "-t", &hash]).trim(), "commit");
    assert_eq!(
        git(&repo, &["show", &format!("{hash}:fork.txt")]),
        "forked\n"
    );
    assert_eq!(
        git(&repo, &["log", "--format=%s", &format!("main..{branch}")]),
        "fork: add fork.txt\n"
    );
    git(&repo, &["fsck", "--no-dangling"]);
    // Its commit is work: the tree and branch are kept, and diff shows it.
    assert_eq!(shown["worktree"]["state"], "kept", "{shown}");
    let diff = env.ctl(&["diff", &fork]);
    diff.expect_code(0);
    assert!(diff.stdout.contains("+forked"), "{}", diff.stdout);
}

#[test]
fn a_worktree_agent_cannot_write_hooks_config_other_refs_or_packs() {
    let env = Env::new();
    let repo = repo_env(&env);
    git(&repo, &["gc", "-q"]);
    let before = git_dir_state(&repo);
    let main_before = git(&repo, &["rev-parse", "main"]);
    let r = repo.display().to_string();
    let commands = vec![
        format!("echo 'echo owned' > {r}/.git/hooks/pre-commit"),
        format!("echo '[core] hooksPath=/tmp' >> {r}/.git/config"),
        format!("echo {} > {r}/.git/refs/heads/main", "0".repeat(40)),
        format!("for p in {r}/.git/objects/pack/*.pack; do echo x >> $p || exit 1; done"),
        format!("echo x > {r}/.git/packed-refs"),
        // Its own git: the other refs it sees are its own copies.
        "git update-ref refs/heads/main HEAD && git commit -q --allow-empty -m 'agent commit' && git rev-parse HEAD".to_string(),
    ];
    let _daemon = env.start_daemon();
    let model = env.script("hostile.json", &bash_each(&commands));
    let id = env.start_model(&model, &["--worktree"]);
    env.ctl(&["wait", &id]).expect_code(0);
    let got = results(&env, &id);
    assert_eq!(got.len(), commands.len(), "{got:?}");
    for (i, (is_error, out)) in got.iter().enumerate().take(commands.len() - 1) {
        assert!(*is_error, "attempt {i} ({}) must fail: {out}", commands[i]);
    }
    let (is_error, out) = &got[commands.len() - 1];
    assert!(!is_error, "{out}");
    let hash = hash_in(out).unwrap();
    assert_eq!(git_dir_state(&repo).0, before.0, "hooks");
    assert_eq!(git_dir_state(&repo).1, before.1, "config");
    assert_eq!(git_dir_state(&repo).3, before.3, "packs");
    assert_eq!(
        git(&repo, &["rev-parse", "main"]),
        main_before,
        "main did not move"
    );
    let short = env.show(&id)["short_id"].as_str().unwrap().to_string();
    assert_eq!(
        git(&repo, &["rev-parse", &format!("agentd/{short}")]).trim(),
        hash
    );
    git(&repo, &["fsck", "--no-dangling"]);
}

#[test]
fn an_agent_in_the_checkout_commits_onto_its_branch_and_cannot_write_git_itself() {
    let env = Env::new();
    let repo = repo_env(&env);
    git(&repo, &["gc", "-q"]);
    let before = git_dir_state(&repo);
    let real = "$(dirname $(cat .git/objects/info/alternates))";
    let commands = vec![
        "echo 'echo owned' > .git/hooks/pre-commit".to_string(),
        "echo '[core] hooksPath=/tmp' >> .git/config".to_string(),
        format!("echo x >> {real}/config"),
        format!("echo 'echo owned' > {real}/hooks/pre-commit"),
        format!("for p in {real}/objects/pack/*.pack; do echo x >> $p || exit 1; done"),
        format!("echo {} > {real}/refs/heads/main", "0".repeat(40)),
        "echo agent > agent.txt && git add agent.txt && git commit -q -m 'agent in the checkout' && git rev-parse HEAD".to_string(),
    ];
    let _daemon = env.start_daemon();
    let model = env.script("checkout.json", &bash_each(&commands));
    let id = env.start_model(&model, &[]);
    env.ctl(&["wait", &id]).expect_code(0);
    let got = results(&env, &id);
    assert_eq!(got.len(), commands.len(), "{got:?}");
    for (i, (is_error, out)) in got.iter().enumerate().take(commands.len() - 1) {
        assert!(*is_error, "attempt {i} ({}) must fail: {out}", commands[i]);
        assert!(out.contains("Read-only file system"), "attempt {i}: {out}");
    }
    let (is_error, out) = &got[commands.len() - 1];
    assert!(!is_error, "{out}");
    let hash = hash_in(out).unwrap();
    let after = git_dir_state(&repo);
    assert_eq!(
        (&after.0, &after.1, &after.3),
        (&before.0, &before.1, &before.3)
    );
    // On the branch that is checked out, and the checkout is clean.
    assert_eq!(git(&repo, &["rev-parse", "main"]).trim(), hash);
    assert_eq!(
        git(&repo, &["log", "-1", "--format=%s"]),
        "agent in the checkout\n"
    );
    assert_eq!(git(&repo, &["status", "--porcelain"]), "");
    git(&repo, &["fsck", "--no-dangling"]);
}

#[test]
fn a_commit_made_before_a_sigkill_is_on_the_branch_after_the_restart() {
    let env = Env::new();
    let repo = repo_env(&env);
    let daemon = env.start_daemon();
    let model = env.script(
        "killed.json",
        &script(vec![
            turn(vec![tool(
                "Bash",
                json!({"command": "echo k > k.txt && git add k.txt && git commit -q -m 'before the kill' && git rev-parse HEAD"}),
            )]),
            turn(vec![tool("Bash", json!({"command": "sleep 600"}))]),
            turn(vec![text("done")]),
        ]),
    );
    let id = env.start_model(&model, &["--worktree"]);
    wait_until("the commit is made", Duration::from_secs(60), || {
        !results(&env, &id).is_empty()
    });
    let hash = hash_in(&results(&env, &id)[0].1).unwrap();
    let short = env.show(&id)["short_id"].as_str().unwrap().to_string();
    let branch = format!("agentd/{short}");
    // Mid-turn: nothing took the commit in yet.
    assert_ne!(git(&repo, &["rev-parse", &branch]).trim(), hash);
    daemon.kill9();
    let _daemon = env.start_daemon();
    wait_until(
        "the commit is on the branch",
        Duration::from_secs(60),
        || git(&repo, &["rev-parse", &branch]).trim() == hash,
    );
    assert_eq!(git(&repo, &["show", &format!("{branch}:k.txt")]), "k\n");
    git(&repo, &["fsck", "--no-dangling"]);
}
