//! An external agent's edits are checkpointed like agentd's own (DESIGN
//! §23): it is the workspace that is recorded, not the tool calls, so the
//! ACP agent's own file writes and shell commands are rewound by
//! `rewind --code`; its conversation lives in its own session, so a
//! conversation rewind is refused.

#![allow(clippy::unwrap_used)] // Tests: a panic is the failure report.

use std::time::Duration;

use agentd_e2e::acp_agent::script;
use serde_json::json;

use super::agents::World;

#[test]
fn an_external_agents_own_writes_and_shell_are_rewound_and_its_conversation_is_not_cut() {
    let w = World::new("", "");
    let p = w.env.project();
    std::fs::write(p.join("a.txt"), "ay\n").unwrap();
    let _daemon = w.env.start_daemon();
    let first = script(&json!([{"say": "looking"}]));
    w.env
        .ctl(&["run", "--agent", "scripted", "--name", "ext", &first])
        .expect_code(0);
    let second = script(&json!([
        {"tool": {"id": "w1", "title": "Write notes.txt", "kind": "edit"},
         "then": {"status": "completed",
                  "diff": {"path": "notes.txt", "oldText": null, "newText": "by the agent\n"}, "writeFile": true}},
        {"shell": "echo changed > a.txt && mkdir -p d && echo x > d/y"},
        {"say": "done"}
    ]));
    w.env.ctl(&["send", "ext", &second]).expect_code(0);
    let ended = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let a = w.env.show("ext");
        if a["status"] == "completed" && a["turns"] == 2 {
            break;
        }
        assert!(
            std::time::Instant::now() < ended,
            "the second turn did not end: {a}\n{}",
            w.env.daemon_log_text()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        std::fs::read_to_string(p.join("a.txt")).unwrap(),
        "changed\n"
    );
    assert!(p.join("notes.txt").exists() && p.join("d/y").exists());
    let cps = w
        .env
        .ctl(&["checkpoints", "ext", "--json"])
        .expect_code(0)
        .json();
    assert_eq!(cps.as_array().unwrap().len(), 2, "{cps}");
    assert_eq!(cps[1]["has_files"], true);

    let out = w.env.ctl(&["rewind", "ext", "--to", "2"]);
    out.expect_code(1);
    assert!(out.stderr.contains("its own session"), "{}", out.stderr);
    w.env
        .ctl(&["rewind", "ext", "--to", "2", "--code"])
        .expect_code(0);
    assert_eq!(std::fs::read_to_string(p.join("a.txt")).unwrap(), "ay\n");
    assert!(!p.join("notes.txt").exists());
    assert!(!p.join("d").exists());
}
