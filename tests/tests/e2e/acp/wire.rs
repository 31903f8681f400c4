//! `agentctl acp` on the wire, line by line: what an editor sees of a
//! background child, and what happens when the editor goes away mid-turn.

#![allow(clippy::unwrap_used)] // Tests: a panic is the failure report.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use agentd_e2e::Env;
use agentd_e2e::mock::{MockServer, Reply, last_text, prompt_of};
use serde_json::{Value, json};

struct Editor {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<Value>,
}

impl Editor {
    fn start(env: &Env, args: &[&str]) -> Editor {
        let mut full = vec!["acp"];
        full.extend_from_slice(args);
        let mut child = env
            .ctl_command(&full)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdout: ChildStdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let v: Value = serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("stdout carries only JSON-RPC: {e}: {line}"));
                if tx.send(v).is_err() {
                    break;
                }
            }
        });
        Editor {
            stdin: child.stdin.take(),
            child,
            lines: rx,
        }
    }

    fn send(&mut self, message: Value) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
    }

    /// Messages until `pred` holds for one (returned last).
    fn until(&self, what: &str, pred: impl Fn(&Value) -> bool) -> Vec<Value> {
        let mut seen = Vec::new();
        loop {
            let m = self
                .lines
                .recv_timeout(Duration::from_secs(30))
                .unwrap_or_else(|_| panic!("no {what} within 30 s; saw {seen:?}"));
            let done = pred(&m);
            seen.push(m);
            if done {
                return seen;
            }
        }
    }

    /// initialize, then session/new in `env`'s project: the session id.
    fn open_session(&mut self, env: &Env) -> String {
        self.call(0, "initialize", json!({"protocolVersion": 1}));
        let new = self.call(
            1,
            "session/new",
            json!({"cwd": env.project().display().to_string(), "mcpServers": []}),
        );
        new.last().unwrap()["result"]["sessionId"]
            .as_str()
            .unwrap()
            .to_string()
    }

    fn call(&mut self, id: u64, method: &str, params: Value) -> Vec<Value> {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        self.until(method, |m| m["id"] == id && m.get("method").is_none())
    }
}

fn world(mock: &MockServer) -> Env {
    let env = Env::with_mock(mock);
    env.write_config("default_model = \"anthropic:claude-test\"\n");
    env
}

#[test]
fn a_background_child_is_a_tool_call_that_ends_when_its_notification_arrives() {
    let mock = MockServer::start();
    let env = world(&mock);
    let _daemon = env.start_daemon();
    mock.when(
        |r| prompt_of(r).contains("CHILD-TASK"),
        Reply::text("the child's findings"),
    );
    mock.when(
        |r| last_text(r).contains("<task-notification>"),
        Reply::text("noted"),
    );
    mock.when(
        |r| last_text(r).contains("TASK-BG"),
        Reply::tool(
            "",
            "Agent",
            json!({"description": "look around", "prompt": "CHILD-TASK go", "run_in_background": true}),
        ),
    );
    mock.when(|_| true, Reply::text("launched it"));
    let mut editor = Editor::start(&env, &["--permission-mode", "bypass"]);
    let sid = editor.open_session(&env);
    let turn = editor.call(
        2,
        "session/prompt",
        json!({"sessionId": sid, "prompt": [{"type": "text", "text": "TASK-BG start it"}]}),
    );
    assert_eq!(turn.last().unwrap()["result"]["stopReason"], "end_turn");
    let update = |m: &Value| m["params"]["update"].clone();
    let call = turn
        .iter()
        .map(update)
        .find(|u| u["sessionUpdate"] == "tool_call")
        .expect("the Agent call");
    let call_id = call["toolCallId"].as_str().unwrap().to_string();
    let launched = turn
        .iter()
        .map(update)
        .find(|u| {
            u["sessionUpdate"] == "tool_call_update"
                && u["content"].is_array()
                && u["status"].is_string()
        })
        .unwrap();
    assert_eq!(launched["status"], "in_progress", "{launched}");
    // No call is left running when the turn ends: the launch completed (it
    // did launch)...
    assert!(
        turn.iter()
            .map(update)
            .any(|u| u["toolCallId"] == call_id.as_str() && u["status"] == "completed"),
        "{turn:?}"
    );
    // ...and when the child ends, its notification reaches the parent and
    // the call gets the child's result: after the turn, or within it when
    // the child was quick enough to end before its parent's turn did.
    let ends = |m: &Value| {
        m["params"]["update"]["toolCallId"] == call_id.as_str()
            && m["params"]["update"]["status"] == "completed"
            && m["params"]["update"]["content"].is_array()
    };
    let done = match turn.iter().find(|m| ends(m)) {
        Some(m) => update(m),
        None => update(
            editor
                .until("the notification's update", ends)
                .last()
                .unwrap(),
        ),
    };
    assert_eq!(
        done["content"][0]["content"]["text"],
        "the child's findings"
    );
    drop(editor.stdin.take());
    assert!(editor.child.wait().unwrap().success());
}

#[test]
fn an_editor_that_goes_away_mid_turn_leaves_the_agent_running() {
    let mock = MockServer::start();
    let env = world(&mock);
    let _daemon = env.start_daemon();
    mock.enqueue_all([
        Reply::tool(
            "",
            "Bash",
            json!({"command": "touch long-started; sleep 2; touch long-done"}),
        ),
        Reply::text("finished without the editor"),
    ]);
    let mut editor = Editor::start(&env, &["--permission-mode", "bypass"]);
    let sid = editor.open_session(&env);
    editor.send(
        json!({"jsonrpc": "2.0", "id": 2, "method": "session/prompt",
        "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "TASK-LONG"}]}}),
    );
    agentd_e2e::wait_for_path(&env.project().join("long-started"));
    // The editor closes: stdin ends, the bridge exits.
    drop(editor.stdin.take());
    assert!(editor.child.wait().unwrap().success());
    let done = env.wait_for_agent(&sid, "completed", |a| a["status"] == "completed");
    assert_eq!(done["result"], "finished without the editor");
    assert!(env.project().join("long-done").exists());
}

#[test]
fn malformed_lines_and_unknown_methods_get_json_rpc_errors() {
    let env = Env::new();
    let _daemon = env.start_daemon();
    let mut editor = Editor::start(&env, &[]);
    editor
        .stdin
        .as_mut()
        .unwrap()
        .write_all(b"{not json\n")
        .unwrap();
    let parse = editor.until("a parse error", |m| m.get("error").is_some());
    assert_eq!(parse.last().unwrap()["error"]["code"], -32700);
    assert_eq!(parse.last().unwrap()["id"], Value::Null);
    let unknown = editor.call(7, "session/teleport", json!({}));
    assert_eq!(unknown.last().unwrap()["error"]["code"], -32601);
    // Unknown notifications are ignored; the bridge still answers.
    editor.send(json!({"jsonrpc": "2.0", "method": "session/whatever", "params": {}}));
    let missing = editor.call(
        8,
        "session/prompt",
        json!({"sessionId": "nope", "prompt": []}),
    );
    assert_eq!(missing.last().unwrap()["error"]["code"], -32002);
    let bad = editor.call(9, "session/new", json!({"cwd": "relative/dir"}));
    assert_eq!(bad.last().unwrap()["error"]["code"], -32602);
    drop(editor.stdin.take());
    assert!(editor.child.wait().unwrap().success());
}

#[test]
fn a_cancel_right_behind_its_prompt_still_stops_the_turn() {
    let mock = MockServer::start();
    let env = world(&mock);
    let _daemon = env.start_daemon();
    mock.when(
        |r| last_text(r).contains("TASK-RACE"),
        Reply::tool(
            "",
            "Bash",
            json!({"command": "sleep 3; echo ran >> raced.txt"}),
        ),
    );
    mock.when(|_| true, Reply::text("after"));
    let mut editor = Editor::start(&env, &["--permission-mode", "bypass"]);
    let sid = editor.open_session(&env);
    for round in 0..3u64 {
        // The cancel follows on the next line: the agent has not even
        // been revived when it arrives.
        editor.send(json!({"jsonrpc": "2.0", "id": 10 + round, "method": "session/prompt",
            "params": {"sessionId": sid, "prompt": [{"type": "text", "text": format!("TASK-RACE {round}")}]}}));
        editor.send(
            json!({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": sid}}),
        );
        let answer = editor.until("the prompt's answer", |m| m["id"] == 10 + round);
        assert_eq!(
            answer.last().unwrap()["result"]["stopReason"],
            "cancelled",
            "round {round}: {answer:?}"
        );
    }
    std::thread::sleep(Duration::from_millis(3500));
    assert!(
        !env.project().join("raced.txt").exists(),
        "a cancelled command ran to its end"
    );
    drop(editor.stdin.take());
    assert!(editor.child.wait().unwrap().success());
}

#[test]
fn a_line_that_is_not_utf8_is_a_parse_error_and_a_prompt_waits_for_a_restarting_daemon() {
    let mock = MockServer::start();
    let env = world(&mock);
    let daemon = env.start_daemon();
    mock.when(|_| true, Reply::text("hi"));
    let mut editor = Editor::start(&env, &["--permission-mode", "bypass"]);
    editor
        .stdin
        .as_mut()
        .unwrap()
        .write_all(b"{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": \"\xff\xfe\"}\n")
        .unwrap();
    let parse = editor.until("a parse error", |m| m.get("error").is_some());
    assert_eq!(parse.last().unwrap()["error"]["code"], -32700);
    // Still talking.
    editor.call(0, "initialize", json!({"protocolVersion": 1}));
    let new = editor.call(
        2,
        "session/new",
        json!({"cwd": env.project().display().to_string(), "mcpServers": []}),
    );
    let sid = new.last().unwrap()["result"]["sessionId"]
        .as_str()
        .unwrap()
        .to_string();
    // The daemon stops under the open session, and a prompt comes while
    // it is away: it waits for the daemon to be back (not a session
    // gone), then runs.
    assert!(daemon.terminate().success());
    editor.send(
        json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
        "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "still there?"}]}}),
    );
    // The editor is told the daemon is waited for, never left silent.
    let thought = |m: &Value, says: &str| {
        m["method"] == "session/update"
            && m["params"]["update"]["sessionUpdate"] == "agent_thought_chunk"
            && m["params"]["update"]["content"]["text"]
                .as_str()
                .is_some_and(|t| t.contains(says))
    };
    editor.until("a notice of the wait", |m| {
        thought(m, "waiting for agentd on ")
    });
    let _daemon = env.start_daemon();
    let answer = editor.until("the prompt's answer", |m| m["id"] == 3);
    assert_eq!(
        answer.last().unwrap()["result"]["stopReason"],
        "end_turn",
        "{answer:?}"
    );
    drop(editor.stdin.take());
    assert!(editor.child.wait().unwrap().success());
}

/// The bridge's peak resident memory, in KiB (VmHWM).
fn peak_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse().ok())
        .unwrap()
}

#[test]
fn a_huge_line_is_refused_without_being_held_and_a_huge_session_id_is_quoted_short() {
    let env = Env::new();
    let _daemon = env.start_daemon();
    let mut editor = Editor::start(&env, &[]);
    editor.call(0, "initialize", json!({"protocolVersion": 1}));
    // 300 MiB on one line, as the hostile review sent it.
    let chunk = vec![b'x'; 1 << 20];
    {
        let stdin = editor.stdin.as_mut().unwrap();
        stdin
            .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"")
            .unwrap();
        for _ in 0..300 {
            stdin.write_all(&chunk).unwrap();
        }
        stdin.write_all(b"\"}\n").unwrap();
        stdin.flush().unwrap();
    }
    let refused = editor.until("the refusal", |m| m.get("error").is_some());
    let error = &refused.last().unwrap()["error"];
    assert_eq!(error["code"], -32600, "{error}");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("over the limit"),
        "{error}"
    );
    let peak = peak_kib(editor.child.id());
    assert!(peak < 100 * 1024, "the bridge held {peak} KiB");
    // The conversation goes on, and a huge unknown id comes back short.
    let id = "s".repeat(1 << 20);
    let missing = editor.call(2, "session/prompt", json!({"sessionId": id, "prompt": []}));
    let answer = serde_json::to_string(missing.last().unwrap()).unwrap();
    assert!(answer.contains("-32002"), "{:.300}", answer);
    assert!(answer.len() < 1024, "a {} byte answer", answer.len());
    drop(editor.stdin.take());
    assert!(editor.child.wait().unwrap().success());
}

#[test]
fn request_ids_are_echoed_exactly_as_the_editor_wrote_them() {
    let env = Env::new();
    let _daemon = env.start_daemon();
    let mut child = env
        .ctl_command(&["acp"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    // Past f64's precision, a fraction, an escaped string: JSON-RPC wants
    // the same id back, and a `Value` would have rewritten each.
    for id in [
        "-99999999999999999999999",
        "12345678901234567890123.5",
        r#""\u0041b""#,
    ] {
        writeln!(
            stdin,
            r#"{{"jsonrpc": "2.0", "id": {id}, "method": "session/teleport", "params": {{}}}}"#
        )
        .unwrap();
        stdin.flush().unwrap();
        let mut line = String::new();
        out.read_line(&mut line).unwrap();
        assert!(
            line.contains(&format!(r#""id":{id},"#)),
            "id {id} came back as: {line}"
        );
        assert!(line.contains("-32601"), "{line}");
    }
    drop(stdin);
    assert!(child.wait().unwrap().success());
}
