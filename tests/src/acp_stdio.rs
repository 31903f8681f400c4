//! A small ACP client that drives an agent process over its stdio, for
//! probing third-party ACP agents (Claude Code's adapter) directly: JSON-RPC
//! 2.0, one message per line. Requests the agent sends the client
//! (`session/request_permission`, `fs/…`) are answered by the test's
//! handler; every message the agent sends is kept, in arrival order.
//!
//! The agent runs in a process group of its own, and the whole group is
//! killed when the [`AcpAgent`] is dropped or [`AcpAgent::kill`]ed: an
//! adapter may run the real agent as a child process of its own.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// How much of the agent's stderr a failure message shows.
const STDERR_TAIL: usize = 8 * 1024;

/// A JSON-RPC error object the handler answers with: (code, message).
pub type RpcError = (i64, String);

/// What a test answers to a request from the agent: its method and params
/// in, the result (or an error) out.
pub type Handler<'a> = &'a mut dyn FnMut(&str, &Value) -> Result<Value, RpcError>;

/// The answer to any request the test did not expect: "method not found".
pub fn refuse(method: &str, _params: &Value) -> Result<Value, RpcError> {
    Err((-32601, format!("the test client does not serve {method}")))
}

/// A running ACP agent process.
pub struct AcpAgent {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    next_id: u64,
    stderr_path: PathBuf,
    /// Every message the agent sent, in arrival order (notifications,
    /// its requests, the responses to ours).
    pub received: Vec<Value>,
}

impl AcpAgent {
    /// Starts `cmd` with piped stdin and stdout, its stderr going to
    /// `stderr_path`, in a new process group.
    pub fn spawn(mut cmd: Command, stderr_path: PathBuf) -> std::io::Result<AcpAgent> {
        let stderr = std::fs::File::create(&stderr_path)?;
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .process_group(0)
            .spawn()?;
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Ok(AcpAgent {
            stdin: child.stdin.take(),
            child,
            lines,
            next_id: 0,
            stderr_path,
            received: Vec::new(),
        })
    }

    /// The process id (also the process group's).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The end of the agent's stderr, for failure messages.
    pub fn stderr_tail(&self) -> String {
        let text = std::fs::read(&self.stderr_path).unwrap_or_default();
        let from = text.len().saturating_sub(STDERR_TAIL);
        String::from_utf8_lossy(&text[from..]).into_owned()
    }

    /// Sends one message.
    pub fn send(&mut self, message: &Value) {
        let line = format!("{message}\n");
        let stdin = self.stdin.as_mut().expect("stdin is open");
        if let Err(e) = stdin
            .write_all(line.as_bytes())
            .and_then(|()| stdin.flush())
        {
            panic!(
                "cannot write to the agent ({e}); its stderr:\n{}",
                self.stderr_tail()
            );
        }
    }

    /// Sends a request and waits up to `limit` for its response, answering
    /// the agent's own requests with `handler` meanwhile. Ok: the result;
    /// Err: the error object. Panics when the agent ends or `limit` passes.
    pub fn request(
        &mut self,
        method: &str,
        params: Value,
        limit: Duration,
        handler: Handler<'_>,
    ) -> Result<Value, Value> {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let deadline = Instant::now() + limit;
        loop {
            let message = self.next_message(deadline, method);
            if message.get("method").is_none() && message["id"] == json!(id) {
                return match message.get("error") {
                    Some(error) => Err(error.clone()),
                    None => Ok(message["result"].clone()),
                };
            }
            if let (Some(asked), Some(asked_id)) = (message["method"].as_str(), message.get("id")) {
                let reply = match handler(asked, &message["params"]) {
                    Ok(result) => json!({"jsonrpc": "2.0", "id": asked_id, "result": result}),
                    Err((code, text)) => json!({
                        "jsonrpc": "2.0", "id": asked_id,
                        "error": {"code": code, "message": text},
                    }),
                };
                self.send(&reply);
            }
        }
    }

    /// The next message (kept in `received`); panics at `deadline` or when
    /// the agent's stdout ends.
    fn next_message(&mut self, deadline: Instant, waiting_for: &str) -> Value {
        let left = deadline.saturating_duration_since(Instant::now());
        let line = match self.lines.recv_timeout(left) {
            Ok(line) => line,
            Err(RecvTimeoutError::Timeout) => panic!(
                "no answer to {waiting_for} in time; the agent's stderr:\n{}",
                self.stderr_tail()
            ),
            Err(RecvTimeoutError::Disconnected) => panic!(
                "the agent closed its stdout while the test waited for {waiting_for} ({:?}); its stderr:\n{}",
                self.child.try_wait(),
                self.stderr_tail()
            ),
        };
        let message: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("the agent wrote a line that is not JSON ({e}): {line}"));
        self.received.push(message.clone());
        message
    }

    /// The `update` of every `session/update` notification for `session`,
    /// in order.
    pub fn updates(&self, session: &str) -> Vec<Value> {
        self.received
            .iter()
            .filter(|m| m["method"] == "session/update" && m.get("id").is_none())
            .filter(|m| m["params"]["sessionId"] == session)
            .map(|m| m["params"]["update"].clone())
            .collect()
    }

    /// Every request the agent sent the client, in order.
    pub fn requests_to_client(&self) -> Vec<Value> {
        self.received
            .iter()
            .filter(|m| m.get("method").is_some() && m.get("id").is_some())
            .cloned()
            .collect()
    }

    /// Stops the agent as a supervisor should: SIGTERM to its process
    /// group, then waits up to `limit` for every process of the group to
    /// end (Claude Code writes the last exchange of a session only on its
    /// way out: a SIGKILL right after a turn can lose it). True when the
    /// group ended in time; else it is killed and the answer is false.
    pub fn stop(&mut self, limit: Duration) -> bool {
        self.stdin = None;
        let Ok(pgid) = i32::try_from(self.child.id()) else {
            return false;
        };
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(pgid),
            nix::sys::signal::Signal::SIGTERM,
        );
        let deadline = Instant::now() + limit;
        let mut reaped = false;
        while Instant::now() < deadline {
            reaped = reaped || self.child.try_wait().ok().flatten().is_some();
            if reaped && !group_alive(pgid) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        self.kill();
        false
    }

    /// Kills the agent's process group and reaps the agent.
    pub fn kill(&mut self) {
        self.stdin = None;
        if let Ok(pgid) = i32::try_from(self.child.id()) {
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(pgid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        let _ = self.child.wait();
    }
}

impl Drop for AcpAgent {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Whether a process of group `pgid` is still running (zombies, which
/// have ended, do not count).
pub fn group_alive(pgid: i32) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return false;
    };
    entries.flatten().any(|e| {
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        // pid (comm) state ppid pgrp …; comm may hold spaces and parens.
        let Some((_, rest)) = stat.rsplit_once(')') else {
            return false;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        fields.len() > 2 && fields[0] != "Z" && fields[2] == pgid.to_string()
    })
}

/// The concatenated text of the `agent_message_chunk` updates among
/// `updates` (as [`AcpAgent::updates`] gives them).
pub fn agent_text(updates: &[Value]) -> String {
    chunk_text(updates, "agent_message_chunk")
}

/// The concatenated text of the updates of kind `kind`
/// (`agent_message_chunk`, `user_message_chunk`, `agent_thought_chunk`).
pub fn chunk_text(updates: &[Value], kind: &str) -> String {
    updates
        .iter()
        .filter(|u| u["sessionUpdate"] == kind)
        .filter_map(|u| u["content"]["text"].as_str())
        .collect()
}
