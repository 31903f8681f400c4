//! What an external agent says it changed (ACP `diff` content) is its
//! claim: agentd did not see the change made. A claim inside the agent's
//! workspace is kept and shown as the agent's report; one outside it
//! (`/victim/file.txt`, `proj/../../../../etc/hostname`) is never shown as
//! a change, in `log`, `log --json` or to an editor.

#![allow(clippy::unwrap_used)] // Tests: a panic is the failure report.

use agentd_e2e::acp_agent::script;
use serde_json::json;

use super::agents::World;

#[test]
fn an_external_agents_claimed_changes_outside_its_workspace_are_not_shown_as_changes() {
    let w = World::new("", "");
    let _daemon = w.env.start_daemon();
    let cwd = w.env.project().canonicalize().unwrap();
    let claim = |id: &str, path: &str| {
        json!({"tool": {"id": id, "title": format!("Edit {path}"), "kind": "edit"},
               "then": {"status": "completed", "text": "edited",
                        "diff": {"path": path, "oldText": "old\n", "newText": "new\n"}}})
    };
    let prompt = script(&json!([
        claim("c1", "/victim/file.txt"),
        claim("c2", "proj/../../../../etc/hostname"),
        claim("c3", "notes.txt"),
        {"say": "Edited."}
    ]));
    w.env
        .ctl(&["run", "--agent", "scripted", "--name", "claims", &prompt])
        .expect_code(0);

    let json = w
        .env
        .ctl(&["log", "claims", "--json"])
        .expect_code(0)
        .json();
    let changes: Vec<serde_json::Value> = json
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|e| e["file_changes"].as_array().cloned().unwrap_or_default())
        .collect();
    assert_eq!(
        changes.len(),
        1,
        "only the claim inside is kept: {changes:?}"
    );
    assert_eq!(
        changes[0]["path"],
        cwd.join("notes.txt").display().to_string()
    );
    assert_eq!(changes[0]["reported"], true);
    // The result says what was claimed outside, and that it is no change.
    let text = agentd_e2e::all_text(&w.env.transcript("claims"));
    assert!(
        text.contains("reported a change to /victim/file.txt, outside its workspace"),
        "{text}"
    );
    assert!(
        text.contains("reported a change to /etc/hostname"),
        "{text}"
    );

    let log = w.env.ctl(&["log", "claims"]);
    log.expect_code(0);
    assert!(
        log.stderr
            .contains("notes.txt changed at line 1, as the agent reported it (not verified)"),
        "{}",
        log.stderr
    );
    assert!(
        !log.stderr.contains("/victim/file.txt changed"),
        "{}",
        log.stderr
    );
    assert!(
        !log.stderr.contains("/etc/hostname changed"),
        "{}",
        log.stderr
    );
}
