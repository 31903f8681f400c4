//! Reopening an external agent's session in a new process (DESIGN §19)
//! when the agent does not keep to the order ACP gives a load: Gemini CLI
//! 0.61 answers `session/load` before it has written the replay of the
//! history. The replay is history agentd already holds; it must never be
//! taken for the next turn's words.

#![allow(clippy::unwrap_used)] // Tests: a panic is the failure report.

use std::time::Duration;

use crate::external::agents::{World, said};

#[test]
fn a_replay_written_after_the_loads_answer_is_not_taken_for_the_next_turn() {
    let w = World::new(", TEST_AGENT_LATE_REPLAY = \"50\"", "");
    let daemon = w.env.start_daemon();
    let out = w
        .env
        .ctl(&["run", "--agent", "scripted", "--background", "first words"]);
    out.expect_code(0);
    let id = out.stdout.trim().to_string();
    w.env.wait_status(&id, "completed", Duration::from_secs(30));
    daemon.kill9();
    let _daemon = w.env.start_daemon();
    w.env.ctl(&["send", &id, "second words"]).expect_code(0);
    let done = w.env.wait_for_agent(&id, "the second turn answered", |a| {
        a["status"] == "completed" && a["result"] != "echo: first words"
    });
    assert_eq!(w.received("session/load").len(), 1);
    assert_eq!(
        done["result"], "echo: second words",
        "the replay went into the turn: {done}"
    );
    let said = said(&w.env.transcript(&id));
    assert_eq!(
        said.matches("echo: first words").count(),
        1,
        "the replayed answer was recorded again: {said}"
    );
    assert!(said.contains("echo: second words"), "{said}");
}
