//! A daemon restart under an open editor is invisible to it (DESIGN §15):
//! with a prompt in flight, agentd is stopped (SIGTERM) or killed
//! (SIGKILL) and started again on the same socket; the bridge finds it,
//! attaches again from the last entry it showed, and the prompt answers
//! with the turn's real end — every update of the turn shown once — and
//! the session takes the next prompt. Driven by both ACP SDKs.

#![allow(clippy::unwrap_used)] // Tests: a panic is the failure report.

use std::collections::HashMap;

use agentd_e2e::mock::{Block, MockMessage, MockServer, Reply};
use agentd_e2e::{Env, wait_for_path};
use serde_json::Value;

use super::of_kind;
use super::sdk::Sdk;

#[derive(Clone, Copy, Debug)]
enum Stop {
    Term,
    Kill,
}

#[test]
fn a_sigterm_restart_is_invisible_to_the_official_acp_sdk() {
    a_restart_is_invisible(Sdk::TypeScript, Stop::Term);
}

#[test]
fn a_sigterm_restart_is_invisible_to_the_python_acp_sdk() {
    a_restart_is_invisible(Sdk::Python, Stop::Term);
}

#[test]
fn a_sigkill_restart_is_invisible_to_the_official_acp_sdk() {
    a_restart_is_invisible(Sdk::TypeScript, Stop::Kill);
}

#[test]
fn a_sigkill_restart_is_invisible_to_the_python_acp_sdk() {
    a_restart_is_invisible(Sdk::Python, Stop::Kill);
}

/// The text of every agent_message_chunk, joined.
fn said(updates: &[Value]) -> String {
    updates
        .iter()
        .filter(|u| u["sessionUpdate"] == "agent_message_chunk")
        .map(|u| u["content"]["text"].as_str().unwrap())
        .collect()
}

fn a_restart_is_invisible(sdk: Sdk, stop: Stop) {
    sdk.setup();
    let mock = MockServer::start();
    let env = Env::with_mock(&mock);
    // A short grace: SIGTERM stops the waiting tool instead of waiting 10 s.
    env.write_config("default_model = \"anthropic:claude-test\"\nshutdown_grace_secs = 1\n");
    let daemon = env.start_daemon();
    mock.enqueue_all([
        Reply::Message(MockMessage::text("Working on it.").with(Block::bash(
            "toolu_restart",
            "touch restart-started; while [ ! -e restart-go ]; do sleep 0.1; done",
        ))),
        Reply::text("Back after the restart."),
        Reply::text("Second prompt answered."),
    ]);
    let cwd = env.project().display().to_string();
    let driver = sdk.spawn(&env, &["restart", &cwd]);

    // The prompt is in flight, its tool running: agentd goes away.
    wait_for_path(&env.project().join("restart-started"));
    match stop {
        Stop::Term => {
            daemon.terminate();
        }
        Stop::Kill => daemon.kill9(),
    }
    // The same socket; the bridge must not have started one of its own.
    let _daemon = env.start_daemon();
    std::fs::write(env.project().join("restart-go"), "").unwrap();

    let lines = sdk.finish(driver);
    assert!(of_kind(&lines, "error").is_empty(), "{lines:#?}");
    let prompts = of_kind(&lines, "prompt");
    assert_eq!(prompts.len(), 2, "{lines:#?}");
    assert_eq!(prompts[0]["stopReason"], "end_turn", "{lines:#?}");
    let turn = prompts[0]["updates"].as_array().unwrap();
    // The whole turn, each part once: the text before and after.
    assert_eq!(
        said(turn),
        "Working on it.Back after the restart.",
        "{turn:#?}"
    );
    // The call opened once and ended once, nothing after its end.
    let of_call: Vec<&Value> = turn
        .iter()
        .filter(|u| u["toolCallId"] == "toolu_restart")
        .collect();
    let opened = of_call
        .iter()
        .filter(|u| u["sessionUpdate"] == "tool_call")
        .count();
    assert_eq!(opened, 1, "{of_call:#?}");
    let ends: Vec<usize> = of_call
        .iter()
        .enumerate()
        .filter(|(_, u)| matches!(u["status"].as_str(), Some("completed" | "failed")))
        .map(|(i, _)| i)
        .collect();
    assert_eq!(ends, vec![of_call.len() - 1], "{of_call:#?}");
    // No update shown twice (usage updates aside: each response has one).
    let mut seen: HashMap<String, usize> = HashMap::new();
    for u in turn.iter().filter(|u| u["sessionUpdate"] != "usage_update") {
        *seen.entry(u.to_string()).or_default() += 1;
    }
    let twice: Vec<&String> = seen
        .iter()
        .filter(|(_, n)| **n > 1)
        .map(|(u, _)| u)
        .collect();
    assert!(twice.is_empty(), "shown twice: {twice:#?}");

    // The session goes on.
    assert_eq!(prompts[1]["stopReason"], "end_turn", "{lines:#?}");
    let next = prompts[1]["updates"].as_array().unwrap();
    assert_eq!(said(next), "Second prompt answered.");

    // The model was asked once per response: the revived turn went on
    // from the interrupted call's result, nothing was asked again.
    let requests = mock.requests();
    assert_eq!(
        requests.len(),
        3,
        "{:#?}",
        requests.iter().map(|r| r.body_text()).collect::<Vec<_>>()
    );
    assert!(requests[1].body_contains("toolu_restart"));
}
