//! One agent's proxy: the accept loop on the listener inside its network
//! namespace, and each connection's life — its head read, its target
//! decided and recorded (`Egress::open`), the origin reached from the
//! daemon's own network by the name the tool gave, bytes copied both ways
//! and counted, the end recorded (`Egress::close`).
//!
//! The loop runs as long as the task that runs it: dropping the `Proxy`
//! aborts it and every connection it serves.

use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncWriteExt as _, copy_bidirectional};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;

use super::Egress;
use super::head::{self, Request};
use crate::domain::{ConnectionDecision, NetTarget, now_ms};

/// How long a tool may take to send its request head.
const HEAD_WITHIN: Duration = Duration::from_secs(30);
/// How long reaching the origin may take.
const CONNECT_WITHIN: Duration = Duration::from_secs(30);

/// Tests map host names to local addresses with this (debug builds only):
/// `name=127.0.0.1,other=127.0.0.1`.
pub const TEST_HOSTS_VAR: &str = "AGENTD_TEST_PROXY_HOSTS";

/// A running proxy; dropped, it stops.
pub struct Proxy {
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Proxy {
    /// Serves `listener` (non-blocking, from the agent's namespace) for
    /// `egress`.
    pub fn start(
        listener: std::net::TcpListener,
        egress: Arc<dyn Egress>,
    ) -> std::io::Result<Proxy> {
        let listener = TcpListener::from_std(listener)?;
        Ok(Proxy {
            task: tokio::spawn(serve(listener, egress)),
        })
    }
}

async fn serve(listener: TcpListener, egress: Arc<dyn Egress>) {
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    connections.spawn(handle(stream, egress.clone()));
                }
                Err(e) => {
                    tracing::warn!(error = %e, "the network proxy could not accept");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}

async fn handle(mut client: TcpStream, egress: Arc<dyn Egress>) {
    let read = tokio::time::timeout(HEAD_WITHIN, head::read(&mut client)).await;
    let (request, rest) = match read {
        Ok(Ok(read)) => read,
        Ok(Err(refusal)) => {
            let _ = client
                .write_all(&head::answer(refusal.status, &refusal.why))
                .await;
            return;
        }
        Err(_) => return,
    };
    let mut record = egress.open(request.target(), request.method()).await;
    if record.decision == ConnectionDecision::Refused {
        let why = format!(
            "the connection to {} was refused: {}",
            request.target(),
            record.reason
        );
        let _ = client.write_all(&head::answer(403, &why)).await;
        return;
    }
    let mut origin = match reach(request.target()).await {
        Ok(origin) => origin,
        Err(e) => {
            let status = if e.kind() == std::io::ErrorKind::TimedOut {
                504
            } else {
                502
            };
            let why = format!("{} could not be reached: {e}", request.target());
            let _ = client.write_all(&head::answer(status, &why)).await;
            record.error = Some(why);
            record.ended_at_ms = Some(now_ms());
            egress.close(record).await;
            return;
        }
    };
    let mut sent = rest.len() as u64;
    let opened = match &request {
        Request::Tunnel { .. } => {
            let ok = client
                .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                .await;
            match ok {
                Ok(()) => origin.write_all(&rest).await,
                Err(e) => Err(e),
            }
        }
        Request::Forward { head, .. } => {
            sent += head.len() as u64;
            let mut first = head.clone();
            first.extend_from_slice(&rest);
            origin.write_all(&first).await
        }
    };
    let (up, down) = match opened {
        Ok(()) => copy_bidirectional(&mut client, &mut origin)
            .await
            .unwrap_or((0, 0)),
        Err(_) => (0, 0),
    };
    record.bytes_sent = sent + up;
    record.bytes_received = down;
    record.ended_at_ms = Some(now_ms());
    egress.close(record).await;
}

/// Connects to `target` by its name, from the daemon's network.
async fn reach(target: &NetTarget) -> std::io::Result<TcpStream> {
    let host = mapped(target.host()).unwrap_or_else(|| target.host().to_string());
    let connect = TcpStream::connect((host.as_str(), target.port()));
    match tokio::time::timeout(CONNECT_WITHIN, connect).await {
        Ok(stream) => stream,
        Err(_) => Err(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            format!("no answer within {} s", CONNECT_WITHIN.as_secs()),
        )),
    }
}

/// A test's address for `host` (debug builds only; release builds resolve
/// every name as the system does).
fn mapped(host: &str) -> Option<String> {
    if !cfg!(debug_assertions) {
        return None;
    }
    let map = std::env::var(TEST_HOSTS_VAR).ok()?;
    map.split(',').find_map(|pair| {
        let (name, addr) = pair.split_once('=')?;
        (name.trim() == host).then(|| addr.trim().to_string())
    })
}
