//! What a malicious repository or agent plants for the daemon to trip on
//! (DESIGN §9, §14, §16), as the hostile review attacked: links that would
//! send the daemon's own writes into the person's files, agent-type files
//! that are endless, huge or FIFOs, a FIFO handed to Read, a replaced
//! `.git` link in a worktree. The real daemon against the mock model.

#![allow(clippy::unwrap_used)] // Tests: a panic is the failure report.

use std::path::PathBuf;

use agentd_e2e::gitrepo::{git, init_repo};
use agentd_e2e::mock::{MODEL, MockMessage, MockServer, Reply, n_messages, prompt_of};
use agentd_e2e::parent::is_parent;
use agentd_e2e::{Env, dir_names, tool_results};
use serde_json::{Value, json};

fn world(mock: &MockServer) -> (Env, PathBuf, PathBuf) {
    let env = Env::with_mock(mock);
    env.write_config("[retry]\nmax_attempts = 2\ninitial_backoff_ms = 20\nmax_backoff_ms = 100\n");
    let repo = env.project().canonicalize().unwrap();
    init_repo(&repo);
    // Where the person's files are: what nothing may write into.
    let outside = env.root.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    (env, repo, outside)
}

/// A parent agent (prompt "PARENT …") that answers with each of `calls`
/// in turn (one tool call per turn), then "ok".
fn parent_does(mock: &MockServer, calls: Vec<(&'static str, Value)>) {
    for (i, (name, input)) in calls.into_iter().enumerate() {
        mock.when(
            move |r| is_parent(r) && n_messages(r) == 2 * i + 1,
            Reply::Message(MockMessage::tool(format!("call-{i}"), name, input)),
        );
    }
    mock.when(is_parent, Reply::text("ok"));
    mock.when(
        |r| prompt_of(r).contains("CHILD"),
        Reply::text("child done"),
    );
}

/// The tool results the parent's last request carried back, in order.
fn parent_results(mock: &MockServer) -> Vec<(bool, String)> {
    let last = mock
        .requests()
        .into_iter()
        .filter(is_parent)
        .max_by_key(n_messages)
        .unwrap();
    tool_results(last.messages())
}

fn run_parent(env: &Env) {
    env.ctl(&["run", "--model", MODEL, "PARENT go"])
        .expect_code(0);
}

#[test]
fn a_confined_agent_cannot_send_a_childs_worktree_through_a_planted_link() {
    let mock = MockServer::start();
    let (env, _repo, outside) = world(&mock);
    let _daemon = env.start_daemon();
    parent_does(
        &mock,
        vec![
            (
                "Bash",
                json!({"command": format!(
                    "rm -rf .agentd/worktrees && mkdir -p .agentd && ln -s {} .agentd/worktrees",
                    outside.display()
                )}),
            ),
            (
                "Agent",
                json!({"description": "child", "prompt": "CHILD hi", "isolation": "worktree"}),
            ),
        ],
    );
    run_parent(&env);
    let results = parent_results(&mock);
    assert!(!results[0].0, "the link was planted: {results:?}");
    assert!(
        results[1].0 && results[1].1.contains("symbolic link"),
        "the child is refused: {results:?}"
    );
    assert!(
        dir_names(&outside).is_empty(),
        "nothing was checked out through the link: {:?}",
        dir_names(&outside)
    );
}

#[test]
fn a_confined_agent_cannot_make_the_daemon_append_to_a_file_through_info_exclude() {
    let mock = MockServer::start();
    let (env, _repo, outside) = world(&mock);
    let bashrc = outside.join("bashrc");
    std::fs::write(&bashrc, "alias ls='ls -F'\n").unwrap();
    // Under the sandbox the agent's `.git` is its own quarantine (DESIGN
    // §23): the link it plants lands there. One planted before (by an
    // unconfined run, or a person) is where the daemon must not follow.
    let real = env.project().join(".git/info/exclude");
    let _ = std::fs::remove_file(&real);
    std::os::unix::fs::symlink(&bashrc, &real).unwrap();
    let _daemon = env.start_daemon();
    parent_does(
        &mock,
        vec![
            (
                "Bash",
                json!({"command": format!(
                    "rm -f .git/info/exclude && ln -s {} .git/info/exclude && readlink .git/info/exclude",
                    bashrc.display()
                )}),
            ),
            (
                "Agent",
                json!({"description": "child", "prompt": "CHILD hi", "isolation": "worktree"}),
            ),
        ],
    );
    run_parent(&env);
    let results = parent_results(&mock);
    assert!(
        results[1].0 && results[1].1.contains("symbolic link"),
        "the child is refused: {results:?}"
    );
    assert_eq!(
        std::fs::read_to_string(&bashrc).unwrap(),
        "alias ls='ls -F'\n",
        "nothing was appended through the link"
    );
}

#[test]
fn a_cloned_repository_with_a_committed_link_gets_no_worktree_through_it() {
    let mock = MockServer::start();
    let (env, repo, outside) = world(&mock);
    // git stores links: a clone brings this one along.
    std::fs::create_dir_all(repo.join(".agentd")).unwrap();
    std::os::unix::fs::symlink("../../outside", repo.join(".agentd/worktrees")).unwrap();
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "a link"]);
    let _daemon = env.start_daemon();
    mock.when(|_| true, Reply::text("done"));
    let out = env.ctl(&["run", "--worktree", "--model", MODEL, "go"]);
    out.expect_code(1);
    assert!(out.stderr.contains("symbolic link"), "{}", out.stderr);
    assert!(dir_names(&outside).is_empty(), "{:?}", dir_names(&outside));
}

#[test]
fn agent_type_files_that_are_endless_huge_or_fifos_are_skipped_unread() {
    let mock = MockServer::start();
    let (env, repo, _outside) = world(&mock);
    let types = repo.join(".claude/agents");
    std::fs::create_dir_all(&types).unwrap();
    // git stores links: a clone can hold any of these.
    std::os::unix::fs::symlink("/dev/zero", types.join("aaa.md")).unwrap();
    nix::unistd::mkfifo(
        &types.join("fifo.md"),
        nix::sys::stat::Mode::from_bits_truncate(0o644),
    )
    .unwrap();
    // 200 MB (sparse: it takes no disk).
    std::fs::File::create(types.join("huge.md"))
        .unwrap()
        .set_len(200 << 20)
        .unwrap();
    std::fs::write(
        types.join("helper.md"),
        "---\nname: helper\ndescription: helps\n---\nYou help.\n",
    )
    .unwrap();
    let _daemon = env.start_daemon();
    parent_does(
        &mock,
        vec![
            (
                "Agent",
                json!({"description": "child", "prompt": "CHILD hi", "subagent_type": "helper"}),
            ),
            (
                "Agent",
                json!({"description": "child", "prompt": "CHILD hi", "subagent_type": "aaa"}),
            ),
            (
                "Agent",
                json!({"description": "child", "prompt": "CHILD hi", "subagent_type": "nobody"}),
            ),
        ],
    );
    let id = env.start_agent(&["--model", MODEL, "PARENT go"]);
    env.ctl(&["wait", &id, "--timeout", "20"]).expect_code(0);
    let results = parent_results(&mock);
    assert!(
        !results[0].0 && results[0].1.contains("child done"),
        "the good type still works: {results:?}"
    );
    assert!(
        results[1].0 && results[1].1.contains("links outside"),
        "{results:?}"
    );
    assert!(
        results[2].0
            && results[2].1.contains("not a regular file")
            && results[2].1.contains("64 KiB"),
        "what was skipped is said: {results:?}"
    );
}

#[test]
fn read_and_grep_refuse_a_fifo_and_the_daemon_still_stops() {
    let mock = MockServer::start();
    let (env, _repo, _outside) = world(&mock);
    let daemon = env.start_daemon();
    parent_does(
        &mock,
        vec![
            ("Bash", json!({"command": "mkfifo pipe"})),
            ("Read", json!({"file_path": "pipe"})),
            ("Grep", json!({"pattern": "x", "path": "pipe"})),
        ],
    );
    let id = env.start_agent(&["--model", MODEL, "PARENT go"]);
    env.ctl(&["wait", &id, "--timeout", "20"]).expect_code(0);
    let results = parent_results(&mock);
    assert!(
        results[1].0 && results[1].1.contains("not a regular file"),
        "{results:?}"
    );
    assert!(!results[2].1.contains("pipe:"), "{results:?}");
    // Nothing is left blocked: the daemon stops, and a new one takes the
    // store.
    assert!(daemon.terminate().success());
    let _again = env.start_daemon();
    env.ctl(&["show", &id]).expect_code(0);
}

#[test]
fn an_unconfined_worktree_agent_that_plants_a_repository_for_the_persons_git_is_undone_at_its_end()
{
    let mock = MockServer::start();
    let (env, repo, outside) = world(&mock);
    let pwned = outside.join("pwned");
    // The agent changes a file, then swaps its tree's .git link for a
    // repository of its own whose config runs a command for whoever runs
    // git there next.
    let plant = format!(
        "echo changed > README && rm .git && git init -q --bare .git && git --git-dir=.git config core.bare false && git --git-dir=.git config core.fsmonitor 'touch {}; false'",
        pwned.display()
    );
    mock.when(
        |r| n_messages(r) == 1,
        Reply::Message(MockMessage::tool("c1", "Bash", json!({"command": plant}))),
    );
    mock.when(|_| true, Reply::text("done"));
    let _daemon = env.start_daemon();
    // Unconfined (under the sandbox the link is a mount point it cannot
    // remove: the next test).
    let id = env
        .ctl(&[
            "run",
            "--worktree",
            "--sandbox",
            "off",
            "--background",
            "--model",
            MODEL,
            "go",
        ])
        .expect_code(0)
        .stdout
        .trim()
        .to_string();
    env.ctl(&["wait", &id, "--timeout", "20"]).expect_code(0);
    let shown = env.show(&id);
    let tree = PathBuf::from(shown["worktree"]["path"].as_str().unwrap());
    assert!(
        shown["worktree"]["notice"]
            .as_str()
            .is_some_and(|n| n.contains("restored")),
        "the person is told: {shown}"
    );
    // The link is agentd's again; what the agent put there is kept aside.
    let link = std::fs::read_to_string(tree.join(".git")).unwrap();
    assert!(link.starts_with("gitdir: "), "{link}");
    assert!(tree.join(".git.replaced-by-agent/config").is_file());
    // The diff is the agent's real change, read through git's record.
    let diff = env.ctl(&["diff", &id]).expect_code(0).stdout.clone();
    assert!(diff.contains("+changed"), "{diff}");
    // The person's git in the tree runs nothing the agent chose.
    let status = git(&tree, &["status", "--porcelain"]);
    assert!(status.contains("README"), "{status}");
    assert!(!pwned.exists(), "the planted fsmonitor ran");
    assert_eq!(
        std::fs::read_to_string(repo.join("README")).unwrap(),
        "hello\n",
        "the checkout is untouched"
    );
}

#[test]
fn a_confined_worktree_agent_cannot_replace_its_trees_git_link() {
    let mock = MockServer::start();
    let (env, _repo, outside) = world(&mock);
    let pwned = outside.join("pwned");
    let plant = format!(
        "echo changed > README; rm -rf .git || mv .git elsewhere || exit 3; git init -q --bare .git && git --git-dir=.git config core.fsmonitor 'touch {}; false'",
        pwned.display()
    );
    mock.when(
        |r| n_messages(r) == 1,
        Reply::Message(MockMessage::tool("c1", "Bash", json!({"command": plant}))),
    );
    mock.when(|_| true, Reply::text("done"));
    let _daemon = env.start_daemon();
    let id = env
        .ctl(&["run", "--worktree", "--background", "--model", MODEL, "go"])
        .expect_code(0)
        .stdout
        .trim()
        .to_string();
    env.ctl(&["wait", &id, "--timeout", "20"]).expect_code(0);
    let reqs = mock.requests();
    let last = reqs.last().unwrap().messages().last().unwrap().clone();
    let results = agentd_e2e::tool_results(std::slice::from_ref(&last));
    assert!(
        results[0].0 && results[0].1.contains("busy"),
        "the link is a mount point: {results:?}"
    );
    let shown = env.show(&id);
    let tree = PathBuf::from(shown["worktree"]["path"].as_str().unwrap());
    let link = std::fs::read_to_string(tree.join(".git")).unwrap();
    assert!(
        link.starts_with("gitdir: ") && link.contains("/worktrees/"),
        "{link}"
    );
    assert!(!tree.join(".git.replaced-by-agent").exists());
    assert!(shown["worktree"]["notice"].is_null(), "{shown}");
    let status = git(&tree, &["status", "--porcelain"]);
    assert!(status.contains("README"), "{status}");
    assert!(!pwned.exists());
}
