//! An external agent (ACP) manages its own context: `agentctl compact`
//! on one is refused at once with FAILED_PRECONDITION, whether it is idle
//! or running, and its run and its result stay as they were.

#![allow(clippy::unwrap_used)] // Tests: a panic is the failure report.

use agentd_e2e::acp_agent::script;
use serde_json::json;

use super::agents::World;

#[test]
fn compacting_an_idle_external_agent_is_refused_and_keeps_its_result() {
    let w = World::new("", "");
    let _daemon = w.env.start_daemon();
    let prompt = script(&json!([{"say": "echo: hello world"}]));
    w.env
        .ctl(&["run", "--agent", "scripted", "--name", "ext", &prompt])
        .expect_code(0);
    let before = w.env.show("ext");
    assert_eq!(before["status"], "completed", "{before}");
    assert_eq!(before["result"], "echo: hello world", "{before}");
    let entries = w.env.transcript("ext").len();

    let out = w.env.ctl(&["compact", "ext"]);
    out.expect_code(1);
    assert!(
        out.stderr.contains("failed precondition")
            && out.stderr.contains("manages its own context"),
        "{}",
        out.stderr
    );

    let after = w.env.show("ext");
    assert_eq!(after["status"], "completed", "{after}");
    assert_eq!(after["result"], "echo: hello world", "{after}");
    assert_eq!(after["turns"], before["turns"], "{after}");
    assert_eq!(w.env.transcript("ext").len(), entries);
    // No run was started for it: the daemon logged one stop only.
    let log = w.env.daemon_log_text();
    assert_eq!(log.matches("agent stopped").count(), 1, "{log}");
}
