//! The editor at the other end of stdio: JSON-RPC 2.0, one message per
//! line (ACP's transport). Everything written to stdout goes through here,
//! so lines never interleave; requests the bridge sends (permission asks)
//! are matched to their answers by id.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};

use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use tokio::sync::{mpsc, oneshot};

use super::backlog::Backlog;
use agentd_shared::sync::Unpoisoned as _;

pub use agentd_shared::jsonrpc::{RpcError, code};

/// A request's id exactly as the editor wrote it: the raw JSON token, so
/// that an answer echoes it byte for byte (JSON-RPC says the same id; an
/// integer past f64's precision read as a `Value` would come back as
/// `-1e+23`).
#[derive(Debug, Clone)]
pub struct RequestId(Box<RawValue>);

impl RequestId {
    /// `null`: for an answer to a message whose id could not be read.
    pub fn null() -> RequestId {
        // `null` always serializes; the default raw value is `null` too.
        RequestId(serde_json::value::to_raw_value(&Value::Null).unwrap_or_default())
    }

    /// The `id` of the message in `line`, raw; None when it has none.
    pub fn of_line(line: &[u8]) -> Option<RequestId> {
        #[derive(serde::Deserialize)]
        struct IdOnly {
            id: Option<Box<RawValue>>,
        }
        serde_json::from_slice::<IdOnly>(line)
            .ok()?
            .id
            .map(RequestId)
    }
}

/// An answer, with the request's id as it came.
#[derive(Serialize)]
struct Answer<'a> {
    jsonrpc: &'static str,
    id: &'a RawValue,
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<Value>,
}

/// Requests sent to the editor, waiting for its answer (result or error).
type Pending = Arc<Mutex<HashMap<i64, oneshot::Sender<Result<Value, Value>>>>>;

/// The editor, as the bridge sees it.
#[derive(Clone)]
pub struct Peer {
    out: mpsc::UnboundedSender<String>,
    /// What `out` holds, in bytes (readers of the daemon wait on it).
    backlog: Arc<Backlog>,
    next_id: Arc<AtomicI64>,
    pending: Pending,
}

/// Lines already queued go out in one write and one flush, up to this
/// many bytes: a write per line cannot keep up with a replay.
const BATCH: usize = 64 * 1024;

impl Peer {
    /// A peer writing to stdout; the writer task ends when every Peer is
    /// dropped.
    pub fn stdout() -> (Peer, tokio::task::JoinHandle<()>) {
        let (out, mut rx) = mpsc::unbounded_channel::<String>();
        let backlog = Arc::new(Backlog::default());
        let drained = backlog.clone();
        let writer = tokio::spawn(async move {
            let mut stdout = tokio::io::stdout();
            let mut batch = Vec::with_capacity(BATCH);
            while let Some(line) = rx.recv().await {
                batch.clear();
                // The bytes `send` counted: the lines without their newlines.
                let mut counted = 0;
                let mut next = Some(line);
                while let Some(line) = next.take() {
                    counted += line.len();
                    batch.extend_from_slice(line.as_bytes());
                    batch.push(b'\n');
                    if batch.len() < BATCH {
                        next = rx.try_recv().ok();
                    }
                }
                if stdout.write_all(&batch).await.is_err() || stdout.flush().await.is_err() {
                    break;
                }
                drained.written(counted);
            }
            drained.close();
        });
        (
            Peer {
                out,
                backlog,
                next_id: Arc::new(AtomicI64::new(0)),
                pending: Arc::new(Mutex::new(HashMap::new())),
            },
            writer,
        )
    }

    fn send(&self, message: Value) {
        self.send_line(message.to_string());
    }

    fn send_line(&self, line: String) {
        let n = line.len();
        self.backlog.queued(n);
        if self.out.send(line).is_err() {
            self.backlog.written(n);
        }
    }

    /// Returns once the editor has been written most of what was sent
    /// (`Backlog`): a reader of the daemon's stream waits here before
    /// taking more.
    pub async fn room(&self) {
        self.backlog.room().await;
    }

    pub fn respond(&self, id: &RequestId, result: Result<Value, RpcError>) {
        let (result, error) = match result {
            Ok(result) => (Some(result), None),
            Err(e) => (None, Some(e.to_json())),
        };
        let answer = Answer {
            jsonrpc: "2.0",
            id: &id.0,
            result,
            error,
        };
        // Serializing values and a raw token cannot fail.
        self.send_line(serde_json::to_string(&answer).unwrap_or_default());
    }

    pub fn notify(&self, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// Sends a request to the editor and waits for its answer: Ok(result)
    /// or Err(error object); Err(null) if the editor went away.
    pub async fn request(&self, method: &str, params: Value) -> Result<Value, Value> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.pending.locked().insert(id, tx);
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        rx.await.unwrap_or(Err(Value::Null))
    }

    /// An answer from the editor to one of our requests.
    pub fn answered(&self, message: &Value) {
        let Some(id) = message["id"].as_i64() else {
            return;
        };
        let waiter = self.pending.locked().remove(&id);
        if let Some(tx) = waiter {
            let outcome = match message.get("error") {
                Some(e) => Err(e.clone()),
                None => Ok(message["result"].clone()),
            };
            let _ = tx.send(outcome);
        }
    }

    /// The editor is gone: every request waiting for it fails.
    pub fn gone(&self) {
        self.pending.locked().clear();
    }
}
