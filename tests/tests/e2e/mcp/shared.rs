//! MCP servers shared between running agents (DESIGN §18): agents that
//! would run the same server alike (definition, working directory,
//! confinement) share one process, which ends when the last of them ends;
//! `shared = false`, or a different confinement, gets a process of its own.
//! The fixture's `instance` tool returns its process's random id, which
//! tells processes apart even in different PID namespaces. Real daemon and
//! agentctl, the Python SDK's server, the mock model.

#![allow(clippy::unwrap_used)] // Tests: a panic is the failure report.

use std::path::Path;
use std::time::{Duration, Instant};

use agentd_e2e::mcp_fixtures::McpFixtures;
use agentd_e2e::mock::{MODEL, MockServer, Reply, n_messages, prompt_of};
use agentd_e2e::{Env, tool_results};
use serde_json::json;

use super::common::{call, fixtures, quoted};

/// `[mcp_servers.NAME]` running the fixture over stdio, logging to `log`.
fn server(fx: &McpFixtures, name: &str, log: &Path, extra: &str) -> String {
    let (command, args) = fx.python_stdio_command();
    let args: Vec<String> = args.iter().map(|a| quoted(a)).collect();
    format!(
        "[mcp_servers.{name}]\ncommand = {}\nargs = [{}]\nenv = {{ MCP_FIXTURE_LOG = {} }}\n{extra}\n",
        quoted(&command),
        args.join(", "),
        quoted(&log.display().to_string())
    )
}

/// The model: an agent whose prompt is `hold S …` asks server S for its
/// instance, then waits (in Bash) until the file `release` exists; one
/// whose prompt is `join S …` asks for the instance and ends.
fn script(mock: &MockServer) {
    mock.respond_with(|r| {
        let prompt = prompt_of(r);
        let mut words = prompt.split_whitespace();
        let (role, server) = (words.next()?, words.next()?);
        let instance = || call("i1", &format!("mcp__{server}__instance"), json!({}));
        match (role, n_messages(r)) {
            (_, 1) => Some(instance()),
            ("hold", 3) => Some(Reply::tool(
                "w1",
                "Bash",
                json!({"command": "while [ ! -e release ]; do sleep 0.05; done"}),
            )),
            ("hold", 5) => Some(Reply::text("held")),
            ("join", 3) => Some(Reply::text("joined")),
            _ => None,
        }
    });
}

/// The instance the agent whose prompt is `prompt` was told, once it was.
fn instance_seen(mock: &MockServer, prompt: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let seen = mock
            .requests()
            .iter()
            .filter(|r| prompt_of(r) == prompt && n_messages(r) == 3)
            .find_map(|r| tool_results(r.messages()).pop());
        if let Some((is_error, text)) = seen {
            assert!(!is_error, "{prompt}: {text}");
            return text;
        }
        assert!(Instant::now() < deadline, "{prompt} never got its instance");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Starts a holder on `server`, runs a joiner beside it (with `flags`),
/// releases the holder; the two instances they saw.
fn hold_and_join(
    env: &Env,
    mock: &MockServer,
    server: &str,
    tag: &str,
    flags: &[&str],
) -> (String, String) {
    let _ = std::fs::remove_file(env.project().join("release"));
    let hold = format!("hold {server} {tag}");
    let join = format!("join {server} {tag}");
    let holder = env.run_background(MODEL, &format!("holder-{tag}"), &hold);
    let held = instance_seen(mock, &hold);
    let mut args = vec!["run", "--model", MODEL];
    args.extend_from_slice(flags);
    args.push(&join);
    env.ctl(&args).expect_code(0);
    let joined = instance_seen(mock, &join);
    std::fs::write(env.project().join("release"), "").unwrap();
    let done = env.wait_for_agent(&holder, "completed", |a| a["status"] == "completed");
    assert_eq!(done["result"], "held");
    (held, joined)
}

/// Waits until `log` says the server `instance` ended on its own.
fn wait_ended(log: &Path, instance: &str) {
    let line = format!("ended instance={instance}");
    let deadline = Instant::now() + Duration::from_secs(15);
    while !std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .any(|l| l == line)
    {
        assert!(
            Instant::now() < deadline,
            "{instance} did not end once no agent needed it: {}",
            std::fs::read_to_string(log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn agents_that_would_run_a_server_alike_share_one_process_until_the_last_ends() {
    let fx = fixtures();
    let mock = MockServer::start();
    let env = Env::with_mock(&mock);
    // In the workspace: the sandboxed server may write only there.
    let fx_log = env.project().join("fx.log");
    let solo_log = env.project().join("solo.log");
    env.write_config(
        &(server(&fx, "fx", &fx_log, "") + &server(&fx, "solo", &solo_log, "shared = false")),
    );
    let _daemon = env.start_daemon();
    script(&mock);

    // Same definition, directory and confinement: one process, which ends
    // once both agents have.
    let (held, joined) = hold_and_join(&env, &mock, "fx", "a", &[]);
    assert_eq!(held, joined, "the joiner reached the holder's server");
    wait_ended(&fx_log, &held);

    // `shared = false`: one each.
    let (held, joined) = hold_and_join(&env, &mock, "solo", "b", &[]);
    assert_ne!(
        held, joined,
        "a server that is not shared is each run's own"
    );
    wait_ended(&solo_log, &held);
    wait_ended(&solo_log, &joined);

    // Confined differently (no network): not the holder's.
    let (held, joined) = hold_and_join(&env, &mock, "fx", "c", &["--no-network"]);
    assert_ne!(held, joined, "a server confined otherwise is not shared");
    wait_ended(&fx_log, &held);
    wait_ended(&fx_log, &joined);
}
