//! Interop: the example clients in examples/clients/ — the stock gRPC
//! libraries of Python (grpcio) and Node (@grpc/grpc-js) with their default
//! channel options, as an editor plugin opens them — against the real daemon.
//!
//! Each client's `setup.sh` installs its pinned packages on the first run
//! (from PyPI or npm) and is quick after that. A machine without a working
//! `python3 -m venv` or `npm` fails these tests, saying so: the examples are
//! part of what the project promises.

#![allow(clippy::unwrap_used)] // Tests: a panic is the failure report.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use agentd_e2e::script::{script, text, turn};
use agentd_e2e::{Env, Out};
use serde_json::Value;

const PROMPT: &str = "Greet the plugin author";
const ANSWER: &str = "Hello, plugin author: the scripted model answers over stock gRPC.";
const SERVICE: &str = "agentd.v1.AgentService";

pub(super) fn client_dir(lang: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples/clients")
        .join(lang)
}

/// Runs `cmd` under `timeout` (so a hung install or client fails the test
/// instead of stalling the suite), saying which tool is missing if it cannot
/// start at all.
fn run_bounded(limit_secs: u32, program: &Path, args: &[&str], cwd: &Path) -> Out {
    let out = Command::new("timeout")
        .arg(limit_secs.to_string())
        .arg(program)
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run timeout(1) ({e}): coreutils is needed"));
    let out = Out::from(out);
    assert_ne!(
        out.code,
        124,
        "{} did not finish within {limit_secs} s\nstdout:\n{}\nstderr:\n{}",
        program.display(),
        out.stdout,
        out.stderr
    );
    out
}

/// Runs the client's setup.sh, holding a lock on the client's directory
/// (`flock`): two test runs must not install into one venv or node_modules
/// at once.
pub(super) fn setup(lang: &str) {
    let dir = client_dir(lang);
    let lock = dir.join(".setup.lock");
    let script = dir.join("setup.sh");
    let out = run_bounded(
        900,
        Path::new("flock"),
        &[lock.to_str().unwrap(), "sh", script.to_str().unwrap()],
        &dir,
    );
    assert_eq!(
        out.code, 0,
        "examples/clients/{lang}/setup.sh failed, so the {lang} example client cannot be tested \
         (exit {}; 127 or 'flock: failed to execute' means a tool is missing)\nstdout:\n{}\nstderr:\n{}",
        out.code, out.stdout, out.stderr
    );
}

/// A world with a daemon and a scripted model that answers `ANSWER`.
fn world() -> (Env, agentd_e2e::Daemon, String) {
    let env = Env::new();
    let daemon = env.start_daemon();
    let model = env.script("interop.json", &script(vec![turn(vec![text(ANSWER)])]));
    (env, daemon, model)
}

/// The client's JSON lines, after checking it exited 0.
fn lines(lang: &str, env: &Env, out: &Out) -> Vec<Value> {
    assert_eq!(
        out.code,
        0,
        "the {lang} example client failed\nstdout:\n{}\nstderr:\n{}\ndaemon log (tail):\n{}",
        out.stdout,
        out.stderr,
        tail(&env.daemon_log_text(), 40)
    );
    out.stdout
        .lines()
        .map(|l| {
            serde_json::from_str(l).unwrap_or_else(|e| {
                panic!("the {lang} client printed a line that is not JSON ({e}): {l:?}")
            })
        })
        .collect()
}

fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// The lines of one step, in order.
fn step<'a>(lines: &'a [Value], name: &str) -> Vec<&'a Value> {
    lines.iter().filter(|l| l["step"] == name).collect()
}

/// The single line of a step that prints one.
fn one<'a>(lines: &'a [Value], name: &str) -> &'a Value {
    let found = step(lines, name);
    assert_eq!(found.len(), 1, "expected one {name:?} line in {lines:#?}");
    found[0]
}

/// What every client must have seen, and that the daemon agrees: returns
/// nothing, panics with the client's output on any difference.
fn assert_walkthrough(env: &Env, lines: &[Value]) {
    let health: Vec<(&str, &str)> = step(lines, "health")
        .iter()
        .map(|l| {
            (
                l["service"].as_str().unwrap(),
                l["status"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(health, [("", "SERVING"), (SERVICE, "SERVING")]);

    let services = one(lines, "reflection")["services"].as_array().unwrap();
    assert!(
        services.iter().any(|s| s == SERVICE),
        "reflection did not list {SERVICE}: {services:?}"
    );

    let id = one(lines, "create")["id"].as_str().unwrap().to_string();
    assert!(!id.is_empty(), "CreateAgent gave no id");

    let entries = step(lines, "entry");
    assert_eq!(entries[0]["seq"], 0, "attach from 0 starts with entry 0");
    assert_eq!(entries[0]["role"], "ROLE_USER");
    assert!(
        entries[0]["text"].as_str().unwrap().contains(PROMPT),
        "the first entry is the prompt: {:?}",
        entries[0]
    );
    let attach = one(lines, "attach");
    assert_eq!(attach["id"], id.as_str());
    assert_eq!(attach["status"], "AGENT_STATUS_COMPLETED", "{attach}");
    assert_eq!(attach["result"], ANSWER);
    assert!(
        attach["text"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t == ANSWER),
        "the attach stream carried the scripted text: {attach}"
    );

    let listed = one(lines, "list")["ids"].as_array().unwrap();
    assert!(
        listed.iter().any(|i| i == id.as_str()),
        "ListAgents did not list {id}: {listed:?}"
    );

    let unknown = one(lines, "get_unknown");
    assert_eq!(unknown["code"], "NOT_FOUND", "{unknown}");
    let message = unknown["message"].as_str().unwrap();
    assert!(
        message.contains("no agent matches"),
        "NOT_FOUND says what was not found: {message:?}"
    );

    assert_eq!(lines.last().unwrap()["step"], "done");

    let shown = env.show(&id);
    assert_eq!(shown["id"], id.as_str());
    assert_eq!(shown["status"], "completed");
    assert_eq!(shown["result"], ANSWER);
}

#[test]
fn python_client_with_default_grpcio_options_walks_through_the_api() {
    setup("python");
    let (env, _daemon, model) = world();
    let dir = client_dir("python");
    let client = dir.join("client.py");
    let out = run_bounded(
        180,
        &dir.join(".venv/bin/python"),
        &[
            client.to_str().unwrap(),
            "--socket",
            env.socket().to_str().unwrap(),
            "--model",
            &model,
            "--prompt",
            PROMPT,
        ],
        &env.project(),
    );
    assert_walkthrough(&env, &lines("python", &env, &out));
}

#[test]
fn node_client_with_default_grpc_js_options_walks_through_the_api() {
    setup("node");
    let (env, _daemon, model) = world();
    let client = client_dir("node").join("client.js");
    let out = run_bounded(
        180,
        Path::new("node"),
        &[
            client.to_str().unwrap(),
            "--socket",
            env.socket().to_str().unwrap(),
            "--model",
            &model,
            "--prompt",
            PROMPT,
        ],
        &env.project(),
    );
    assert_walkthrough(&env, &lines("node", &env, &out));
}
