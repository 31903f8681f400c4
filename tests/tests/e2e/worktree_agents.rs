//! Worktrees for agents that agents start (DESIGN §9): the `Agent` tool's
//! `isolation` and `working_dir`, an agent type's `isolation`, and forks —
//! the real daemon against the mock model, asserting on the requests it
//! received: the worktree notice in the first message, the tree as the
//! working directory, a path into the parent's checkout refused with its
//! translation, and the kept tree in the task notification.

#![allow(clippy::unwrap_used)] // Tests: a panic is the failure report.

use std::path::{Path, PathBuf};
use std::time::Duration;

use agentd_e2e::forking::{TAG, stripped};
use agentd_e2e::gitrepo::{agentd_branches, git, init_repo, snapshot};
use agentd_e2e::mock::{
    MODEL, MockMessage, MockServer, RecordedRequest, Reply, last_text, n_messages, prompt_of,
};
use agentd_e2e::parent::{self, NOTE};
use agentd_e2e::{Env, FAST_RETRY, all_text, tool_results, wait_until};
use serde_json::{Value, json};

const NOTICE: &str = "<worktree-notice>";

fn world(mock: &MockServer) -> (Env, PathBuf) {
    let env = Env::with_mock(mock);
    env.write_config(FAST_RETRY);
    let repo = env.project().canonicalize().unwrap();
    init_repo(&repo);
    (env, repo)
}

fn requests_of(mock: &MockServer, marker: &str) -> Vec<RecordedRequest> {
    mock.requests()
        .into_iter()
        .filter(|r| prompt_of(r).contains(marker))
        .collect()
}

fn system_text(r: &RecordedRequest) -> String {
    r.json["system"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["text"].as_str().unwrap_or_default())
        .collect()
}

/// The tool results a request sends back, as text.
fn results_in(r: &RecordedRequest) -> Vec<String> {
    let last = r.messages().last().unwrap();
    tool_results(std::slice::from_ref(last))
        .into_iter()
        .map(|(_, text)| text)
        .collect()
}

/// A parent whose first answer is one `Agent` call with `input`; then "ok".
fn parent_calls_agent(mock: &MockServer, input: Value) {
    parent::answers(
        mock,
        MockMessage::tool("call-1", "Agent", input),
        Reply::text("ok"),
    );
}

#[test]
fn a_child_in_a_worktree_is_told_refused_the_parents_checkout_and_reported_with_its_tree() {
    let mock = MockServer::start();
    let (env, repo) = world(&mock);
    let before = snapshot(&repo);
    let readme = repo.join("README").display().to_string();
    parent_calls_agent(
        &mock,
        json!({"description": "child", "prompt": "CHILD edit the readme", "isolation": "worktree", "run_in_background": true}),
    );
    mock.when(
        |r| prompt_of(r).contains("CHILD") && n_messages(r) == 1,
        Reply::tool(
            "w-1",
            "Write",
            json!({"file_path": readme, "content": "overwritten\n"}),
        ),
    );
    mock.when(
        |r| prompt_of(r).contains("CHILD") && n_messages(r) == 3,
        Reply::tool(
            "w-2",
            "Write",
            json!({"file_path": "child.txt", "content": "from the child\n"}),
        ),
    );
    mock.when(
        |r| prompt_of(r).contains("CHILD"),
        Reply::text("CHILD finished"),
    );
    let _daemon = env.start_daemon();
    let parent = env.run_background(MODEL, "boss", "PARENT delegate");
    wait_until(
        "the parent hears of its child",
        Duration::from_secs(30),
        || all_text(&env.transcript(&parent)).contains(NOTE),
    );

    let child_reqs = requests_of(&mock, "CHILD");
    let parent_id = env.show(&parent)["id"].clone();
    let child = env
        .agents()
        .into_iter()
        .find(|a| a["parent_id"] == parent_id)
        .unwrap();
    let short = child["short_id"].as_str().unwrap();
    let tree = repo.join(".agentd/worktrees").join(short);
    // Its first message carries the notice; its system prompt names the tree.
    let first = &child_reqs[0];
    let prompt = prompt_of(first);
    assert!(prompt.starts_with("CHILD edit the readme"), "{prompt}");
    assert!(
        prompt.contains(NOTICE) && prompt.contains(&tree.display().to_string()),
        "{prompt}"
    );
    assert!(prompt.contains(&format!("agentd/{short}")), "{prompt}");
    assert!(system_text(first).contains(&format!("Working directory: {}", tree.display())));
    // A write into the parent's checkout is refused, with where to write.
    let refused = results_in(&child_reqs[1]);
    assert_eq!(refused.len(), 1);
    assert!(
        refused[0].contains("outside the agent's working directory")
            && refused[0].contains(&format!(
                "the same path in your worktree is {}",
                tree.join("README").display()
            )),
        "{}",
        refused[0]
    );
    assert_eq!(
        snapshot(&repo),
        before,
        "the parent's checkout is untouched"
    );
    assert_eq!(
        std::fs::read_to_string(tree.join("child.txt")).unwrap(),
        "from the child\n"
    );
    // The notification names the kept tree.
    let note = all_text(&env.transcript(&parent));
    assert!(
        note.contains(&format!(
            "<worktree branch=\"agentd/{short}\" base=\"main\" changed=\"0\" untracked=\"1\" ahead=\"0\">{}</worktree>",
            tree.display()
        )),
        "{note}"
    );
}

#[test]
fn a_foreground_child_that_changed_nothing_leaves_no_tree_and_an_agent_type_can_ask_for_one() {
    let mock = MockServer::start();
    let (env, repo) = world(&mock);
    std::fs::create_dir_all(repo.join(".agentd/agents")).unwrap();
    std::fs::write(
        repo.join(".agentd/agents/isolated.md"),
        "---\nname: isolated\ndescription: works apart\nisolation: worktree\n---\nYou work apart from everyone.\n",
    )
    .unwrap();
    parent_calls_agent(
        &mock,
        json!({"description": "look", "prompt": "CHILD look around", "subagent_type": "isolated"}),
    );
    mock.when(
        |r| prompt_of(r).contains("CHILD"),
        Reply::text("CHILD saw it all"),
    );
    let _daemon = env.start_daemon();
    let parent = env.run_background(MODEL, "boss", "PARENT delegate");
    env.ctl(&["wait", &parent]).expect_code(0);
    let child_first = &requests_of(&mock, "CHILD")[0];
    assert!(
        prompt_of(child_first).contains(NOTICE),
        "the type's isolation gave it a tree"
    );
    assert!(system_text(child_first).contains(".agentd/worktrees/"));
    // It changed nothing: tree and branch are gone; its answer came back.
    assert!(agentd_branches(&repo).is_empty());
    let parent_reqs = requests_of(&mock, "PARENT");
    let answer = results_in(parent_reqs.last().unwrap()).join("\n");
    assert!(
        answer.contains("CHILD saw it all") && !answer.contains("worktree was kept"),
        "{answer}"
    );
    let trees = env.ctl(&["worktrees", "--json"]).expect_code(0).json();
    assert!(trees.as_array().unwrap().is_empty(), "{trees}");
}

#[test]
fn working_dir_pins_a_persons_worktree_which_agentd_never_removes() {
    let mock = MockServer::start();
    let (env, repo) = world(&mock);
    let mine = repo.parent().unwrap().join("mine");
    git(
        &repo,
        &[
            "worktree",
            "add",
            "-q",
            "-b",
            "mine",
            mine.to_str().unwrap(),
        ],
    );
    let mine = mine.canonicalize().unwrap();
    parent_calls_agent(
        &mock,
        json!({"description": "pinned", "prompt": "CHILD pinned", "working_dir": mine.join("src").display().to_string()}),
    );
    mock.when(
        |r| prompt_of(r).contains("CHILD"),
        Reply::text("CHILD done"),
    );
    // A second parent pins a directory of another repository: refused.
    mock.when(
        |r| prompt_of(r).contains("STRAY") && n_messages(r) == 1,
        Reply::tool(
            "c",
            "Agent",
            json!({"description": "x", "prompt": "CHILD x", "working_dir": "/tmp"}),
        ),
    );
    mock.when(|r| prompt_of(r).contains("STRAY"), Reply::text("ok"));
    let _daemon = env.start_daemon();
    // A sandboxed parent may not pin a child outside its own workspace.
    let confined = env.run_background(MODEL, "confined", "PARENT confined pin");
    env.ctl(&["wait", &confined]).expect_code(0);
    let reqs = requests_of(&mock, "PARENT confined");
    let refused = results_in(reqs.last().unwrap()).join("\n");
    assert!(
        refused.contains("outside this agent's sandbox"),
        "{refused}"
    );
    assert!(requests_of(&mock, "CHILD").is_empty());
    // An unconfined parent may.
    let parent = env.start_agent(&[
        "--sandbox",
        "off",
        "--model",
        MODEL,
        "--name",
        "boss",
        "PARENT pin",
    ]);
    env.ctl(&["wait", &parent]).expect_code(0);
    let first = &requests_of(&mock, "CHILD")[0];
    assert!(system_text(first).contains(&format!(
        "Working directory: {}",
        mine.join("src").display()
    )));
    assert!(
        !prompt_of(first).contains(NOTICE),
        "a pinned tree is the person's: no notice"
    );
    assert!(mine.join("README").exists(), "never removed");
    assert!(git(&repo, &["worktree", "list"]).contains("mine"));
    let trees = env.ctl(&["worktrees", "--json"]).expect_code(0).json();
    assert!(
        trees.as_array().unwrap().is_empty(),
        "not agentd's: {trees}"
    );

    let stray = env.run_background(MODEL, "stray", "STRAY pin elsewhere");
    env.ctl(&["wait", &stray]).expect_code(0);
    let reqs = requests_of(&mock, "STRAY");
    let refused = results_in(reqs.last().unwrap()).join("\n");
    assert!(refused.contains("working_dir '/tmp'"), "{refused}");
}

#[test]
fn a_fork_in_a_worktree_keeps_its_parents_bytes_and_gets_the_notice_after_its_directive() {
    let mock = MockServer::start();
    let (env, repo) = world(&mock);
    mock.when(
        |r| parent::is_parent(r) && n_messages(r) == 1,
        Reply::text("I looked at README and src/lib.rs."),
    );
    mock.when(|r| last_text(r).contains(TAG), Reply::text("FORK done"));
    let _daemon = env.start_daemon();
    let parent = env.run_background(MODEL, "boss", "PARENT read the code");
    env.ctl(&["wait", &parent]).expect_code(0);
    let out = env.ctl(&[
        "fork",
        "boss",
        "--worktree",
        "--background",
        "FORK-W fix it in a tree",
    ]);
    out.expect_code(0);
    let fork_id = out.stdout.trim().to_string();
    env.ctl(&["wait", &fork_id]).expect_code(0);

    let reqs = mock.requests();
    let parent_req = reqs
        .iter()
        .find(|r| parent::is_parent(r) && !last_text(r).contains(TAG))
        .unwrap();
    let fork_req = reqs.iter().find(|r| last_text(r).contains(TAG)).unwrap();
    // The parent's bytes, then the parent's answer, then the fork's message.
    let parent_body = stripped(parent_req);
    let prefix = &parent_body[..parent_body.len() - 2];
    assert!(
        stripped(fork_req).starts_with(prefix),
        "the fork's request begins with its parent's"
    );
    let fork = env.show(&fork_id);
    let short = fork["short_id"].as_str().unwrap();
    let tree = repo.join(".agentd/worktrees").join(short);
    let own = fork_req.json["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap();
    let blocks = own["content"].as_array().unwrap();
    let directive = blocks[blocks.len() - 2]["text"].as_str().unwrap();
    let notice = blocks[blocks.len() - 1]["text"].as_str().unwrap();
    assert!(
        directive.starts_with(TAG) && directive.contains("FORK-W"),
        "{directive}"
    );
    assert!(notice.starts_with(NOTICE), "{notice}");
    assert!(
        notice.contains(&tree.display().to_string())
            && notice.contains(&repo.display().to_string()),
        "{notice}"
    );
    // Its system prompt is its parent's (it still names the parent's
    // directory: that is what the notice is for).
    assert_eq!(fork_req.json["system"], parent_req.json["system"]);
    assert_eq!(fork["cwd"], tree.display().to_string());
    // It changed nothing: its tree went at its end.
    assert_eq!(fork["worktree"]["state"], "removed");
    assert!(!Path::new(&tree).exists());
}

#[test]
fn a_tree_stays_while_a_child_started_in_it_runs_and_is_settled_when_it_ends() {
    let mock = MockServer::start();
    let (env, repo) = world(&mock);
    parent_calls_agent(
        &mock,
        json!({"description": "slow", "prompt": "CHILD take your time", "run_in_background": true}),
    );
    mock.when(
        |r| prompt_of(r).contains("CHILD"),
        Reply::Message(MockMessage::text("CHILD done").delay_start(Duration::from_millis(1_500))),
    );
    let _daemon = env.start_daemon();
    let parent = env.start_agent(&[
        "--worktree",
        "--model",
        MODEL,
        "--name",
        "boss",
        "PARENT delegate",
    ]);
    env.wait_for_agent(&parent, "the parent ended", |a| a["status"] == "completed");
    let p = env.show(&parent);
    let tree = PathBuf::from(p["worktree"]["path"].as_str().unwrap());
    let child = env
        .agents()
        .into_iter()
        .find(|a| a["parent_id"] == p["id"])
        .unwrap();
    assert_eq!(
        child["cwd"],
        tree.display().to_string(),
        "the child works in its parent's tree"
    );
    assert!(tree.exists(), "not removed under a running child");
    assert_eq!(p["worktree"]["state"], "kept");
    let out = env.ctl(&["rm", &parent]);
    out.expect_code(1);
    assert!(out.stderr.contains("works in agent"), "{}", out.stderr);
    env.ctl(&["wait", child["id"].as_str().unwrap()])
        .expect_code(0);
    // The child's notification wakes the parent, which runs again in its
    // tree; when it has ended again with nobody else in the tree, the tree
    // holds nothing and is removed with its branch.
    wait_until(
        "the parent read its child's report",
        Duration::from_secs(30),
        || {
            all_text(&env.transcript(&parent)).contains(NOTE)
                && env.show(&parent)["status"] == "completed"
        },
    );
    assert!(!tree.exists(), "{}", env.daemon_log_text());
    assert!(agentd_branches(&repo).is_empty());
    assert_eq!(env.show(&parent)["worktree"]["state"], "removed");
}

#[test]
fn a_worktree_agents_isolated_child_gets_a_tree_beside_it_not_inside() {
    let mock = MockServer::start();
    let (env, repo) = world(&mock);
    parent_calls_agent(
        &mock,
        json!({"description": "nested", "prompt": "CHILD in a tree of your own", "isolation": "worktree"}),
    );
    mock.when(
        |r| prompt_of(r).contains("CHILD") && n_messages(r) == 1,
        Reply::tool(
            "w",
            "Write",
            json!({"file_path": "inner.txt", "content": "inner work\n"}),
        ),
    );
    mock.when(
        |r| prompt_of(r).contains("CHILD"),
        Reply::text("CHILD done"),
    );
    let _daemon = env.start_daemon();
    let parent = env.start_agent(&[
        "--worktree",
        "--model",
        MODEL,
        "--name",
        "boss",
        "PARENT delegate",
    ]);
    env.ctl(&["wait", &parent]).expect_code(0);
    let p = env.show(&parent);
    let child = env
        .agents()
        .into_iter()
        .find(|a| a["parent_id"] == p["id"])
        .unwrap();
    let outer = p["worktree"]["path"].as_str().unwrap().to_string();
    let inner = child["worktree"]["path"].as_str().unwrap().to_string();
    assert_eq!(
        Path::new(&inner).parent().unwrap(),
        repo.join(".agentd/worktrees")
    );
    assert_eq!(
        child["worktree"]["checkout"], outer,
        "it merges back into its parent's tree"
    );
    assert_eq!(
        child["worktree"]["base"],
        format!("agentd/{}", p["short_id"].as_str().unwrap())
    );
    // The parent changed nothing: its tree went; the child's work did not.
    assert_eq!(p["worktree"]["state"], "removed");
    assert!(!Path::new(&outer).exists());
    assert_eq!(
        std::fs::read_to_string(Path::new(&inner).join("inner.txt")).unwrap(),
        "inner work\n"
    );
}

#[test]
fn a_tree_kept_for_a_persons_fork_is_settled_when_the_fork_ends() {
    let mock = MockServer::start();
    let (env, repo) = world(&mock);
    mock.when(
        |r| last_text(r).contains(TAG),
        Reply::Message(MockMessage::text("FORK done").delay_start(Duration::from_millis(2_000))),
    );
    mock.when(
        parent::is_parent,
        MockMessage::text("PARENT done").delay_start(Duration::from_millis(700)),
    );
    let _daemon = env.start_daemon();
    let parent = env.start_agent(&[
        "--worktree",
        "--model",
        MODEL,
        "--name",
        "boss",
        "PARENT look",
    ]);
    // Forked while the parent still runs: the fork works in the parent's
    // tree (it has no tree of its own) and never reports to the parent.
    let out = env.ctl(&["fork", "boss", "--background", "FORK-P look too"]);
    out.expect_code(0);
    let fork = out.stdout.trim().to_string();
    env.ctl(&["wait", &parent]).expect_code(0);
    let p = env.show(&parent);
    let tree = PathBuf::from(p["worktree"]["path"].as_str().unwrap());
    assert_eq!(
        p["worktree"]["state"], "kept",
        "kept while the fork works in it"
    );
    assert!(tree.exists());
    env.ctl(&["wait", &fork]).expect_code(0);
    assert!(!tree.exists(), "settled when the last agent in it ended");
    assert!(agentd_branches(&repo).is_empty());
    assert_eq!(env.show(&parent)["worktree"]["state"], "removed");
}
