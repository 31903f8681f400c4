//! Sessions against real servers. Failures to start use plain commands; the
//! rest use the Python fixture server (tests/mcp/server.py, on the official
//! `mcp` SDK) and are skipped, saying why, unless both are set:
//!
//! - `AGENTD_MCP_FIXTURE_PY`: a Python with the `mcp` package installed;
//! - `AGENTD_MCP_FIXTURE_SERVER`: the fixture's `server.py`.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::json;
use tokio::process::{Child, Command};

use super::*;

const START: Duration = Duration::from_secs(30);
const LONG: Duration = Duration::from_secs(60);

struct Fixture {
    python: PathBuf,
    server: PathBuf,
}

fn fixture(test: &str) -> Option<Fixture> {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    match (
        var("AGENTD_MCP_FIXTURE_PY"),
        var("AGENTD_MCP_FIXTURE_SERVER"),
    ) {
        (Some(python), Some(server)) => Some(Fixture {
            python: python.into(),
            server: server.into(),
        }),
        _ => {
            println!(
                "skipped: {test} needs AGENTD_MCP_FIXTURE_PY (a python with `mcp`) and \
                 AGENTD_MCP_FIXTURE_SERVER (tests/mcp/server.py)"
            );
            None
        }
    }
}

fn name(s: &str) -> ServerName {
    ServerName::parse(s).unwrap()
}

/// Starts `program args` with piped stdin and stdout, as the daemon does.
fn spawn(program: &Path, args: &[&str]) -> Child {
    Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap()
}

async fn connect(child: &mut Child, startup: Duration) -> Result<Session, McpError> {
    let stdout = child.stdout.take().unwrap();
    let stdin = child.stdin.take().unwrap();
    Session::over_stdio(name("fixture"), stdout, stdin, startup).await
}

async fn stdio_session(f: &Fixture) -> (Session, Child) {
    let mut child = spawn(&f.python, &[f.server.to_str().unwrap(), "stdio"]);
    let session = connect(&mut child, START).await.unwrap();
    (session, child)
}

async fn call(session: &Session, tool: &str, args: serde_json::Value) -> CallOutput {
    session
        .call(tool, args, LONG, CancellationToken::new())
        .await
        .unwrap()
}

#[tokio::test]
async fn server_that_exits_at_once_fails_to_start() {
    let mut child = spawn(Path::new("/bin/sh"), &["-c", "exit 1"]);
    let e = connect(&mut child, START).await.unwrap_err();
    assert!(matches!(e, McpError::Start(_)), "{e:?}");
    assert!(
        e.to_string()
            .starts_with("MCP server `fixture` did not start"),
        "{e}"
    );
}

#[tokio::test]
async fn server_that_never_answers_times_out_starting() {
    let mut child = spawn(Path::new("/bin/sh"), &["-c", "exec sleep 30"]);
    let started = Instant::now();
    let e = connect(&mut child, Duration::from_millis(300))
        .await
        .unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(matches!(e, McpError::Start(_)), "{e:?}");
    assert!(e.to_string().contains("within 0.300 s"), "{e}");
}

#[tokio::test]
async fn http_session_needs_an_http_definition() {
    let def = ServerDef::new(
        name("local"),
        Transport::Stdio {
            command: "x".into(),
            args: vec![],
            env: Default::default(),
            cwd: None,
        },
    );
    let e = Session::over_http(&def, START).await.unwrap_err();
    assert!(matches!(e, McpError::Start(_)), "{e:?}");
}

#[tokio::test]
async fn stdio_server_lists_its_tools_and_answers_calls() {
    let Some(f) = fixture("stdio_server_lists_its_tools_and_answers_calls") else {
        return;
    };
    let (session, _child) = stdio_session(&f).await;
    let tools = session.list_tools().await.unwrap();
    let echo = tools.iter().find(|t| t.name == "echo").unwrap();
    assert_eq!(echo.wire_name, "mcp__fixture__echo");
    assert!(echo.read_only);
    assert_eq!(
        echo.spec_json()["input_schema"]["required"],
        json!(["text"])
    );
    let write = tools.iter().find(|t| t.name == "write_file").unwrap();
    assert!(!write.read_only);
    for tool in ["crash", "sleep", "image", "env", "link", "structured"] {
        assert!(tools.iter().any(|t| t.name == tool), "{tool}");
    }

    let out = call(&session, "echo", json!({"text": "hello"})).await;
    assert_eq!(
        out,
        CallOutput {
            content: vec![json!({"type": "text", "text": "hello"})],
            is_error: false,
        }
    );
    let failed = call(
        &session,
        "write_file",
        json!({"path": "/nonexistent/x", "content": "a"}),
    )
    .await;
    assert!(failed.is_error);
    assert!(failed.text().contains("cannot write"), "{}", failed.text());
    assert!(!session.is_closed());
    session.close().await;
}

#[tokio::test]
async fn results_keep_images_links_and_structured_content() {
    let Some(f) = fixture("results_keep_images_links_and_structured_content") else {
        return;
    };
    let (session, _child) = stdio_session(&f).await;
    let image = call(&session, "image", json!({})).await;
    assert_eq!(image.content[0]["type"], "image");
    assert_eq!(image.content[0]["source"]["type"], "base64");
    assert_eq!(image.content[0]["source"]["media_type"], "image/png");
    assert!(
        image.content[0]["source"]["data"]
            .as_str()
            .unwrap()
            .starts_with("iVBORw0KGgo")
    );
    assert_eq!(
        image.content[1],
        json!({"type": "text", "text": "a 1x1 red PNG"})
    );

    let link = call(&session, "link", json!({})).await;
    let text = link.text();
    assert!(
        text.contains("uri: file:///tmp/x.txt") && text.contains("name: x.txt"),
        "{text}"
    );

    let structured = call(&session, "structured", json!({})).await;
    assert_eq!(structured.content.len(), 1, "{:?}", structured.content);
    let value: serde_json::Value = serde_json::from_str(&structured.text()).unwrap();
    assert_eq!(value, json!({"answer": 42}));
}

#[tokio::test]
async fn server_crashing_mid_call_closes_the_session() {
    let Some(f) = fixture("server_crashing_mid_call_closes_the_session") else {
        return;
    };
    let (session, mut child) = stdio_session(&f).await;
    let started = Instant::now();
    let e = session
        .call("crash", json!({}), LONG, CancellationToken::new())
        .await
        .unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert!(matches!(e, McpError::Closed(_)), "{e:?}");
    assert!(
        e.to_string().contains("`fixture` closed the connection"),
        "{e}"
    );
    assert_eq!(child.wait().await.unwrap().code(), Some(3));
    let again = session
        .call("echo", json!({"text": "x"}), LONG, CancellationToken::new())
        .await
        .unwrap_err();
    assert!(matches!(again, McpError::Closed(_)), "{again:?}");
    assert!(session.is_closed());
}

/// The fixture behind `tee`, so the test can read what the client sent.
async fn recorded_session(f: &Fixture, log: &Path) -> (Session, Child) {
    let script = format!(
        "tee '{}' | exec '{}' '{}' stdio",
        log.display(),
        f.python.display(),
        f.server.display()
    );
    let mut child = spawn(Path::new("/bin/sh"), &["-c", &script]);
    let session = connect(&mut child, START).await.unwrap();
    (session, child)
}

async fn wait_for_line(log: &Path, needle: &str) -> bool {
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        let sent = std::fs::read_to_string(log).unwrap_or_default();
        if sent.lines().any(|l| l.contains(needle)) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

#[tokio::test]
async fn cancelled_call_returns_at_once_and_tells_the_server() {
    let Some(f) = fixture("cancelled_call_returns_at_once_and_tells_the_server") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("sent.jsonl");
    let (session, _child) = recorded_session(&f, &log).await;
    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        trigger.cancel();
    });
    let started = Instant::now();
    let e = session
        .call("sleep", json!({"seconds": 30}), LONG, cancel)
        .await
        .unwrap_err();
    assert!(matches!(e, McpError::Cancelled), "{e:?}");
    assert!(
        started.elapsed() < Duration::from_millis(1300),
        "{:?}",
        started.elapsed()
    );
    assert!(wait_for_line(&log, "notifications/cancelled").await);

    // The session goes on.
    let out = call(&session, "echo", json!({"text": "after"})).await;
    assert_eq!(out.text(), "after");
}

#[tokio::test]
async fn call_past_its_timeout_is_cancelled() {
    let Some(f) = fixture("call_past_its_timeout_is_cancelled") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("sent.jsonl");
    let (session, _child) = recorded_session(&f, &log).await;
    let started = Instant::now();
    let timeout = Duration::from_millis(500);
    let e = session
        .call(
            "sleep",
            json!({"seconds": 30}),
            timeout,
            CancellationToken::new(),
        )
        .await
        .unwrap_err();
    assert!(matches!(e, McpError::Timeout(t) if t == timeout), "{e:?}");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    assert!(wait_for_line(&log, "notifications/cancelled").await);
    assert_eq!(
        call(&session, "echo", json!({"text": "ok"})).await.text(),
        "ok"
    );
}

#[tokio::test]
async fn arguments_must_be_an_object() {
    let Some(f) = fixture("arguments_must_be_an_object") else {
        return;
    };
    let (session, _child) = stdio_session(&f).await;
    let e = session
        .call("echo", json!(["hello"]), LONG, CancellationToken::new())
        .await
        .unwrap_err();
    assert!(matches!(e, McpError::Tool(_)), "{e:?}");
    assert!(e.to_string().contains("not an array"), "{e}");
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Connects to a server just spawned: it needs a moment to listen, and a
/// refused connection fails fast.
async fn http_session(def: &ServerDef) -> Session {
    let deadline = Instant::now() + START;
    loop {
        match Session::over_http(def, Duration::from_secs(5)).await {
            Ok(session) => return session,
            Err(_) if Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(e) => panic!("{e}"),
        }
    }
}

#[tokio::test]
async fn http_server_lists_its_tools_and_answers_calls() {
    let Some(f) = fixture("http_server_lists_its_tools_and_answers_calls") else {
        return;
    };
    let port = free_port().to_string();
    let _server = spawn(
        &f.python,
        &[f.server.to_str().unwrap(), "http", "--port", &port],
    );
    let def = ServerDef::new(
        name("web"),
        Transport::Http {
            url: format!("http://127.0.0.1:{port}/mcp"),
            headers: [("X-Test".to_string(), "1".to_string())].into(),
        },
    );
    let session = http_session(&def).await;
    let tools = session.list_tools().await.unwrap();
    assert!(tools.iter().any(|t| t.wire_name == "mcp__web__echo"));
    let out = call(&session, "echo", json!({"text": "over http"})).await;
    assert_eq!(out.text(), "over http");

    let cancel = CancellationToken::new();
    let trigger = cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        trigger.cancel();
    });
    let started = Instant::now();
    let e = session
        .call("sleep", json!({"seconds": 30}), LONG, cancel)
        .await
        .unwrap_err();
    assert!(matches!(e, McpError::Cancelled), "{e:?}");
    assert!(started.elapsed() < Duration::from_millis(1300));
    assert_eq!(
        call(&session, "echo", json!({"text": "still"}))
            .await
            .text(),
        "still"
    );
    session.close().await;
}

#[tokio::test]
async fn http_server_dying_mid_call_ends_the_call() {
    let Some(f) = fixture("http_server_dying_mid_call_ends_the_call") else {
        return;
    };
    let port = free_port().to_string();
    let mut server = spawn(
        &f.python,
        &[f.server.to_str().unwrap(), "http", "--port", &port],
    );
    let def = ServerDef::new(
        name("web"),
        Transport::Http {
            url: format!("http://127.0.0.1:{port}/mcp"),
            headers: Default::default(),
        },
    );
    let session = http_session(&def).await;
    let killer = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(500)).await;
        server.kill().await.unwrap();
    });
    let started = Instant::now();
    let e = session
        .call(
            "sleep",
            json!({"seconds": 30}),
            LONG,
            CancellationToken::new(),
        )
        .await
        .unwrap_err();
    killer.await.unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert!(matches!(e, McpError::Closed(_)), "{e:?}");
}
