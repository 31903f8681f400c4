//! What a client has seen is on disk: SIGKILL the daemon mid-run and start it again.

#![allow(clippy::unwrap_used)] // Tests: a panic is the failure report.

use agentd_e2e::Env;
use agentd_e2e::script::{delayed, script, text, tool, turn};
use serde_json::json;

#[test]
fn sigkill_mid_run_keeps_every_flushed_entry_and_marks_the_agent_interrupted() {
    let env = Env::new();
    // Resuming is tested elsewhere; here the agent must stay as the crash left it.
    env.write_config("resume_on_start = false\n");
    let daemon = env.start_daemon();
    let model = env.script(
        "s.json",
        &script(vec![
            turn(vec![
                text("step one"),
                tool("Bash", json!({"command": "echo one > one.txt"})),
            ]),
            turn(vec![
                text("step two"),
                tool("Write", json!({"file_path": "two.txt", "content": "2"})),
            ]),
            // Held here: the daemon dies while this response is "streaming".
            delayed(60_000, vec![text("never seen")]),
        ]),
    );
    let id = env.start_agent(&["--model", &model, "--name", "victim", "work"]);
    env.wait_for_agent(&id, "4 entries and running", |a| {
        a["transcript_len"] == 5 && a["status"] == "running"
    });
    let before = env.ctl(&["log", &id, "--json"]).expect_code(0).json();
    // What the client saw: the prompt, then two full tool rounds.
    let e = before.as_array().unwrap();
    assert_eq!(e.len(), 5);
    let roles: Vec<&str> = e.iter().map(|e| e["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["user", "assistant", "user", "assistant", "user"]);
    assert_eq!(e[0]["content"][0]["text"], "work");
    assert_eq!(e[1]["content"][0]["text"], "step one");
    assert_eq!(e[1]["content"][1]["name"], "Bash");
    assert_eq!(e[1]["content"][1]["input"]["command"], "echo one > one.txt");
    assert_eq!(e[2]["content"][0]["type"], "tool_result");
    assert_eq!(e[2]["content"][0]["tool_use_id"], e[1]["content"][1]["id"]);
    assert!(e[2]["content"][0].get("is_error").is_none(), "{}", e[2]);
    assert_eq!(e[3]["content"][1]["name"], "Write");
    assert_eq!(e[4]["content"][0]["tool_use_id"], e[3]["content"][1]["id"]);
    assert!(e[4]["content"][0].get("is_error").is_none(), "{}", e[4]);
    for (i, entry) in e.iter().enumerate() {
        assert_eq!(entry["seq"], i as u64);
    }

    daemon.kill9();
    assert!(
        env.socket().exists(),
        "SIGKILL leaves the socket file behind"
    );
    let _daemon = env.start_daemon();

    let after = env.ctl(&["log", &id, "--json"]).expect_code(0).json();
    assert_eq!(
        after, before,
        "every entry a client saw survives, byte for byte"
    );
    let agent = env.show("victim");
    assert_eq!(agent["status"], "interrupted");
    assert_eq!(agent["turns"], 2);
    assert_eq!(agent["can_message"], true);
    assert!(agent["resume_blocked_reason"].is_null());
    assert_eq!(
        std::fs::read_to_string(env.project().join("two.txt")).unwrap(),
        "2"
    );
    // An interrupted agent can still be stopped for good.
    env.ctl(&["stop", "victim"]).expect_code(0);
    assert_eq!(env.show("victim")["status"], "cancelled");
}

#[test]
fn sigterm_stops_gracefully_removes_the_socket_and_interrupts_running_agents() {
    let env = Env::new();
    // The held model call never reaches a safe point: the grace period bounds the wait.
    env.write_config("shutdown_grace_secs = 1\nresume_on_start = false\n");
    let daemon = env.start_daemon();
    let model = env.script("s.json", &script(vec![delayed(60_000, vec![text("x")])]));
    let id = env.start_agent(&["--model", &model, "hold"]);
    env.wait_for_agent(&id, "running", |a| a["status"] == "running");
    let started = std::time::Instant::now();
    let status = daemon.terminate();
    assert!(status.success(), "agentd exited with {status}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(8),
        "shutdown ignored its grace period"
    );
    assert!(
        !env.socket().exists(),
        "the socket is removed on a clean stop"
    );
    assert!(env.daemon_log_text().contains("SIGTERM"));

    let _daemon = env.start_daemon();
    let agent = env.show(&id);
    assert_eq!(agent["status"], "interrupted");
}

#[test]
fn completed_agents_and_transcripts_survive_restarts() {
    let env = Env::new();
    let daemon = env.start_daemon();
    let model = env.script("s.json", &script(vec![turn(vec![text("kept")])]));
    env.ctl(&["run", "--model", &model, "--name", "keep", "x"])
        .expect_code(0);
    daemon.kill9();
    let _daemon = env.start_daemon();
    let agent = env.show("keep");
    assert_eq!(agent["status"], "completed");
    assert_eq!(agent["result"], "kept");
}

#[test]
fn sigterm_lets_a_running_tool_finish_before_stopping_at_the_safe_point() {
    let env = Env::new();
    env.write_config("resume_on_start = false\n");
    let daemon = env.start_daemon();
    let model = env.script(
        "s.json",
        &script(vec![
            turn(vec![tool(
                "Bash",
                json!({"command": "touch started; sleep 1; echo done > finished"}),
            )]),
            turn(vec![text("next turn")]),
        ]),
    );
    let id = env.start_agent(&["--model", &model, "t"]);
    agentd_e2e::wait_for_path(&env.project().join("started"));
    assert!(daemon.terminate().success());
    // The tool ran to completion and its result was persisted before the stop.
    assert_eq!(
        std::fs::read_to_string(env.project().join("finished")).unwrap(),
        "done\n"
    );
    let _daemon = env.start_daemon();
    let log = env.ctl(&["log", &id, "--json"]).expect_code(0).json();
    let entries = log.as_array().unwrap();
    assert_eq!(entries.len(), 3, "{log}");
    assert_eq!(entries[2]["content"][0]["type"], "tool_result");
    assert_eq!(env.show(&id)["status"], "interrupted");
}
