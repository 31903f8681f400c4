//! What an editor shows is what happened (DESIGN §15), through both ACP
//! SDKs (`acp_sdk`), held to the same checks: Write/Edit diffs carry the text the files
//! held (recorded by the daemon as the tools ran, whatever the bridge's own
//! directory holds, in default and bypass mode, after a SIGKILL and in a
//! `session/load` replay), paths are absolute, and a foreground subagent is
//! a call whose progress is its own calls, with no call left running.

#![allow(clippy::unwrap_used)] // Tests: a panic is the failure report.

use std::path::{Path, PathBuf};

use agentd_e2e::Env;
use agentd_e2e::mock::{MockServer, Reply, n_messages, prompt_of};
use serde_json::{Value, json};

use super::of_kind;
use super::sdk::Sdk;

/// A directory for the agent, apart from the bridge's (the project), with
/// the files the script changes; the project holds decoys of the same
/// names, which a bridge reading files relative to itself would show.
fn agent_dir(env: &Env, name: &str) -> PathBuf {
    let dir = env.project().join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("a.txt"), "old a\n").unwrap();
    std::fs::write(dir.join("b.txt"), "keep\nold b\nkeep\n").unwrap();
    for decoy in ["a.txt", "b.txt", "c.txt"] {
        std::fs::write(env.project().join(decoy), "DECOY\n").unwrap();
    }
    std::fs::canonicalize(dir).unwrap()
}

fn script(mock: &MockServer) {
    mock.enqueue_all([
        Reply::tool(
            "",
            "Write",
            json!({"file_path": "a.txt", "content": "new a\n"}),
        ),
        Reply::tool(
            "",
            "Edit",
            json!({"file_path": "b.txt", "old_string": "old b", "new_string": "new b"}),
        ),
        Reply::tool(
            "",
            "Write",
            json!({"file_path": "c.txt", "content": "created\n"}),
        ),
        Reply::text("changed them"),
    ]);
}

fn updates_of(lines: &[Value]) -> Vec<Value> {
    of_kind(lines, "prompt")[0]["updates"]
        .as_array()
        .unwrap()
        .clone()
}

/// The diff the call on `file` ended with, and the call it opened with.
fn diff_for(updates: &[Value], file: &Path) -> (Value, Value) {
    let path = file.display().to_string();
    let opened = updates
        .iter()
        .find(|u| u["sessionUpdate"] == "tool_call" && u["locations"][0]["path"] == path.as_str())
        .unwrap_or_else(|| panic!("no call on {path} with an absolute location: {updates:?}"));
    let id = &opened["toolCallId"];
    let done = updates
        .iter()
        .find(|u| {
            u["sessionUpdate"] == "tool_call_update"
                && u["toolCallId"] == *id
                && u["status"] == "completed"
        })
        .unwrap_or_else(|| panic!("{path}: the call did not complete: {updates:?}"));
    let diff = done["content"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "diff")
        .cloned()
        .unwrap_or_else(|| panic!("{path}: no diff in {done}"));
    (diff, opened.clone())
}

/// The three changes, exactly as they happened, with absolute paths.
fn assert_exact_diffs(updates: &[Value], dir: &Path) {
    let (a, _) = diff_for(updates, &dir.join("a.txt"));
    assert_eq!(
        a,
        json!({"type": "diff", "path": dir.join("a.txt").display().to_string(), "oldText": "old a\n", "newText": "new a\n"})
    );
    let (b, opened) = diff_for(updates, &dir.join("b.txt"));
    assert_eq!(b["path"], dir.join("b.txt").display().to_string());
    assert_eq!(b["oldText"], "keep\nold b\nkeep\n");
    assert_eq!(b["newText"], "keep\nnew b\nkeep\n");
    // The Edit's proposed change, before it ran, had an absolute path too.
    assert_eq!(
        opened["content"][0]["path"],
        dir.join("b.txt").display().to_string()
    );
    let (c, _) = diff_for(updates, &dir.join("c.txt"));
    assert!(
        c["oldText"].is_null(),
        "a created file has no old text: {c}"
    );
    assert_eq!(c["newText"], "created\n");
}

#[test]
fn diffs_carry_what_the_files_held_also_after_a_restart_and_in_a_replay_typescript() {
    diffs_carry_what_the_files_held(Sdk::TypeScript);
}

#[test]
fn diffs_carry_what_the_files_held_also_after_a_restart_and_in_a_replay_python() {
    diffs_carry_what_the_files_held(Sdk::Python);
}

fn diffs_carry_what_the_files_held(sdk: Sdk) {
    sdk.setup();
    let mock = MockServer::start();
    let env = Env::with_mock(&mock);
    env.write_config("default_model = \"anthropic:claude-test\"\n");
    let daemon = env.start_daemon();

    // Default mode: each call is allowed in the editor before it runs.
    let dir = agent_dir(&env, "asking");
    script(&mock);
    let lines = sdk.run(&env, &["files", &dir.display().to_string(), "default"]);
    assert_eq!(of_kind(&lines, "permission").len(), 3, "{lines:?}");
    let updates = updates_of(&lines);
    assert_exact_diffs(&updates, &dir);
    let asking = of_kind(&lines, "new")[0]["sessionId"]
        .as_str()
        .unwrap()
        .to_string();

    // Bypass mode: the write has happened before the editor hears of it.
    let dir = agent_dir(&env, "bypassing");
    script(&mock);
    let lines = sdk.run(&env, &["files", &dir.display().to_string(), "bypass"]);
    assert!(of_kind(&lines, "permission").is_empty());
    assert_exact_diffs(&updates_of(&lines), &dir);
    assert_eq!(
        std::fs::read_to_string(dir.join("a.txt")).unwrap(),
        "new a\n"
    );

    // The record is durable: after a SIGKILL, `log --json` and a loaded
    // session show the same changes.
    daemon.kill9();
    let _daemon = env.start_daemon();
    let dir = std::fs::canonicalize(env.project().join("asking")).unwrap();
    let log: Value =
        serde_json::from_str(&env.ctl(&["log", "--json", &asking]).expect_code(0).stdout).unwrap();
    let changes: Vec<Value> = log
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|e| e["file_changes"].as_array().cloned().unwrap_or_default())
        .collect();
    assert_eq!(changes.len(), 3, "{log}");
    assert_eq!(changes[0]["path"], dir.join("a.txt").display().to_string());
    assert_eq!(
        (changes[0]["before"].clone(), changes[0]["after"].clone()),
        (json!("old a\n"), json!("new a\n"))
    );
    assert_eq!(changes[1]["before"], "keep\nold b\nkeep\n");
    assert_eq!(changes[2]["created"], true);
    // The human view shows the change under the call.
    let text = env.ctl(&["log", &asking]);
    text.expect_code(0);
    assert!(
        text.stderr.contains("- old b") && text.stderr.contains("+ new b"),
        "{}",
        text.stderr
    );
    let loaded = sdk.run(&env, &["second", &dir.display().to_string(), &asking]);
    let replay = of_kind(&loaded, "load")[0]["updates"]
        .as_array()
        .unwrap()
        .clone();
    assert_exact_diffs(&replay, &dir);
}

#[test]
fn a_foreground_subagent_is_one_call_whose_progress_is_its_calls_typescript() {
    a_foreground_subagent_is_one_call(Sdk::TypeScript);
}

#[test]
fn a_foreground_subagent_is_one_call_whose_progress_is_its_calls_python() {
    a_foreground_subagent_is_one_call(Sdk::Python);
}

fn a_foreground_subagent_is_one_call(sdk: Sdk) {
    sdk.setup();
    let mock = MockServer::start();
    let env = Env::with_mock(&mock);
    env.write_config("default_model = \"anthropic:claude-test\"\n");
    let _daemon = env.start_daemon();
    let child = |n| {
        move |r: &agentd_e2e::mock::RecordedRequest| {
            prompt_of(r).contains("CHILD-WORK") && n_messages(r) == n
        }
    };
    mock.when(
        child(1),
        Reply::tool("", "Bash", json!({"command": "echo from-child"})),
    );
    mock.when(
        child(3),
        Reply::tool(
            "",
            "Write",
            json!({"file_path": "child.txt", "content": "by the child\n"}),
        ),
    );
    mock.when(child(5), Reply::text("CHILD-RESULT all done"));
    let parent = |n| {
        move |r: &agentd_e2e::mock::RecordedRequest| {
            prompt_of(r).contains("TASK-SUB") && n_messages(r) == n
        }
    };
    mock.when(
        parent(1),
        Reply::tool(
            "",
            "Agent",
            json!({"description": "do the work", "prompt": "CHILD-WORK go", "run_in_background": false}),
        ),
    );
    mock.when(parent(3), Reply::text("the subagent did it"));
    let dir = std::fs::canonicalize(env.project()).unwrap();

    let lines = sdk.run(&env, &["subagent", &dir.display().to_string(), "default"]);
    let p = &of_kind(&lines, "prompt")[0];
    assert_eq!(p["stopReason"], "end_turn", "{p}");
    let updates = p["updates"].as_array().unwrap();
    let agent_call = updates
        .iter()
        .find(|u| u["sessionUpdate"] == "tool_call" && u["title"] == "Agent: do the work")
        .unwrap_or_else(|| panic!("no Agent call: {updates:?}"))["toolCallId"]
        .clone();
    // The child's calls are no calls of their own in the editor...
    let opened: Vec<&Value> = updates
        .iter()
        .filter(|u| u["sessionUpdate"] == "tool_call")
        .collect();
    assert_eq!(opened.len(), 1, "only the Agent call is opened: {opened:?}");
    // ...and its asks are put on the Agent call.
    let asks = of_kind(&lines, "permission");
    assert_eq!(asks.len(), 2, "{asks:?}");
    for ask in &asks {
        assert_eq!(ask["toolCallId"], agent_call, "{ask}");
        assert!(
            ask["title"].as_str().unwrap().starts_with("subagent "),
            "{ask}"
        );
    }
    assert_eq!(
        asks[0]["meta"]["agentd"]["subagentCall"]["toolName"],
        "Bash"
    );
    // Every call the bridge opened had ended when the prompt was answered.
    let answered = &updates[..p["atAnswer"].as_u64().unwrap() as usize];
    let mut last = std::collections::HashMap::new();
    for u in answered {
        if let Some(status) = u["status"].as_str() {
            last.insert(
                u["toolCallId"].as_str().unwrap().to_string(),
                status.to_string(),
            );
        }
    }
    assert_eq!(
        last.get(agent_call.as_str().unwrap()).map(String::as_str),
        Some("completed"),
        "{answered:?}"
    );
    assert!(
        last.values().all(|s| s == "completed" || s == "failed"),
        "a call left open at the turn's end: {last:?}"
    );
    // The Agent call's progress, before the prompt's answer: the child's
    // calls, all ended, with the child's diff (absolute path, created),
    // then its result.
    let progress = answered
        .iter()
        .rfind(|u| u["toolCallId"] == agent_call && u["_meta"]["agentd"]["subagent"].is_object())
        .unwrap_or_else(|| panic!("no progress on the Agent call before the answer: {updates:?}"));
    let calls = progress["_meta"]["agentd"]["subagent"]["toolCalls"]
        .as_array()
        .unwrap();
    let titles: Vec<&str> = calls.iter().map(|c| c["title"].as_str().unwrap()).collect();
    assert_eq!(titles, vec!["Bash: echo from-child", "Write: child.txt"]);
    assert!(
        calls.iter().all(|c| c["status"] == "completed"),
        "{calls:?}"
    );
    let content = progress["content"].as_array().unwrap();
    assert!(
        content[0]["content"]["text"]
            .as_str()
            .unwrap()
            .contains("✓ Bash: echo from-child"),
        "{content:?}"
    );
    let diff = content.iter().find(|c| c["type"] == "diff").unwrap();
    assert_eq!(diff["path"], dir.join("child.txt").display().to_string());
    assert!(diff["oldText"].is_null());
    assert!(
        content.last().unwrap()["content"]["text"]
            .as_str()
            .unwrap()
            .contains("CHILD-RESULT"),
        "the result comes last: {content:?}"
    );
}
