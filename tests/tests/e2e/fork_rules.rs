//! The rules a fork works by (DESIGN §6): bad `fork_turns`, `fork_tools`
//! and profiles are tool errors the model reads word for word (and through
//! `agentctl fork`, clear failures), and start nothing; a fork runs only
//! the tools it is allowed, fixed at launch; a fork cannot start agents.

#![allow(clippy::unwrap_used)] // Tests: a panic is the failure report.

use std::path::{Path, PathBuf};
use std::time::Duration;

use agentd_e2e::forking::{TAG, fork_call, fork_call_with, is_fork_of, is_request_of_fork};
use agentd_e2e::mock::{
    Block, MODEL, MockMessage, MockServer, Reply, last_text, n_messages, prompt_of, text_of,
};
use agentd_e2e::parent::{self, NOTE};
use agentd_e2e::{Env, all_text, wait_until};
use serde_json::{Value, json};

fn world(mock: &MockServer) -> Env {
    let env = Env::with_mock(mock);
    let git = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(env.project())
        .status()
        .unwrap();
    assert!(git.success());
    env
}

/// The profile directory of the test's repository, as the daemon names it.
fn profiles(env: &Env) -> PathBuf {
    let dir = env
        .project()
        .canonicalize()
        .unwrap()
        .join(".agentd/fork-profiles");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn profile(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(format!("{name}.md"));
    std::fs::write(&path, text).unwrap();
    path
}

fn run_bg(env: &Env, name: &str, prompt: &str) -> String {
    env.run_background(MODEL, name, prompt)
}

#[test]
fn bad_fork_arguments_are_tool_errors_the_model_reads_and_start_nothing() {
    let mock = MockServer::start();
    let env = world(&mock);
    let dir = profiles(&env);
    let shown = |name: &str| dir.join(format!("{name}.md")).display().to_string();
    profile(
        &dir,
        "big",
        &format!(
            "---\nname: big\ntools: [Read]\n---\n{}",
            " ".repeat(64 * 1024)
        ),
    );
    let outside = env.root.path().join("outside.md");
    std::fs::write(&outside, "---\nname: escape\ntools: [Bash]\n---\n").unwrap();
    std::os::unix::fs::symlink(&outside, dir.join("escape.md")).unwrap();
    profile(&dir, "notools", "---\nname: notools\n---\n");
    profile(
        &dir,
        "body",
        "---\nname: body\ntools: [Read]\n---\nYou are a reviewer.\n",
    );
    profile(&dir, "renamed", "---\nname: other\ntools: [Read]\n---\n");
    profile(
        &dir,
        "hinted",
        &format!(
            "---\nname: hinted\ntools: [Read]\npromptHint: {}\n---\n",
            "h".repeat(201)
        ),
    );
    let tools = "Bash, Read, Write, Edit, Glob, Grep, Agent, SendMessage, ListAgents, TaskStop, \
TodoWrite and MCP tools (mcp__<server>__<tool>)";
    let wildcards = "the only wildcards are 'mcp__*' and 'mcp__<server>__*'";
    let cases: Vec<(Value, String)> = vec![
        (json!({"fork_tools": ["*"]}), format!("fork_tools[0] '*' is not allowed: {wildcards}")),
        (
            json!({"fork_tools": ["Read", "mcp__git*"]}),
            format!("fork_tools[1] 'mcp__git*' is not allowed: {wildcards}"),
        ),
        (json!({"fork_tools": ["Re*d"]}), format!("fork_tools[0] 'Re*d' is not allowed: {wildcards}")),
        (json!({"fork_tools": ["Read", "  "]}), "fork_tools[1] is blank: name a tool".into()),
        (json!({"fork_tools": [""]}), "fork_tools[0] is blank: name a tool".into()),
        (
            json!({"fork_tools": ["Read "]}),
            "fork_tools[0] 'Read ' has spaces around it: write the tool name alone".into(),
        ),
        (json!({"fork_tools": ["Grep", "Grep"]}), "fork_tools[1] 'Grep' is listed twice".into()),
        (
            json!({"fork_tools": ["Nope"]}),
            format!("fork_tools[0] 'Nope' is not a tool: the tools are {tools}"),
        ),
        (json!({"fork_tools": "Read"}), "`fork_tools` must be a list of tool names (strings)".into()),
        (
            json!({"fork_turns": "0"}),
            "fork_turns must be \"all\" or a positive number of turns, not 0".into(),
        ),
        (
            json!({"fork_turns": 0}),
            "fork_turns must be \"all\" or a positive number of turns, not 0".into(),
        ),
        (
            json!({"fork_turns": "-1"}),
            "fork_turns must be \"all\" or a positive number of turns, not '-1'".into(),
        ),
        (
            json!({"fork_tools": ["Read"], "fork_profile": "big"}),
            "fork_tools and fork_profile cannot be combined: give one".into(),
        ),
        (
            json!({"fork_profile": "x"}),
            "fork profile name 'x' is invalid: use 2-50 letters, digits, '_' or '-', not starting or ending with '_' or '-'".into(),
        ),
        (
            json!({"fork_profile": "-bad"}),
            "fork profile name '-bad' is invalid: use 2-50 letters, digits, '_' or '-', not starting or ending with '_' or '-'".into(),
        ),
        (
            json!({"fork_profile": "../escape"}),
            "fork profile name '../escape' is invalid: use 2-50 letters, digits, '_' or '-', not starting or ending with '_' or '-'".into(),
        ),
        (
            json!({"fork_profile": "ghost"}),
            format!("fork profile 'ghost' not found: there is no {}", shown("ghost")),
        ),
        (
            json!({"fork_profile": "big"}),
            format!(
                "fork profile {} is {} bytes; the limit is 65536 bytes (64 KiB)",
                shown("big"),
                std::fs::metadata(dir.join("big.md")).unwrap().len()
            ),
        ),
        (
            json!({"fork_profile": "escape"}),
            format!(
                "fork profile {} links outside {}; refusing it",
                shown("escape"),
                dir.display()
            ),
        ),
        (
            json!({"fork_profile": "notools"}),
            format!("fork profile {}: invalid front matter: missing field `tools`", shown("notools")),
        ),
        (
            json!({"fork_profile": "body"}),
            format!(
                "fork profile {} has text after its front matter; a profile is front matter only (name, tools, promptHint)",
                shown("body")
            ),
        ),
        (
            json!({"fork_profile": "renamed"}),
            format!(
                "fork profile {} says name 'other'; it must match its file name 'renamed'",
                shown("renamed")
            ),
        ),
        (
            json!({"fork_profile": "hinted"}),
            format!(
                "fork profile {}: promptHint is 201 characters; the limit is 200",
                shown("hinted")
            ),
        ),
        (
            json!({"model": "anthropic:claude-other"}),
            "a fork runs on its parent's model (that is how it reads the parent's prompt cache); call Agent without `model`".into(),
        ),
        (
            json!({"isolation": "elsewhere"}),
            "`isolation` must be \"worktree\" (got \"elsewhere\"); leave it out to work in your own directory".into(),
        ),
        (
            json!({"subagent_type": "general-purpose", "fork_tools": ["Read"]}),
            "`fork_tools` applies only to forks (subagent_type \"fork\"); leave it out for a general-purpose agent".into(),
        ),
        (
            json!({"subagent_type": 7}),
            "`subagent_type` must be a string".into(),
        ),
    ];
    let mut message = MockMessage::text("Trying forks.");
    for (i, (args, _)) in cases.iter().enumerate() {
        message = message.with(fork_call_with(&format!("BAD-{i}"), args.clone()));
    }
    parent::answers(&mock, message, Reply::text("noted"));
    let _daemon = env.start_daemon();
    let parent = run_bg(&env, "p", "PARENT go");
    env.ctl(&["wait", &parent]).expect_code(0);

    let reqs = mock.requests();
    assert_eq!(reqs.len(), 2, "no fork ever asked the model");
    let results = reqs[1].json["messages"][2]["content"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(results.len(), cases.len());
    for (i, ((args, expected), result)) in cases.iter().zip(&results).enumerate() {
        assert_eq!(result["is_error"], true, "case {i} {args}");
        assert_eq!(text_of(&result["content"]), *expected, "case {i} {args}");
    }
    assert_eq!(env.agents().len(), 1, "nothing was started");
}

#[test]
fn agentctl_fork_refuses_bad_input_clearly_and_starts_nothing() {
    let mock = MockServer::start();
    let env = world(&mock);
    let dir = profiles(&env);
    profile(
        &dir,
        "body",
        "---\nname: body\ntools: [Read]\n---\nBe careful.\n",
    );
    mock.when(|r| prompt_of(r).contains("IDLE"), Reply::text("done"));
    let _daemon = env.start_daemon();
    let idle = run_bg(&env, "idle", "IDLE work");
    env.ctl(&["wait", &idle]).expect_code(0);
    let removed = run_bg(&env, "gone", "IDLE other work");
    env.ctl(&["wait", &removed]).expect_code(0);
    env.ctl(&["rm", &removed]).expect_code(0);
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["idle", "x", "--turns", "0"],
            "invalid argument: fork_turns must be \"all\" or a positive number of turns, not 0",
        ),
        (
            vec!["idle", "x", "--tools", "*"],
            "invalid argument: fork_tools[0] '*' is not allowed",
        ),
        (
            vec!["idle", "x", "--tools", "Read,,Grep"],
            "invalid argument: fork_tools[1] is blank",
        ),
        (
            vec!["idle", "x", "--tools", "Read, Grep"],
            "invalid argument: fork_tools[1] ' Grep' has spaces around it",
        ),
        (
            vec!["idle", "x", "--tools", "Read,Read"],
            "invalid argument: fork_tools[1] 'Read' is listed twice",
        ),
        (vec!["idle", "x", "--profile", "body"], "front matter only"),
        (
            vec!["idle", "x", "--profile", "nope"],
            "invalid argument: fork profile 'nope' not found",
        ),
        (
            vec!["idle", "   "],
            "invalid argument: the fork's directive is empty",
        ),
        (
            vec!["nosuchagent", "x"],
            "not found: no agent matches 'nosuchagent'",
        ),
        (vec![&removed, "x"], "not found: no agent matches"),
    ];
    for (args, expected) in &cases {
        let mut full = vec!["fork"];
        full.extend(args);
        let out = env.ctl(&full);
        out.expect_code(1);
        assert!(out.stderr.contains(expected), "{args:?}: {}", out.stderr);
    }
    // Both allowlists at once are a usage error before any request.
    env.ctl(&["fork", "idle", "x", "--tools", "Read", "--profile", "body"])
        .expect_code(2);
    assert_eq!(env.agents().len(), 1, "nothing was started");
    assert_eq!(mock.requests().len(), 2);
}

#[test]
fn a_fork_runs_only_its_allowed_tools_and_its_profile_is_fixed_at_launch() {
    let mock = MockServer::start();
    let env = world(&mock);
    let dir = profiles(&env);
    profile(
        &dir,
        "reader",
        "---\nname: reader\ntools: [Read]\npromptHint: Look, do not touch.\n---\n",
    );
    let write = |file: &str| {
        Reply::Message(MockMessage::new().with(Block::tool(
            "",
            "Write",
            json!({"file_path": file, "content": "x"}),
        )))
    };
    // TOOLS-ONLY tries Bash; PROFILED tries Write, twice (the second time
    // after its profile file allows Write).
    mock.when(
        |r| is_fork_of(r, "TOOLS-ONLY"),
        Reply::Message(MockMessage::new().with(Block::bash("", "touch denied.txt"))),
    );
    mock.when(|r| is_fork_of(r, "PROFILED"), write("written.txt"));
    mock.when(
        |r| last_text(r).contains("WRITE-AGAIN"),
        write("written-later.txt"),
    );
    mock.when(
        |r| is_request_of_fork(r, "TOOLS-ONLY") || is_request_of_fork(r, "PROFILED"),
        Reply::text("Scope: done\nResult: could not"),
    );
    parent::answers(
        &mock,
        MockMessage::text("Forking.")
            .with(fork_call_with(
                "TOOLS-ONLY",
                json!({"fork_tools": ["Read"]}),
            ))
            .with(fork_call_with(
                "PROFILED",
                json!({"fork_profile": "reader"}),
            )),
        Reply::text("ok"),
    );
    let _daemon = env.start_daemon();
    // In the default mode Bash and Write ask first: a tool the fork may
    // not run is refused before anyone is asked (nobody is attached here,
    // so an ask would leave the fork waiting).
    let parent = env.start_agent(&[
        "--permission-mode",
        "default",
        "--model",
        MODEL,
        "PARENT go",
    ]);
    wait_until("both forks report", Duration::from_secs(30), || {
        all_text(&env.transcript(&parent)).matches(NOTE).count() == 2
    });
    let reqs = mock.requests();
    let parent_first = &reqs[0];
    let refusal = |directive: &str, tool: &str| {
        let r = reqs
            .iter()
            .find(|r| is_request_of_fork(r, directive) && n_messages(r) == 5)
            .unwrap();
        let result = r.json["messages"][4]["content"][0].clone();
        assert_eq!(result["is_error"], true);
        assert_eq!(
            text_of(&result["content"]),
            format!("{tool} is not available to this agent; it may use: Read")
        );
        // Declarations unchanged: the parent's tools array, Agent included.
        assert_eq!(r.json["tools"], parent_first.json["tools"]);
    };
    refusal("TOOLS-ONLY", "Bash");
    refusal("PROFILED", "Write");
    assert!(!env.project().join("denied.txt").exists());
    assert!(!env.project().join("written.txt").exists());
    // The profile's hint is in the directive, after the rules.
    let profiled = reqs.iter().find(|r| is_fork_of(r, "PROFILED")).unwrap();
    let directive = last_text(profiled);
    assert!(directive.contains("Look, do not touch.") && directive.contains(TAG));

    // The profile now allows Write; the fork keeps what it launched with.
    profile(
        &dir,
        "reader",
        "---\nname: reader\ntools: [Read, Write]\n---\n",
    );
    let fork = env
        .agents()
        .into_iter()
        .find(|a| a["description"] == "PROFILED")
        .unwrap();
    env.ctl(&[
        "send",
        fork["id"].as_str().unwrap(),
        "WRITE-AGAIN now",
        "--wait",
    ])
    .expect_code(0);
    let again = mock
        .requests()
        .into_iter()
        .rfind(|r| is_request_of_fork(r, "PROFILED"))
        .unwrap();
    let last = again.json["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(
        text_of(&last["content"]),
        "Write is not available to this agent; it may use: Read"
    );
    assert!(!env.project().join("written-later.txt").exists());
}

#[test]
fn a_fork_that_calls_agent_gets_a_tool_error_and_no_grandchild() {
    let mock = MockServer::start();
    let env = world(&mock);
    mock.when(
        |r| is_fork_of(r, "RECURSE"),
        Reply::Message(
            MockMessage::text("Delegating further.")
                .with(fork_call("GRANDCHILD fork"))
                .with(Block::agent(
                    "",
                    json!({"description": "helper", "prompt": "GRANDCHILD plain"}),
                )),
        ),
    );
    mock.when(
        |r| is_request_of_fork(r, "RECURSE"),
        Reply::text("Scope: recurse\nResult: did it myself"),
    );
    parent::answers(
        &mock,
        MockMessage::text("Forking.").with(fork_call("RECURSE")),
        Reply::text("ok"),
    );
    let _daemon = env.start_daemon();
    let parent = run_bg(&env, "p", "PARENT go");
    wait_until("the fork reports", Duration::from_secs(30), || {
        all_text(&env.transcript(&parent)).contains("did it myself")
    });
    let second = mock
        .requests()
        .into_iter()
        .find(|r| is_request_of_fork(r, "RECURSE") && n_messages(r) == 5)
        .unwrap();
    let results = second.json["messages"][4]["content"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(results.len(), 2);
    for r in &results {
        assert_eq!(r["is_error"], true);
        assert_eq!(
            text_of(&r["content"]),
            "Agent is not available inside a fork: you are a fork and may not start agents. Do the task yourself with your other tools and report as your directive says."
        );
    }
    assert_eq!(
        env.agents().len(),
        2,
        "the parent and its fork, no grandchild"
    );
    assert!(
        !mock
            .requests()
            .iter()
            .any(|r| last_text(r).contains("GRANDCHILD"))
    );
}

#[test]
fn with_implicit_fork_an_agent_call_without_a_type_forks() {
    let mock = MockServer::start();
    let env = world(&mock);
    env.write_config("implicit_fork = true\n");
    mock.when(
        |r| is_fork_of(r, "UNTYPED"),
        Reply::text("Scope: untyped\nResult: forked"),
    );
    parent::answers(
        &mock,
        MockMessage::text("Delegating.").with(Block::agent(
            "",
            json!({"description": "UNTYPED", "prompt": "UNTYPED task"}),
        )),
        Reply::text("ok"),
    );
    let _daemon = env.start_daemon();
    let parent = run_bg(&env, "p", "PARENT go");
    wait_until("the fork reports", Duration::from_secs(30), || {
        all_text(&env.transcript(&parent)).contains("Result: forked")
    });
    let child = env
        .agents()
        .into_iter()
        .find(|a| a["parent_id"] == parent.as_str())
        .unwrap();
    assert_eq!(child["subagent_type"], "fork");
}
