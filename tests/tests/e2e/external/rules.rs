//! An external agent's permission request is put to the person's rules
//! (DESIGN §24) through its tool kind: a deny refuses it, even in bypass.

#![allow(clippy::unwrap_used)] // Tests: a panic is the failure report.

use agentd_e2e::acp_agent::script;
use serde_json::json;

use super::agents::World;

#[test]
fn a_deny_refuses_an_external_agents_request_in_bypass_mode() {
    let w = World::new("", "");
    std::fs::create_dir_all(w.env.home().join(".claude")).unwrap();
    std::fs::write(
        w.env.home().join(".claude/settings.json"),
        r#"{"permissions": {"deny": ["Bash(rm:*)"]}}"#,
    )
    .unwrap();
    let _daemon = w.env.start_daemon();
    let prompt = script(&json!([
        {"tool": {"id": "x1", "title": "rm keep.txt", "kind": "execute",
                  "rawInput": {"command": "rm keep.txt"}},
         "ask": true,
         "then": {"status": "completed", "text": "removed"}},
        {"tool": {"id": "x2", "title": "ls", "kind": "execute", "rawInput": {"command": "ls"}},
         "ask": true,
         "then": {"status": "completed", "text": "listed"}},
        {"say": "over"}
    ]));
    w.env
        .ctl(&[
            "run",
            "--agent",
            "scripted",
            "--permission-mode",
            "bypass",
            "--name",
            "ext",
            &prompt,
        ])
        .expect_code(0);
    let answers: Vec<String> = w
        .received("session/request_permission")
        .iter()
        .map(|a| a.to_string())
        .collect();
    let log = agentd_e2e::acp_agent::log_lines(&w.log);
    let outcomes: Vec<String> = log
        .iter()
        .filter(|l| l.get("result").is_some())
        .map(|l| l["result"]["outcome"].to_string())
        .collect();
    assert_eq!(outcomes.len(), 2, "{outcomes:?} {answers:?}");
    assert!(outcomes[0].contains("reject"), "rm is denied: {outcomes:?}");
    assert!(
        outcomes[1].contains("allow"),
        "ls runs in bypass: {outcomes:?}"
    );
    // The decision is in the transcript, with the call it refused.
    let log = w.env.ctl(&["log", "ext"]).expect_code(0).stderr.clone();
    assert!(
        log.contains("denied by Bash(rm:*) in ~/.claude/settings.json"),
        "{log}"
    );
    let decisions: Vec<serde_json::Value> = w
        .env
        .transcript("ext")
        .iter()
        .flat_map(|e| e["rule_decisions"].as_array().cloned().unwrap_or_default())
        .collect();
    assert_eq!(decisions.len(), 1, "{decisions:?}");
    assert_eq!(decisions[0]["tool_use_id"], "x1");
    assert_eq!(decisions[0]["verdict"], "denied");
}
