//! Interrupt: stop an agent now — the model call or the tool in flight
//! aborted and recorded — and leave it paused, continuable with send.

#![allow(clippy::unwrap_used)] // Tests: a panic is the failure report.

use std::time::{Duration, Instant};

use agentd_e2e::Env;
use agentd_e2e::script::{delayed, script, text, tool, turn};
use serde_json::json;

#[test]
fn interrupting_a_running_tool_kills_it_records_it_and_leaves_the_agent_continuable() {
    let env = Env::new();
    let _daemon = env.start_daemon();
    let model = env.script(
        "s.json",
        &script(vec![
            turn(vec![tool(
                "Bash",
                json!({"command": "touch started; sleep 30; touch finished"}),
            )]),
            turn(vec![text("continued after the interrupt")]),
        ]),
    );
    let id = env.run_background(&model, "busy", "work");
    agentd_e2e::wait_for_path(&env.project().join("started"));
    let started = Instant::now();
    let out = env.ctl(&["interrupt", "busy"]);
    out.expect_code(0);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "took {:?}",
        started.elapsed()
    );
    assert!(out.stdout.contains("paused"), "{}", out.stdout);
    let shown = env.show(&id);
    assert_eq!(shown["status"], "paused", "{shown}");
    // The call is answered, as interrupted; the process is gone.
    let log = env.ctl(&["log", &id, "--json"]).expect_code(0).json();
    let last = log.as_array().unwrap().last().unwrap();
    assert_eq!(last["role"], "user", "{last}");
    let result = &last["content"][0];
    assert_eq!(result["type"], "tool_result");
    assert_eq!(result["is_error"], true);
    assert!(
        result["content"]
            .to_string()
            .contains("interrupted while this Bash call ran"),
        "{result}"
    );
    std::thread::sleep(Duration::from_millis(300));
    assert!(!env.project().join("finished").exists());

    // Not running now: nothing to interrupt.
    let again = env.ctl(&["interrupt", "busy"]);
    again.expect_code(1);
    assert!(
        again.stderr.contains("nothing to interrupt"),
        "{}",
        again.stderr
    );

    // send continues it from where it stopped.
    env.ctl(&["send", "busy", "go on", "--wait"]).expect_code(0);
    let done = env.wait_for_agent(&id, "completed", |a| a["status"] == "completed");
    assert_eq!(done["result"], "continued after the interrupt");
}

#[test]
fn interrupting_the_model_call_discards_the_partial_answer_and_says_so() {
    let env = Env::new();
    let _daemon = env.start_daemon();
    let model = env.script(
        "s.json",
        &script(vec![delayed(30_000, vec![text("never said")])]),
    );
    let id = env.run_background(&model, "thinking", "think");
    env.wait_for_agent(&id, "running", |a| a["status"] == "running");
    std::thread::sleep(Duration::from_millis(200));
    let started = Instant::now();
    env.ctl(&["interrupt", &id]).expect_code(0);
    assert!(started.elapsed() < Duration::from_secs(5));
    let log = env.ctl(&["log", &id, "--json"]).expect_code(0).json();
    let entries = log.as_array().unwrap();
    assert!(
        !entries.iter().any(|e| e["role"] == "assistant"),
        "nothing of the answer is kept: {log}"
    );
    let note = entries.last().unwrap();
    assert_eq!(note["role"], "system", "{note}");
    assert!(
        note["content"]
            .to_string()
            .contains("interrupted while the model was answering"),
        "{note}"
    );
    assert_eq!(env.show(&id)["status"], "paused");
}

#[test]
fn a_message_waiting_when_the_agent_is_interrupted_does_not_restart_it() {
    let env = Env::new();
    let _daemon = env.start_daemon();
    let model = env.script(
        "s.json",
        &script(vec![
            turn(vec![tool(
                "Bash",
                json!({"command": "touch started; sleep 30"}),
            )]),
            turn(vec![tool("Bash", json!({"command": "touch second-call"}))]),
            turn(vec![text("done")]),
        ]),
    );
    let id = env.run_background(&model, "queued", "work");
    agentd_e2e::wait_for_path(&env.project().join("started"));
    // A message queued for the running turn, then the interrupt.
    env.ctl(&["send", &id, "and then this"]).expect_code(0);
    let out = env.ctl(&["interrupt", &id]);
    out.expect_code(0);
    assert!(out.stdout.contains("paused"), "{}", out.stdout);
    std::thread::sleep(Duration::from_millis(500));
    let shown = env.show(&id);
    assert_eq!(shown["status"], "paused", "{shown}");
    assert!(!env.project().join("second-call").exists());
}
