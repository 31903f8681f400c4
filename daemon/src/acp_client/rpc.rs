//! JSON-RPC 2.0 over an ACP agent's standard input and output: one message
//! per line. Requests agentd sends are matched to their responses; what
//! the agent sends on its own (notifications, its requests to the client)
//! comes out of [`Incoming`] in the order it was written, and the response
//! to a request is delivered only after everything the agent wrote before
//! it has been queued there — so a prompt's answer never overtakes its
//! last update.
//!
//! Reads are bounded: a line longer than [`MAX_LINE`] ends the connection
//! (the agent is broken or hostile), and the queue of incoming messages is
//! bounded, so an agent that floods waits for agentd to catch up.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use agentd_shared::sync::Unpoisoned as _;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

/// The longest line read from an agent: a whole file's diff fits.
pub const MAX_LINE: usize = 32 << 20;
/// Incoming messages queued before the reader waits.
const QUEUE: usize = 512;

pub use agentd_shared::jsonrpc::{RpcError, code};

/// An error's message, with the reason in its `data` when the agent gave
/// one as text (`data` or `data.details`: Gemini CLI says "Internal error"
/// and puts why there); each part quoted short.
fn error_text(e: &Value) -> String {
    let message = e.get("message").and_then(Value::as_str).unwrap_or_default();
    let data = &e["data"];
    let details = data
        .as_str()
        .or_else(|| data.get("details").and_then(Value::as_str))
        .filter(|d| !d.trim().is_empty());
    match details {
        Some(d) => format!(
            "{}: {}",
            crate::error::quote(message),
            crate::error::quote(d)
        ),
        None => crate::error::quote(message).to_string(),
    }
}

/// Why a request got no result.
#[derive(Debug, Clone, PartialEq)]
pub enum CallError {
    /// The agent answered with an error.
    Rpc(RpcError),
    /// The connection ended first (the process exited, or broke the
    /// protocol): `why` says how.
    Closed(String),
}

impl std::fmt::Display for CallError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CallError::Rpc(e) => write!(f, "{e}"),
            CallError::Closed(why) => f.write_str(why),
        }
    }
}

/// What the agent sends on its own.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    Notification {
        method: String,
        params: Value,
    },
    /// Must be answered with [`Connection::respond`].
    Request {
        id: Value,
        method: String,
        params: Value,
    },
}

type Pending = Arc<Mutex<HashMap<u64, oneshot::Sender<Result<Value, RpcError>>>>>;

/// The sending half of a connection; cheap to clone.
#[derive(Clone)]
pub struct Connection {
    out: mpsc::UnboundedSender<Vec<u8>>,
    pending: Pending,
    next_id: Arc<AtomicU64>,
    /// Cancelled when the reader stops (EOF, a broken line): with why.
    closed: CancellationToken,
    close_reason: Arc<Mutex<String>>,
}

impl Connection {
    /// Starts the reader and writer tasks over `input` (the agent's
    /// stdout) and `output` (its stdin).
    pub fn start<R, W>(input: R, output: W) -> (Connection, mpsc::Receiver<Incoming>)
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let (out, out_rx) = mpsc::unbounded_channel();
        let (in_tx, in_rx) = mpsc::channel(QUEUE);
        let connection = Connection {
            out,
            pending: Pending::default(),
            next_id: Arc::new(AtomicU64::new(1)),
            closed: CancellationToken::new(),
            close_reason: Arc::new(Mutex::new(String::new())),
        };
        tokio::spawn(write_lines(output, out_rx));
        tokio::spawn(connection.clone().read_lines(input, in_tx));
        (connection, in_rx)
    }

    /// Sends a request and waits for its response.
    pub async fn request(&self, method: &str, params: Value) -> Result<Value, CallError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.pending.locked().insert(id, tx);
        let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        if self.closed.is_cancelled() || self.send(&line).is_err() {
            self.forget(id);
            return Err(CallError::Closed(self.close_reason()));
        }
        tokio::select! {
            answer = rx => match answer {
                Ok(Ok(result)) => Ok(result),
                Ok(Err(e)) => Err(CallError::Rpc(e)),
                Err(_) => Err(CallError::Closed(self.close_reason())),
            },
            _ = self.closed.cancelled() => {
                self.forget(id);
                Err(CallError::Closed(self.close_reason()))
            }
        }
    }

    /// Sends a notification (no answer).
    pub fn notify(&self, method: &str, params: Value) {
        let _ = self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// Answers one of the agent's requests.
    pub fn respond(&self, id: Value, answer: Result<Value, RpcError>) {
        let line = match answer {
            Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
            Err(e) => json!({"jsonrpc": "2.0", "id": id,
                "error": {"code": e.code, "message": e.message}}),
        };
        let _ = self.send(&line);
    }

    /// Resolves once the connection has ended.
    pub async fn closed(&self) {
        self.closed.cancelled().await
    }

    pub fn is_closed(&self) -> bool {
        self.closed.is_cancelled()
    }

    /// How the connection ended ("" while open).
    pub fn close_reason(&self) -> String {
        let why = self.close_reason.locked().clone();
        if why.is_empty() {
            "the agent closed its output".into()
        } else {
            why
        }
    }

    fn send(&self, message: &Value) -> Result<(), ()> {
        let mut line = message.to_string().into_bytes();
        line.push(b'\n');
        self.out.send(line).map_err(|_| ())
    }

    fn forget(&self, id: u64) {
        self.pending.locked().remove(&id);
    }

    fn end(&self, why: String) {
        *self.close_reason.locked() = why;
        self.pending.locked().clear();
        self.closed.cancel();
    }

    async fn read_lines<R>(self, input: R, incoming: mpsc::Sender<Incoming>)
    where
        R: AsyncRead + Unpin,
    {
        let mut reader = BufReader::new(input);
        let mut line = Vec::new();
        let why = loop {
            line.clear();
            match read_bounded(&mut reader, &mut line).await {
                Ok(0) => break "the agent closed its output (it exited)".to_string(),
                Ok(_) => {}
                Err(e) => break e,
            }
            let Ok(message) = serde_json::from_slice::<Value>(&line) else {
                // Not protocol: an agent printing to stdout by mistake.
                tracing::debug!(
                    bytes = line.len(),
                    "an ACP agent wrote a line that is not JSON; skipped"
                );
                continue;
            };
            if self.dispatch(message, &incoming).await.is_err() {
                break "agentd stopped reading the agent".to_string();
            }
        };
        self.end(why);
    }

    /// Routes one message. Err when nobody reads incoming messages any more.
    async fn dispatch(&self, message: Value, incoming: &mpsc::Sender<Incoming>) -> Result<(), ()> {
        let method = message.get("method").and_then(Value::as_str);
        let id = message.get("id").filter(|id| !id.is_null());
        match (method, id) {
            (Some(method), Some(id)) => incoming
                .send(Incoming::Request {
                    id: id.clone(),
                    method: method.to_string(),
                    params: message.get("params").cloned().unwrap_or(Value::Null),
                })
                .await
                .map_err(|_| ()),
            (Some(method), None) => incoming
                .send(Incoming::Notification {
                    method: method.to_string(),
                    params: message.get("params").cloned().unwrap_or(Value::Null),
                })
                .await
                .map_err(|_| ()),
            (None, Some(id)) => {
                let Some(n) = id.as_u64() else { return Ok(()) };
                let waiter = self.pending.locked().remove(&n);
                if let Some(waiter) = waiter {
                    let answer = match message.get("error") {
                        Some(e) => Err(RpcError::new(
                            e.get("code").and_then(Value::as_i64).unwrap_or(-32603),
                            error_text(e),
                        )),
                        None => Ok(message.get("result").cloned().unwrap_or(Value::Null)),
                    };
                    // Everything the agent wrote before this response is
                    // queued already: `send` above waited for room.
                    let _ = waiter.send(answer);
                }
                Ok(())
            }
            (None, None) => Ok(()),
        }
    }
}

/// Reads one line (without its newline) of at most [`MAX_LINE`] bytes;
/// Ok(0) at the end of input.
async fn read_bounded<R: AsyncRead + Unpin>(
    reader: &mut BufReader<R>,
    line: &mut Vec<u8>,
) -> Result<usize, String> {
    loop {
        let available = reader
            .fill_buf()
            .await
            .map_err(|e| format!("cannot read the agent's output: {e}"))?;
        if available.is_empty() {
            return Ok(line.len());
        }
        let (chunk, done) = match available.iter().position(|b| *b == b'\n') {
            Some(end) => (&available[..end], Some(end + 1)),
            None => (available, None),
        };
        if line.len() + chunk.len() > MAX_LINE {
            return Err(format!(
                "the agent wrote a message longer than {} MiB; agentd stopped reading it",
                MAX_LINE >> 20
            ));
        }
        line.extend_from_slice(chunk);
        let used = done.unwrap_or(available.len());
        reader.consume(used);
        if done.is_some() {
            // A blank line is no message: read on.
            if line.iter().all(u8::is_ascii_whitespace) {
                line.clear();
                continue;
            }
            return Ok(line.len());
        }
    }
}

async fn write_lines<W: AsyncWrite + Unpin>(
    mut output: W,
    mut lines: mpsc::UnboundedReceiver<Vec<u8>>,
) {
    while let Some(line) = lines.recv().await {
        if output.write_all(&line).await.is_err() || output.flush().await.is_err() {
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    #[tokio::test]
    async fn requests_get_their_answers_after_what_came_before() {
        let (agent_out, ours_in) = tokio::io::duplex(1 << 16);
        let (ours_out, mut agent_in) = tokio::io::duplex(1 << 16);
        let (conn, mut incoming) = Connection::start(ours_in, ours_out);
        let asked = tokio::spawn({
            let conn = conn.clone();
            async move { conn.request("session/prompt", json!({"x": 1})).await }
        });
        let mut buf = vec![0u8; 4096];
        let n = agent_in.read(&mut buf).await.unwrap();
        let sent: Value = serde_json::from_slice(&buf[..n]).unwrap();
        assert_eq!(sent["method"], "session/prompt");
        let id = sent["id"].clone();
        let mut agent_out = agent_out;
        let reply = format!(
            "{}\n\nnot json\n{}\n{}\n",
            json!({"jsonrpc":"2.0","method":"session/update","params":{"n":1}}),
            json!({"jsonrpc":"2.0","id":"p1","method":"session/request_permission","params":{}}),
            json!({"jsonrpc":"2.0","id":id,"result":{"stopReason":"end_turn"}})
        );
        agent_out.write_all(reply.as_bytes()).await.unwrap();
        let answer = asked.await.unwrap().unwrap();
        assert_eq!(answer["stopReason"], "end_turn");
        // Both came before the answer and are queued already.
        assert!(
            matches!(incoming.try_recv().unwrap(), Incoming::Notification { method, .. } if method == "session/update")
        );
        assert!(
            matches!(incoming.try_recv().unwrap(), Incoming::Request { method, .. } if method == "session/request_permission")
        );
        conn.respond(
            json!("p1"),
            Err(RpcError::new(code::METHOD_NOT_FOUND, "no")),
        );
        let n = agent_in.read(&mut buf).await.unwrap();
        let answered: Value = serde_json::from_slice(&buf[..n]).unwrap();
        assert_eq!(answered["id"], "p1");
        assert_eq!(answered["error"]["code"], -32601);
    }

    #[test]
    fn an_errors_text_carries_the_reason_in_its_data() {
        let e = json!({"code": -32603, "message": "Internal error",
            "data": {"details": "No previous sessions found for this project."}});
        assert_eq!(
            error_text(&e),
            "Internal error: No previous sessions found for this project."
        );
        assert_eq!(
            error_text(&json!({"message": "Bad", "data": "why"})),
            "Bad: why"
        );
        assert_eq!(
            error_text(&json!({"message": "Bad", "data": {"n": 1}})),
            "Bad"
        );
    }

    #[tokio::test]
    async fn errors_and_the_end_of_output_reach_the_caller() {
        let (agent_out, ours_in) = tokio::io::duplex(1 << 16);
        let (ours_out, mut agent_in) = tokio::io::duplex(1 << 16);
        let (conn, _incoming) = Connection::start(ours_in, ours_out);
        let asked = tokio::spawn({
            let conn = conn.clone();
            async move { conn.request("session/new", json!({})).await }
        });
        let mut buf = vec![0u8; 4096];
        let n = agent_in.read(&mut buf).await.unwrap();
        let id = serde_json::from_slice::<Value>(&buf[..n]).unwrap()["id"].clone();
        let mut agent_out = agent_out;
        let line = json!({"jsonrpc":"2.0","id":id,"error":{"code":-32000,"message":"Authentication required"}});
        agent_out
            .write_all(format!("{line}\n").as_bytes())
            .await
            .unwrap();
        assert_eq!(
            asked.await.unwrap(),
            Err(CallError::Rpc(RpcError::new(
                -32000,
                "Authentication required"
            )))
        );
        let waiting = tokio::spawn({
            let conn = conn.clone();
            async move { conn.request("session/prompt", json!({})).await }
        });
        let _ = agent_in.read(&mut buf).await.unwrap();
        drop(agent_out);
        assert!(
            matches!(waiting.await.unwrap(), Err(CallError::Closed(why)) if why.contains("exited"))
        );
        assert!(conn.is_closed());
    }

    #[tokio::test]
    async fn a_line_past_the_limit_ends_the_connection() {
        let (mut agent_out, ours_in) = tokio::io::duplex(1 << 16);
        let (ours_out, _agent_in) = tokio::io::duplex(1 << 16);
        let (conn, _incoming) = Connection::start(ours_in, ours_out);
        let writer = tokio::spawn(async move {
            let chunk = vec![b'x'; 1 << 20];
            for _ in 0..(MAX_LINE >> 20) + 2 {
                if agent_out.write_all(&chunk).await.is_err() {
                    break;
                }
            }
        });
        conn.closed().await;
        assert!(
            conn.close_reason().contains("longer than"),
            "{}",
            conn.close_reason()
        );
        writer.abort();
    }
}
