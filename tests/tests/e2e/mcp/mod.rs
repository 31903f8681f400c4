//! MCP servers (DESIGN §18): the servers in config.toml are listed into a
//! new agent's frozen tools array and called when the model asks — real
//! servers no one here wrote (the Python SDK's, server-everything from
//! npm) over stdio and streamable HTTP, the real daemon and agentctl,
//! the mock model; assertions on what the model was sent.

#![allow(clippy::unwrap_used)] // Tests: a panic is the failure report.

pub(crate) mod common;
pub(crate) mod requested;
pub(crate) mod shared;
pub(crate) mod trust;
pub(crate) mod types;

use std::path::Path;

use agentd_e2e::mcp_fixtures::{self, KillOnDrop, McpFixtures};
use agentd_e2e::mock::{MODEL, MockServer, RecordedRequest, Reply};
use agentd_e2e::{Env, tool_results};
use serde_json::{Value, json};

use crate::mcp::common::{call, fixtures, quoted, starts};

/// `[mcp_servers.NAME]` for a stdio command, with `extra` lines.
fn stdio_server(name: &str, (command, args): (String, Vec<String>), extra: &str) -> String {
    let args: Vec<String> = args.iter().map(|a| quoted(a)).collect();
    format!(
        "[mcp_servers.{name}]\ncommand = {}\nargs = [{}]\n{extra}\n",
        quoted(&command),
        args.join(", ")
    )
}

/// The tool_result blocks of the request's last message.
fn last_results(r: &RecordedRequest) -> Vec<Value> {
    r.messages()
        .last()
        .and_then(|m| m["content"].as_array())
        .into_iter()
        .flatten()
        .filter(|b| b["type"] == "tool_result")
        .cloned()
        .collect()
}

/// config.toml with the fixture as server `fx`, logging its starts (and
/// the cancellations it receives) to `name` in the workspace, where the
/// sandboxed server may write; the log's path.
fn logged_fixture(env: &Env, fx: &McpFixtures, name: &str) -> std::path::PathBuf {
    let log = env.project().join(name);
    let extra = format!(
        "env = {{ MCP_FIXTURE_LOG = {} }}",
        quoted(&log.display().to_string())
    );
    env.write_config(&stdio_server("fx", fx.python_stdio_command(), &extra));
    log
}

#[test]
fn a_stdio_servers_tools_are_offered_frozen_and_their_results_reach_the_model() {
    let fx = fixtures();
    let mock = MockServer::start();
    let env = Env::with_mock(&mock);
    env.write_config(&stdio_server("fx", fx.python_stdio_command(), ""));
    let _daemon = env.start_daemon();
    mock.enqueue_all([
        call("c1", "mcp__fx__echo", json!({"text": "hello from mcp"})),
        call("c2", "mcp__fx__image", json!({})),
        call("c3", "mcp__fx__env", json!({"name": "ANTHROPIC_API_KEY"})),
        call("c4", "mcp__fx__link", json!({})),
        Reply::text("all done"),
    ]);
    let out = env.ctl(&["run", "--model", MODEL, "--name", "m", "use the tools"]);
    out.expect_code(0);
    assert_eq!(
        out.stdout.lines().last(),
        Some("all done"),
        "{}",
        out.stdout
    );
    let requests = mock.requests();
    assert_eq!(requests.len(), 5);

    // Offered after the built-in tools, with the server's description
    // and schema, and the array is the same bytes in every request.
    let tools = requests[0].json["tools"].as_array().unwrap().clone();
    let names = requests[0].tool_names();
    let first_mcp = names.iter().position(|n| n.starts_with("mcp__")).unwrap();
    assert!(
        names[..first_mcp].contains(&"Bash".to_string()),
        "{names:?}"
    );
    for wanted in [
        "mcp__fx__echo",
        "mcp__fx__write_file",
        "mcp__fx__crash",
        "mcp__fx__image",
    ] {
        assert!(names.contains(&wanted.to_string()), "{names:?}");
    }
    let echo = tools.iter().find(|t| t["name"] == "mcp__fx__echo").unwrap();
    assert!(
        echo["description"].as_str().unwrap().contains("unchanged"),
        "{echo}"
    );
    assert_eq!(
        echo["input_schema"]["properties"]["text"]["type"], "string",
        "{echo}"
    );
    for r in &requests[1..] {
        assert_eq!(
            r.json["tools"], requests[0].json["tools"],
            "the tools array is frozen"
        );
    }

    let (is_error, echoed) = tool_results(requests[1].messages()).pop().unwrap();
    assert_eq!((is_error, echoed.as_str()), (false, "hello from mcp"));
    let image = last_results(&requests[2]);
    let blocks = image[0]["content"].as_array().unwrap();
    let img = blocks
        .iter()
        .find(|b| b["type"] == "image")
        .expect("an image block");
    assert_eq!(img["source"]["type"], "base64");
    assert_eq!(img["source"]["media_type"], "image/png");
    assert!(
        img["source"]["data"]
            .as_str()
            .unwrap()
            .starts_with("iVBORw0KGgo"),
        "{img}"
    );
    assert!(
        blocks.iter().any(|b| b["text"] == "a 1x1 red PNG"),
        "{blocks:?}"
    );
    // No provider key in a server's environment.
    let (_, key) = tool_results(requests[3].messages()).pop().unwrap();
    assert_eq!(key, "<unset>");
    let (is_error, link) = tool_results(requests[4].messages()).pop().unwrap();
    assert!(!is_error && link.contains("file:///tmp/x.txt"), "{link}");

    // `show` lists the agent's server and how many tools it gave.
    let shown = env.show("m");
    let servers = shown["mcp_servers"]
        .as_array()
        .expect("mcp_servers in show --json");
    assert_eq!(servers.len(), 1, "{shown}");
    assert_eq!(servers[0]["name"], "fx");
    assert!(servers[0]["tools"].as_u64().unwrap() >= 8, "{shown}");
    let text = env.ctl(&["show", "m"]).expect_code(0).stdout.clone();
    let line = text
        .lines()
        .find(|l| l.starts_with("mcp servers:"))
        .expect(&text);
    assert!(
        line.contains("fx (stdio)") && line.contains("tools"),
        "{text}"
    );

    // `mcp list` starts the server now and shows its tools.
    let listed = env.ctl(&["mcp", "list", "--json"]).expect_code(0).json();
    let fx = &listed[0];
    assert_eq!(
        (fx["name"].as_str(), fx["state"].as_str()),
        (Some("fx"), Some("ready")),
        "{listed}"
    );
    assert_eq!(fx["source"], "config");
    assert_eq!(fx["sandboxed"], true);
    let tools: Vec<&str> = fx["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(tools.contains(&"mcp__fx__echo"), "{listed}");
}

#[test]
fn a_server_that_dies_mid_call_gives_an_error_result_and_is_started_again() {
    let fx = fixtures();
    let mock = MockServer::start();
    let env = Env::with_mock(&mock);
    let log = logged_fixture(&env, &fx, "starts.log");
    let _daemon = env.start_daemon();
    mock.enqueue_all([
        call("c1", "mcp__fx__crash", json!({})),
        call("c2", "mcp__fx__echo", json!({"text": "back"})),
        Reply::text("survived"),
    ]);
    let out = env.ctl(&["run", "--model", MODEL, "--name", "crasher", "crash it"]);
    out.expect_code(0);
    assert_eq!(
        out.stdout.lines().last(),
        Some("survived"),
        "{}",
        out.stdout
    );
    let requests = mock.requests();
    let (is_error, text) = tool_results(requests[1].messages()).pop().unwrap();
    assert!(is_error, "{text}");
    assert!(text.contains("MCP server fx"), "{text}");
    let (is_error, text) = tool_results(requests[2].messages()).pop().unwrap();
    assert_eq!((is_error, text.as_str()), (false, "back"));
    // Listed at creation, started for the crash, and again after it.
    assert_eq!(starts(&log), 3, "{:?}", std::fs::read_to_string(&log));
    assert_eq!(env.show("crasher")["status"], "completed");
}

#[test]
fn a_stdio_server_runs_in_its_agents_sandbox_unless_its_definition_says_off() {
    let fx = fixtures();
    let mock = MockServer::start();
    let env = Env::with_mock(&mock);
    let outside = env.root.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let config = stdio_server("fx", fx.python_stdio_command(), "")
        + &stdio_server("free", fx.python_stdio_command(), "sandbox = \"off\"");
    env.write_config(&config);
    let _daemon = env.start_daemon();
    let inside = env.project().join("inside.txt");
    let escaped = outside.join("escaped.txt");
    let freed = outside.join("freed.txt");
    let write = |id: &str, server: &str, path: &Path| {
        call(
            id,
            &format!("mcp__{server}__write_file"),
            json!({"path": path.display().to_string(), "content": "x"}),
        )
    };
    mock.enqueue_all([
        write("w1", "fx", &inside),
        write("w2", "fx", &escaped),
        write("w3", "free", &freed),
        Reply::text("wrote"),
    ]);
    env.ctl(&["run", "--model", MODEL, "--name", "s", "write"])
        .expect_code(0);
    let requests = mock.requests();
    let result = |i: usize| tool_results(requests[i].messages()).pop().unwrap();
    assert!(!result(1).0, "{:?}", result(1));
    assert!(inside.exists(), "the workspace is writable");
    let (is_error, text) = result(2);
    assert!(is_error, "{text}");
    assert!(
        !escaped.exists(),
        "the sandbox kept the server from writing outside"
    );
    assert!(!result(3).0, "{:?}", result(3));
    assert!(freed.exists(), "sandbox = \"off\" is honoured");
}

#[test]
fn no_network_applies_to_an_agents_stdio_server() {
    let fx = fixtures();
    let mock = MockServer::start();
    let env = Env::with_mock(&mock);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    env.write_config(&stdio_server("fx", fx.python_stdio_command(), ""));
    let _daemon = env.start_daemon();
    let connect = || {
        call(
            "n1",
            "mcp__fx__connect",
            json!({"host": "127.0.0.1", "port": port}),
        )
    };
    let run = |name: &str, extra: &[&str]| {
        let before = mock.requests().len();
        mock.enqueue_all([connect(), Reply::text("done")]);
        let mut args = vec!["run", "--model", MODEL, "--name", name];
        args.extend_from_slice(extra);
        args.push("connect");
        env.ctl(&args).expect_code(0);
        tool_results(mock.requests()[before + 1].messages())
            .pop()
            .unwrap()
    };
    let (is_error, text) = run("offline", &["--no-network"]);
    assert!(is_error && text.contains("cannot connect"), "{text}");
    let (is_error, text) = run("online", &["--network", "full"]);
    assert_eq!((is_error, text.as_str()), (false, "connected"));
}

#[test]
fn default_mode_asks_before_an_mcp_tool_unless_its_server_marks_it_read_only() {
    let fx = fixtures();
    let mock = MockServer::start();
    let env = Env::with_mock(&mock);
    env.write_config(&stdio_server("fx", fx.python_stdio_command(), ""));
    let _daemon = env.start_daemon();
    mock.enqueue_all([
        call("c1", "mcp__fx__echo", json!({"text": "no ask"})),
        call(
            "c2",
            "mcp__fx__write_file",
            json!({"path": "f.txt", "content": "x"}),
        ),
        Reply::text("done"),
    ]);
    let id = env.start_agent(&[
        "--model",
        MODEL,
        "--name",
        "asker",
        "--permission-mode",
        "default",
        "go",
    ]);
    let waiting = env.wait_for_agent(&id, "waiting for permission", |a| a["status"] == "waiting");
    let why = waiting["waiting_for"].as_str().unwrap();
    assert!(
        why.starts_with("permission to run mcp__fx__write_file"),
        "{why}"
    );
    // The read-only call ran without asking.
    let (is_error, text) = tool_results(mock.requests()[1].messages()).pop().unwrap();
    assert_eq!((is_error, text.as_str()), (false, "no ask"));
    assert!(
        !env.project().join("f.txt").exists(),
        "nothing ran before the answer"
    );
    env.ctl(&["stop", &id]).expect_code(0);
}

#[test]
fn a_streamable_http_server_and_server_everything_are_called_alike() {
    let fx = fixtures();
    let port = mcp_fixtures::free_port();
    let _http = KillOnDrop(fx.spawn_python_http(port));
    let mock = MockServer::start();
    let env = Env::with_mock(&mock);
    let config = format!(
        "[mcp_servers.web]\nurl = {}\n\n{}",
        quoted(&mcp_fixtures::mcp_url(port)),
        stdio_server("everything", fx.everything_stdio_command(), "")
    );
    env.write_config(&config);
    let _daemon = env.start_daemon();
    mock.enqueue_all([
        call("h1", "mcp__web__echo", json!({"text": "over http"})),
        call(
            "e1",
            "mcp__everything__echo",
            json!({"message": "from everything"}),
        ),
        Reply::text("both"),
    ]);
    env.ctl(&["run", "--model", MODEL, "--name", "h", "call both"])
        .expect_code(0);
    let requests = mock.requests();
    let names = requests[0].tool_names();
    assert!(names.contains(&"mcp__web__echo".to_string()), "{names:?}");
    assert!(
        names.contains(&"mcp__everything__echo".to_string()),
        "{names:?}"
    );
    let (is_error, text) = tool_results(requests[1].messages()).pop().unwrap();
    assert_eq!((is_error, text.as_str()), (false, "over http"));
    let (is_error, text) = tool_results(requests[2].messages()).pop().unwrap();
    assert!(!is_error && text.contains("from everything"), "{text}");
}

#[test]
fn a_server_that_cannot_start_offers_nothing_and_fails_no_agent() {
    let mock = MockServer::start();
    let env = Env::with_mock(&mock);
    env.write_config(
        "[mcp_servers.gone]\ncommand = \"/nonexistent/agentd-mcp-server\"\nstartup_timeout_secs = 5\n",
    );
    let _daemon = env.start_daemon();
    mock.enqueue_all([
        call("g1", "mcp__gone__anything", json!({})),
        Reply::text("carried on"),
    ]);
    let out = env.ctl(&["run", "--model", MODEL, "--name", "g", "try"]);
    out.expect_code(0);
    let requests = mock.requests();
    assert!(
        !requests[0]
            .tool_names()
            .iter()
            .any(|n| n.starts_with("mcp__"))
    );
    let (is_error, text) = tool_results(requests[1].messages()).pop().unwrap();
    assert!(is_error && text.contains("No such tool"), "{text}");
    let shown = env.show("g");
    let server = &shown["mcp_servers"][0];
    assert_eq!(server["name"], "gone");
    assert!(
        server["error"]
            .as_str()
            .unwrap()
            .contains("could not be started"),
        "{shown}"
    );
    let listed = env.ctl(&["mcp", "list"]).expect_code(0).stdout.clone();
    assert!(
        listed.contains("gone (config, stdio): /nonexistent/agentd-mcp-server"),
        "{listed}"
    );
    assert!(listed.contains("failed · "), "{listed}");
    // `doctor` checks it too (a warning: agents work without it).
    let doctor = env.ctl(&["doctor", "--json"]).json();
    let checks = doctor["checks"].as_array().expect("checks");
    let mcp = checks
        .iter()
        .find(|c| c["check"] == "mcp server")
        .unwrap_or_else(|| panic!("{doctor}"));
    assert_eq!(mcp["level"], "warn", "{mcp}");
    assert!(
        mcp["detail"].as_str().unwrap().starts_with("gone: "),
        "{mcp}"
    );
}

#[test]
fn a_call_cut_by_a_daemon_sigkill_is_answered_and_the_server_runs_again_after_the_restart() {
    let fx = fixtures();
    let mock = MockServer::start();
    let env = Env::with_mock(&mock);
    let log = logged_fixture(&env, &fx, "starts.log");
    let daemon = env.start_daemon();
    mock.enqueue_all([
        call("s1", "mcp__fx__sleep", json!({"seconds": 60})),
        call("e1", "mcp__fx__echo", json!({"text": "after the restart"})),
        Reply::text("resumed"),
    ]);
    let id = env.run_background(MODEL, "k", "sleep then echo");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while starts(&log) < 2 {
        assert!(
            std::time::Instant::now() < deadline,
            "the server never started for the call"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    daemon.kill9();
    let _daemon = env.start_daemon();
    let done = env.wait_for_agent(&id, "completed", |a| a["status"] == "completed");
    assert_eq!(done["result"], "resumed");
    let requests = mock.requests();
    let (is_error, text) = tool_results(requests[1].messages()).pop().unwrap();
    assert!(is_error && text.contains("agentd was restarted"), "{text}");
    let (is_error, text) = tool_results(requests[2].messages()).pop().unwrap();
    assert_eq!((is_error, text.as_str()), (false, "after the restart"));
    assert_eq!(starts(&log), 3, "listed, the sleep, then after the restart");
}

#[test]
fn a_fork_keeps_its_parents_mcp_tools_byte_for_byte_and_its_allowlist_narrows_them() {
    let fx = fixtures();
    let mock = MockServer::start();
    let env = Env::with_mock(&mock);
    env.write_config(&stdio_server("fx", fx.python_stdio_command(), ""));
    let _daemon = env.start_daemon();
    mock.enqueue(Reply::text("parent done"));
    env.ctl(&["run", "--model", MODEL, "--name", "parent", "hello"])
        .expect_code(0);
    mock.enqueue_all([
        call("f1", "mcp__fx__echo", json!({"text": "allowed"})),
        call(
            "f2",
            "mcp__fx__write_file",
            json!({"path": "no.txt", "content": "x"}),
        ),
        Reply::text("fork done"),
    ]);
    env.ctl(&[
        "fork",
        "parent",
        "use what you may",
        "--tools",
        "Read,mcp__fx__echo",
    ])
    .expect_code(0);
    let requests = mock.requests();
    assert_eq!(requests.len(), 4);
    assert_eq!(
        requests[1].json["tools"], requests[0].json["tools"],
        "the fork's tools array is its parent's, MCP tools included"
    );
    let (is_error, text) = tool_results(requests[2].messages()).pop().unwrap();
    assert_eq!((is_error, text.as_str()), (false, "allowed"));
    let (is_error, text) = tool_results(requests[3].messages()).pop().unwrap();
    assert!(is_error, "{text}");
    assert!(
        text.contains("mcp__fx__write_file is not available to this agent"),
        "{text}"
    );
    assert!(!env.project().join("no.txt").exists());
}

#[test]
fn a_long_result_is_shortened_like_bashs_and_the_full_text_kept_where_the_agent_can_read_it() {
    let fx = fixtures();
    let mock = MockServer::start();
    let env = Env::with_mock(&mock);
    env.write_config(&stdio_server("fx", fx.python_stdio_command(), ""));
    let _daemon = env.start_daemon();
    let long: String = (0..20_000).map(|i| format!("{i:05}")).collect();
    mock.enqueue(call("l1", "mcp__fx__echo", json!({"text": long})));
    // While the agent runs, the file the note names holds the whole text.
    let seen = std::sync::Arc::new(std::sync::Mutex::new(None));
    let kept = seen.clone();
    mock.respond_with(move |r| {
        let (_, text) = tool_results(r.messages()).pop()?;
        let path = text
            .split(" is in ")
            .nth(1)?
            .trim_end_matches(']')
            .trim()
            .to_string();
        *kept.lock().unwrap() = Some((text.chars().count(), std::fs::read_to_string(path).ok()));
        Some(Reply::text("read it"))
    });
    env.ctl(&["run", "--model", MODEL, "--name", "longer", "echo a lot"])
        .expect_code(0);
    let (shown, full) = seen
        .lock()
        .unwrap()
        .clone()
        .expect("the result named a file");
    assert!(shown < 40_000, "the model was shown {shown} characters");
    assert_eq!(
        full.as_deref(),
        Some(long.as_str()),
        "the file holds the whole text"
    );
}

/// The pids the fixture's start log names, in order.
fn started_pids(log: &Path) -> Vec<i32> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.strip_prefix("started pid=")?.trim().parse().ok())
        .collect()
}

#[test]
fn mcp_restart_ends_a_running_agents_server_and_its_next_call_starts_it_again() {
    let fx = fixtures();
    let mock = MockServer::start();
    let env = Env::with_mock(&mock);
    let log = logged_fixture(&env, &fx, "starts.log");
    let _daemon = env.start_daemon();
    mock.enqueue_all([
        call("r1", "mcp__fx__echo", json!({"text": "first"})),
        Reply::tool(
            "w",
            "Bash",
            json!({"command": "while [ ! -e go ]; do sleep 0.05; done"}),
        ),
        call("r2", "mcp__fx__echo", json!({"text": "second"})),
        Reply::text("restarted"),
    ]);
    let id = env.run_background(MODEL, "restarter", "echo twice");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while mock.requests().len() < 2 {
        assert!(
            std::time::Instant::now() < deadline,
            "the first call never ran"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let pids = started_pids(&log);
    assert_eq!(
        pids.len(),
        2,
        "listed at creation, then started for the call"
    );
    let out = env.ctl(&["mcp", "restart", "fx"]);
    out.expect_code(0);
    assert!(
        out.stdout.contains("1 running server(s) ended"),
        "{}",
        out.stdout
    );
    std::fs::write(env.project().join("go"), "").unwrap();
    let done = env.wait_for_agent(&id, "completed", |a| a["status"] == "completed");
    assert_eq!(done["result"], "restarted");
    let (is_error, text) = tool_results(mock.requests()[3].messages()).pop().unwrap();
    assert_eq!((is_error, text.as_str()), (false, "second"));
    assert_eq!(
        started_pids(&log).len(),
        3,
        "started again for the next call"
    );
    // Bad names: the right exit codes.
    env.ctl(&["mcp", "restart", "nosuch"]).expect_code(1);
    let bad = env.ctl(&["mcp", "restart", "a b"]);
    assert_ne!(bad.code, 0);
}

/// The lines of the fixture's log that record a `notifications/cancelled`.
fn cancellations(log: &Path) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.starts_with("cancelled"))
        .map(str::to_string)
        .collect()
}

/// Waits until the fixture has started `n` times (the listing at creation
/// counts one), then a moment for the call to reach it.
fn wait_for_starts(log: &Path, n: usize) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while starts(log) < n {
        assert!(
            std::time::Instant::now() < deadline,
            "the server never started for the call: {:?}",
            std::fs::read_to_string(log)
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    std::thread::sleep(std::time::Duration::from_millis(500));
}

/// Waits, at most 5 s, for the fixture to log its `n`th cancellation.
fn wait_for_cancellations(log: &Path, n: usize) -> Vec<String> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let seen = cancellations(log);
        if seen.len() >= n || std::time::Instant::now() > deadline {
            return seen;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

#[test]
fn interrupting_or_cancelling_during_an_mcp_call_cancels_it_on_the_server_and_stops_at_once() {
    let fx = fixtures();
    let mock = MockServer::start();
    let env = Env::with_mock(&mock);
    let log = logged_fixture(&env, &fx, "fixture.log");
    let _daemon = env.start_daemon();
    mock.enqueue_all([
        call("s1", "mcp__fx__sleep", json!({"seconds": 60})),
        call("s2", "mcp__fx__sleep", json!({"seconds": 60})),
    ]);
    let id = env.run_background(MODEL, "sleeper", "sleep a minute");
    wait_for_starts(&log, 2);

    // Interrupt: paused within seconds, the call answered as cut short, the
    // server told to cancel it.
    let started = std::time::Instant::now();
    let out = env.ctl(&["interrupt", "sleeper"]);
    out.expect_code(0);
    assert!(
        started.elapsed() < std::time::Duration::from_secs(5),
        "the interrupt took {:?}",
        started.elapsed()
    );
    assert_eq!(env.show(&id)["status"], "paused");
    let transcript = env.transcript(&id);
    let last = transcript.last().unwrap();
    let result = &last["content"][0];
    assert_eq!(
        (result["type"].as_str(), result["tool_use_id"].as_str()),
        (Some("tool_result"), Some("s1")),
        "{last}"
    );
    assert_eq!(result["is_error"], true, "{result}");
    assert!(
        result["content"]
            .to_string()
            .contains("interrupted while this mcp__fx__sleep call ran"),
        "{result}"
    );
    let seen = wait_for_cancellations(&log, 1);
    assert_eq!(seen.len(), 1, "the server heard of the interrupt: {seen:?}");

    // Continued, it calls again; a cancel cuts that call short the same way.
    env.ctl(&["send", "sleeper", "once more"]).expect_code(0);
    wait_for_starts(&log, 3);
    let started = std::time::Instant::now();
    env.ctl(&["stop", "sleeper"]).expect_code(0);
    let stopped = env.wait_for_agent(&id, "cancelled", |a| a["status"] == "cancelled");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(5),
        "the cancel took {:?}",
        started.elapsed()
    );
    assert_eq!(stopped["status"], "cancelled");
    let seen = wait_for_cancellations(&log, 2);
    assert_eq!(seen.len(), 2, "the server heard of the cancel: {seen:?}");
    // Neither sleep ran to its end: the model was sent no result of one.
    assert_eq!(mock.requests().len(), 2);
}
