//! Attach from a client that sends its requests and closes its side at once
//! (grpcio's `stub.Attach(iter([start]))`, `grpcurl -d`): closing means "no
//! more input", not "detach". The stream goes on until the agent is between
//! turns and then ends with OK. The client is stock grpcio
//! (tests/grpc-python/attach_half_close.py, in the venv of the Python
//! example client).

#![allow(clippy::unwrap_used)] // Tests: a panic is the failure report.

use std::path::Path;
use std::process::Command;

use agentd_e2e::Env;
use agentd_e2e::mock::{MODEL, MockServer, Reply};
use serde_json::{Value, json};

use super::interop;

/// Runs the half-closing client against agent `id`; its JSON lines.
fn attach_and_close(env: &Env, id: &str, message: Option<&str>) -> Vec<Value> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("grpc-python/attach_half_close.py");
    let python = interop::client_dir("python").join(".venv/bin/python");
    let socket = env.socket().display().to_string();
    let mut args = vec![script.display().to_string(), socket, id.to_string()];
    args.extend(message.map(str::to_string));
    let out = Command::new("timeout")
        .arg("90")
        .arg(&python)
        .args(&args)
        .output()
        .expect("timeout (coreutils) is needed");
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "the grpcio client failed ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

fn statuses(lines: &[Value]) -> Vec<&str> {
    lines
        .iter()
        .filter(|l| l["event"] == "status")
        .map(|l| l["status"].as_str().unwrap())
        .collect()
}

fn texts(lines: &[Value]) -> String {
    lines
        .iter()
        .filter(|l| l["event"] == "entry")
        .map(|l| l["text"].as_str().unwrap())
        .collect()
}

#[test]
fn a_half_closed_attach_follows_the_turn_to_its_end_then_ends_ok() {
    interop::setup("python");
    let mock = MockServer::start();
    let env = Env::with_mock(&mock);
    let _daemon = env.start_daemon();
    mock.enqueue_all([
        Reply::tool("", "Bash", json!({"command": "sleep 2"})),
        Reply::text("HALF-CLOSE-DONE"),
    ]);
    let id = env.start_agent(&[
        "--model",
        MODEL,
        "--permission-mode",
        "bypass",
        "take a moment",
    ]);
    let lines = attach_and_close(&env, &id, None);
    let end = lines.last().unwrap();
    assert_eq!(end["end"], "OK", "{lines:#?}");
    // Not cut short: the whole turn came, up to its end.
    assert!(texts(&lines).contains("HALF-CLOSE-DONE"), "{lines:#?}");
    assert_eq!(
        statuses(&lines).last(),
        Some(&"AGENT_STATUS_COMPLETED"),
        "{lines:#?}"
    );
    assert!(
        end["at"].as_f64().unwrap() >= 1.0,
        "it waited for the tool: {end}"
    );
    assert_eq!(env.show(&id)["status"], "completed");
}

#[test]
fn a_half_closed_attach_to_an_idle_agent_gets_the_history_and_ends_at_once() {
    interop::setup("python");
    let mock = MockServer::start();
    let env = Env::with_mock(&mock);
    let _daemon = env.start_daemon();
    mock.enqueue(Reply::text("ALREADY-DONE"));
    let id = env.run_background(MODEL, "finished", "say it");
    env.wait_for_agent(&id, "completed", |a| a["status"] == "completed");
    let lines = attach_and_close(&env, &id, None);
    assert_eq!(lines.last().unwrap()["end"], "OK", "{lines:#?}");
    assert!(texts(&lines).contains("ALREADY-DONE"), "{lines:#?}");
    assert_eq!(statuses(&lines), ["AGENT_STATUS_COMPLETED"], "{lines:#?}");
}

#[test]
fn a_message_sent_before_closing_is_answered_on_the_stream() {
    interop::setup("python");
    let mock = MockServer::start();
    let env = Env::with_mock(&mock);
    let _daemon = env.start_daemon();
    mock.enqueue_all([Reply::text("FIRST-TURN"), Reply::text("SECOND-TURN")]);
    let id = env.run_background(MODEL, "revived", "say it");
    env.wait_for_agent(&id, "completed", |a| a["status"] == "completed");
    let lines = attach_and_close(&env, &id, Some("once more"));
    assert_eq!(lines.last().unwrap()["end"], "OK", "{lines:#?}");
    // The turn the message started is followed to its end.
    let said = texts(&lines);
    assert!(
        said.contains("once more") && said.contains("SECOND-TURN"),
        "{lines:#?}"
    );
    assert_eq!(
        statuses(&lines).last(),
        Some(&"AGENT_STATUS_COMPLETED"),
        "{lines:#?}"
    );
    assert!(
        statuses(&lines).contains(&"AGENT_STATUS_RUNNING"),
        "{lines:#?}"
    );
}
