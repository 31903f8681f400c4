//! The fixtures work: each server, driven as a client by hand (newline-
//! delimited JSON-RPC over stdio; POST /mcp over streamable HTTP), does what
//! the end-to-end tests will count on.

use std::io::{BufRead, BufReader, Write};
use std::process::{ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::Duration;

use serde_json::{Value, json};

use super::*;

const PROTOCOL: &str = "2025-06-18";
const READ_LIMIT: Duration = Duration::from_secs(30);

fn fixtures() -> McpFixtures {
    setup().unwrap_or_else(|e| panic!("MCP fixtures setup failed: {e}"))
}

fn initialize(id: u64) -> Value {
    json!({
        "jsonrpc": "2.0", "id": id, "method": "initialize",
        "params": {
            "protocolVersion": PROTOCOL,
            "capabilities": {},
            "clientInfo": {"name": "agentd-fixture-test", "version": "0"}
        }
    })
}

fn call(id: u64, tool: &str, arguments: Value) -> Value {
    json!({
        "jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": tool, "arguments": arguments}
    })
}

/// The result of a response, failing on an error response.
#[track_caller]
fn result_of(reply: &Value) -> &Value {
    assert!(
        reply.get("error").is_none() && reply["result"].is_object(),
        "expected a result: {reply}"
    );
    &reply["result"]
}

/// A tool result's text blocks, joined; fails when the call was an error.
#[track_caller]
fn ok_text(reply: &Value) -> String {
    let result = result_of(reply);
    assert_ne!(result["isError"], true, "the tool failed: {reply}");
    text_blocks(result)
}

fn text_blocks(result: &Value) -> String {
    result["content"]
        .as_array()
        .unwrap_or_else(|| panic!("no content in {result}"))
        .iter()
        .filter(|b| b["type"] == "text")
        .map(|b| b["text"].as_str().unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n")
}

/// A server run over stdio, spoken to by hand.
struct StdioClient {
    child: KillOnDrop,
    stdin: ChildStdin,
    lines: Receiver<String>,
    stderr: OutputTail,
    /// Messages read that were not the response waited for.
    other: Vec<Value>,
}

impl StdioClient {
    fn start((program, args): (String, Vec<String>), env: &[(&str, &str)]) -> StdioClient {
        let mut cmd = Command::new(&program);
        cmd.args(&args)
            .env_remove("FIXTURE_UNSET_PROBE")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {program} {args:?}: {e}"));
        let stdin = child.stdin.take().expect("stdin");
        let stdout = child.stdout.take().expect("stdout");
        let stderr = OutputTail::default();
        stderr.forward(child.stderr.take().expect("stderr"), program.clone());
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        StdioClient {
            child: KillOnDrop(child),
            stdin,
            lines,
            stderr,
            other: Vec::new(),
        }
    }

    fn send(&mut self, message: &Value) {
        writeln!(self.stdin, "{message}")
            .and_then(|()| self.stdin.flush())
            .unwrap_or_else(|e| panic!("write {message} to the server: {e}{}", self.said()));
    }

    /// Sends a request and reads until its response, keeping what else came.
    fn request(&mut self, message: &Value) -> Value {
        self.send(message);
        loop {
            let line = match self.lines.recv_timeout(READ_LIMIT) {
                Ok(line) => line,
                Err(e) => panic!("no response to {message} ({e}){}", self.said()),
            };
            let got: Value = serde_json::from_str(&line).unwrap_or_else(|e| {
                panic!("the server wrote a line that is not JSON ({e}): {line:?}")
            });
            if got.get("method").is_none() && got["id"] == message["id"] {
                return got;
            }
            self.other.push(got);
        }
    }

    /// initialize, then notifications/initialized: the initialize result.
    fn handshake(&mut self) -> Value {
        let reply = self.request(&initialize(1));
        let result = result_of(&reply).clone();
        assert_eq!(result["protocolVersion"], PROTOCOL, "{reply}");
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        result
    }

    fn tools(&mut self) -> Vec<Value> {
        let reply = self.request(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}));
        result_of(&reply)["tools"]
            .as_array()
            .unwrap_or_else(|| panic!("tools/list gave no tools: {reply}"))
            .clone()
    }

    fn said(&self) -> String {
        format!("\nthe server's stderr (tail):\n{}", self.stderr.text())
    }
}

fn tool<'a>(tools: &'a [Value], name: &str) -> &'a Value {
    tools
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("no tool {name} in {tools:#?}"))
}

#[test]
fn python_server_over_stdio_lists_its_tools_and_each_answers() {
    let fx = fixtures();
    let mut server = StdioClient::start(
        fx.python_stdio_command(),
        &[("FIXTURE_PROBE", "probe-value")],
    );
    let init = server.handshake();
    assert_eq!(init["serverInfo"]["name"], "agentd-mcp-fixture", "{init}");

    let tools = server.tools();
    let mut names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "connect",
            "crash",
            "echo",
            "env",
            "image",
            "instance",
            "link",
            "read_file",
            "sleep",
            "structured",
            "write_file"
        ]
    );
    for (name, read_only) in [("echo", true), ("env", true), ("write_file", false)] {
        assert_eq!(tool(&tools, name)["annotations"]["readOnlyHint"], read_only);
    }
    assert_eq!(tool(&tools, "sleep")["annotations"]["readOnlyHint"], false);
    assert_eq!(
        tool(&tools, "structured")["outputSchema"]["properties"]["answer"]["type"],
        "integer"
    );

    assert_eq!(
        ok_text(&server.request(&call(3, "echo", json!({"text": "hi there"})))),
        "hi there"
    );

    let reply = server.request(&call(4, "image", json!({})));
    let content = &result_of(&reply)["content"];
    assert_eq!(content[0]["type"], "image", "{reply}");
    assert_eq!(content[0]["mimeType"], "image/png");
    // The base64 of the PNG signature, \x89PNG\r\n\x1a\n.
    assert!(
        content[0]["data"]
            .as_str()
            .unwrap()
            .starts_with("iVBORw0KGgo"),
        "{reply}"
    );
    assert_eq!(content[1]["type"], "text", "{reply}");

    let reply = server.request(&call(5, "link", json!({})));
    let block = &result_of(&reply)["content"][0];
    assert_eq!(block["type"], "resource_link", "{reply}");
    assert_eq!(block["uri"], "file:///tmp/x.txt");
    assert_eq!(block["name"], "x.txt");

    let reply = server.request(&call(6, "structured", json!({})));
    assert_eq!(
        result_of(&reply)["structuredContent"],
        json!({"answer": 42})
    );

    let probe = |s: &mut StdioClient, id, name| {
        ok_text(&s.request(&call(id, "env", json!({"name": name}))))
    };
    assert_eq!(probe(&mut server, 7, "FIXTURE_PROBE"), "probe-value");
    assert_eq!(probe(&mut server, 8, "FIXTURE_UNSET_PROBE"), "<unset>");

    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), "held\n").unwrap();
    let path = file.path().display().to_string();
    assert_eq!(
        ok_text(&server.request(&call(9, "read_file", json!({"path": path})))),
        "held\n"
    );
}

#[test]
fn python_server_over_stdio_writes_sleeps_crashes_and_logs_its_start() {
    let fx = fixtures();
    let scratch = tempfile::tempdir().expect("tempdir");
    let log = scratch.path().join("starts.log");
    let mut server = StdioClient::start(
        fx.python_stdio_command(),
        &[("MCP_FIXTURE_LOG", log.to_str().expect("utf-8"))],
    );
    server.handshake();

    let target = scratch.path().join("written.txt");
    let reply = server.request(&call(
        9,
        "write_file",
        json!({"path": target.to_str().unwrap(), "content": "from the fixture"}),
    ));
    ok_text(&reply);
    assert_eq!(
        std::fs::read_to_string(&target).unwrap(),
        "from the fixture"
    );
    let nowhere = scratch.path().join("no/such/dir/file.txt");
    let reply = server.request(&call(
        10,
        "write_file",
        json!({"path": nowhere.to_str().unwrap(), "content": "x"}),
    ));
    assert_eq!(result_of(&reply)["isError"], true, "{reply}");
    let error = text_blocks(result_of(&reply));
    assert!(
        error.contains("cannot write") && error.contains("No such file or directory"),
        "write_file's error says what failed: {error:?}"
    );

    assert_eq!(
        ok_text(&server.request(&call(11, "sleep", json!({"seconds": 0.2})))),
        "slept"
    );

    // crash: the process exits with status 3 and never answers.
    let pid = server.child.0.id();
    server.send(&call(12, "crash", json!({})));
    let status = wait_exit(&mut server.child.0);
    assert_eq!(
        status.code(),
        Some(3),
        "crash exits with 3{}",
        server.said()
    );
    let starts = std::fs::read_to_string(&log).expect("MCP_FIXTURE_LOG was written");
    assert_eq!(starts, format!("started pid={pid}\n"));
}

fn wait_exit(child: &mut std::process::Child) -> std::process::ExitStatus {
    let deadline = Instant::now() + READ_LIMIT;
    loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            return status;
        }
        assert!(Instant::now() < deadline, "the server did not exit");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn everything_server_over_stdio_lists_its_tools_echoes_and_reports_progress() {
    let fx = fixtures();
    let mut server = StdioClient::start(fx.everything_stdio_command(), &[]);
    let init = server.handshake();
    assert_eq!(
        init["serverInfo"]["name"], "mcp-servers/everything",
        "{init}"
    );

    let tools = server.tools();
    for name in [
        "echo",
        "get-tiny-image",
        "trigger-long-running-operation",
        "get-env",
    ] {
        tool(&tools, name);
    }
    assert_eq!(
        ok_text(&server.request(&call(3, "echo", json!({"message": "hi"})))),
        "Echo: hi"
    );

    // Progress: one notification a step, then the result.
    let mut slow = call(
        4,
        "trigger-long-running-operation",
        json!({"duration": 0.3, "steps": 3}),
    );
    slow["params"]["_meta"] = json!({"progressToken": "fixture-progress"});
    server.other.clear();
    let done = ok_text(&server.request(&slow));
    assert!(done.contains("Long running operation completed"), "{done}");
    let progress: Vec<&Value> = server
        .other
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .map(|m| &m["params"]["progress"])
        .collect();
    assert_eq!(
        progress,
        [&json!(1), &json!(2), &json!(3)],
        "{:#?}",
        server.other
    );
}

/// What a POST to a streamable HTTP endpoint gave.
struct HttpReply {
    status: u16,
    session: Option<String>,
    /// The JSON-RPC messages of the body: one JSON body, or an SSE stream's
    /// `data:` lines.
    messages: Vec<Value>,
}

fn post(url: &str, session: Option<&str>, body: &Value) -> HttpReply {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let client = reqwest::Client::builder()
            .no_proxy()
            .timeout(READ_LIMIT)
            .build()
            .expect("HTTP client");
        let mut req = client
            .post(url)
            .header("accept", "application/json, text/event-stream")
            .json(body);
        if let Some(id) = session {
            req = req
                .header("mcp-session-id", id)
                .header("mcp-protocol-version", PROTOCOL);
        }
        let reply = req
            .send()
            .await
            .unwrap_or_else(|e| panic!("POST {url} {body}: {e}"));
        let status = reply.status().as_u16();
        let header = |name: &str| {
            reply
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        };
        let session = header("mcp-session-id");
        let sse = header("content-type").is_some_and(|t| t.starts_with("text/event-stream"));
        let text = reply.text().await.expect("read the body");
        let messages = if sse {
            text.lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .filter(|d| !d.trim().is_empty())
                .map(|d| serde_json::from_str(d.trim()).unwrap_or_else(|e| panic!("{e}: {d:?}")))
                .collect()
        } else if text.trim().is_empty() {
            Vec::new()
        } else {
            vec![serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text:?}"))]
        };
        HttpReply {
            status,
            session,
            messages,
        }
    })
}

/// initialize on POST /mcp, then initialized, then a tools/call: the
/// server's name and the call's text.
fn http_walkthrough(port: u16, tool_call: &Value) -> (String, String) {
    let url = mcp_url(port);
    let init = post(&url, None, &initialize(1));
    assert_eq!(init.status, 200, "initialize: {:?}", init.messages);
    let session = init.session.expect("initialize gave an mcp-session-id");
    let reply = init
        .messages
        .iter()
        .find(|m| m["id"] == 1)
        .unwrap_or_else(|| panic!("no initialize response in {:?}", init.messages));
    let name = result_of(reply)["serverInfo"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let ack = post(
        &url,
        Some(&session),
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    );
    assert_eq!(ack.status, 202, "notifications/initialized is accepted");
    let called = post(&url, Some(&session), tool_call);
    assert_eq!(called.status, 200, "tools/call: {:?}", called.messages);
    let reply = called
        .messages
        .iter()
        .find(|m| m["id"] == tool_call["id"])
        .unwrap_or_else(|| panic!("no tools/call response in {:?}", called.messages));
    (name, ok_text(reply))
}

#[test]
fn python_server_over_http_answers_on_post_mcp() {
    let fx = fixtures();
    let port = free_port();
    let _server = KillOnDrop(fx.spawn_python_http(port));
    let (name, text) = http_walkthrough(port, &call(2, "echo", json!({"text": "over http"})));
    assert_eq!(name, "agentd-mcp-fixture");
    assert_eq!(text, "over http");
}

#[test]
fn everything_server_over_http_answers_on_post_mcp() {
    let fx = fixtures();
    let port = free_port();
    let _server = KillOnDrop(fx.spawn_everything_http(port));
    let (name, text) = http_walkthrough(port, &call(2, "echo", json!({"message": "over http"})));
    assert_eq!(name, "mcp-servers/everything");
    assert_eq!(text, "Echo: over http");
}

#[test]
fn a_server_that_cannot_listen_fails_the_wait_saying_so() {
    let fx = fixtures();
    let port = free_port();
    // server.py exits at once when its --port is not a number.
    let mut cmd = fx.python_http_command(port);
    cmd.args(["--port", "not-a-port"]);
    let failed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        spawn_http(cmd, port, "server.py http")
    }));
    let message = failed.expect_err("spawn_http returned for a server that exited");
    let message = message
        .downcast_ref::<String>()
        .cloned()
        .unwrap_or_default();
    assert!(
        message.contains("exited with") && message.contains("invalid int value"),
        "the panic names the exit and shows the server's output: {message}"
    );
}

#[test]
fn setup_sh_is_quick_once_installed() {
    fixtures();
    let started = Instant::now();
    let out = Command::new("flock")
        .arg(dir().join(".setup.lock"))
        .arg("sh")
        .arg(dir().join("setup.sh"))
        .stdin(Stdio::null())
        .output()
        .expect("run setup.sh");
    assert!(out.status.success(), "{out:?}");
    let took = started.elapsed();
    assert!(
        took < Duration::from_secs(10),
        "a second setup.sh reinstalled something: {took:?}, {out:?}"
    );
}
