//! A `Watch` stream whose client never reads buffers a bounded number of
//! bytes in the daemon (a review found 1,000 never-read streams
//! with large HTTP/2 windows took the daemon to 945 MiB). The client here
//! speaks HTTP/2 itself, grants the largest windows HTTP/2 allows and then
//! stops reading its socket while agents finish; when it reads again, what
//! it receives before the daemon drops it (RESOURCE_EXHAUSTED, a whole
//! ring behind) is what the daemon had buffered for it.

#![allow(clippy::unwrap_used)] // Tests: a panic is the failure report.

use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use agentd_e2e::mock::{MockServer, Reply};
use agentd_e2e::{Env, short_agents};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::UnixStream;

/// The largest window HTTP/2 allows.
const HUGE_WINDOW: u32 = (1 << 31) - 1;

/// Each agent's answer: its completion event carries it.
const ANSWER_BYTES: usize = 16 * 1024;

/// Enough agents that their events (three or more each) overrun the
/// daemon's ring of 4,096 events after the watcher stopped reading.
const AGENTS: usize = 1500;

/// The most the daemon may hold for one watcher besides the socket's own
/// send queue: HTTP/2's send buffer (64 KiB), tonic's encoding buffer
/// (32 KiB) and one event, with room to spare. Before the fix it held
/// 400 KiB in HTTP/2 plus a queue of 64 events (a megabyte of answers).
const DAEMON_HOLDS_AT_MOST: usize = 192 * 1024;

/// A socket whose reads can be stopped: while paused, reads wait, so the
/// HTTP/2 connection goes on but takes nothing from the socket.
struct Pausable {
    inner: UnixStream,
    paused: Arc<AtomicBool>,
    waker: Arc<Mutex<Option<Waker>>>,
}

impl AsyncRead for Pausable {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        if self.paused.load(Ordering::SeqCst) {
            *self.waker.lock().unwrap() = Some(cx.waker().clone());
            // Checked again: a resume between the load and the store
            // would otherwise be missed.
            if self.paused.load(Ordering::SeqCst) {
                return Poll::Pending;
            }
        }
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for Pausable {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// The kernel's default send buffer of a socket: what the daemon's side
/// of the connection queues before its writes wait.
fn socket_send_buffer() -> usize {
    std::fs::read_to_string("/proc/sys/net/core/wmem_default")
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

#[test]
fn a_watcher_that_never_reads_holds_a_bounded_number_of_bytes_in_the_daemon() {
    let mock = MockServer::start();
    mock.when(|_| true, Reply::text("a".repeat(ANSWER_BYTES)));
    let env = Env::with_mock(&mock);
    let _daemon = env.start_daemon();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (received, status) = rt.block_on(async {
        let paused = Arc::new(AtomicBool::new(false));
        let waker = Arc::new(Mutex::new(None::<Waker>));
        let io = Pausable {
            inner: UnixStream::connect(env.socket()).await.unwrap(),
            paused: paused.clone(),
            waker: waker.clone(),
        };
        let (client, connection) = h2::client::Builder::new()
            .initial_window_size(HUGE_WINDOW)
            .initial_connection_window_size(HUGE_WINDOW)
            .handshake::<_, bytes::Bytes>(io)
            .await
            .unwrap();
        tokio::spawn(connection);
        let mut client = client.ready().await.unwrap();
        let request = http::Request::builder()
            .method("POST")
            .uri("http://agentd/agentd.v1.AgentService/Watch")
            .header("content-type", "application/grpc")
            .header("te", "trailers")
            .body(())
            .unwrap();
        let (response, mut body) = client.send_request(request, false).unwrap();
        // An empty WatchRequest: an uncompressed frame of length zero.
        body.send_data(bytes::Bytes::from_static(&[0, 0, 0, 0, 0]), true)
            .unwrap();
        let response = response.await.unwrap();
        assert_eq!(response.status(), 200);
        paused.store(true, Ordering::SeqCst);

        let cwd = env.project().display().to_string();
        short_agents::run(env.socket(), cwd, agentd_e2e::mock::MODEL, 0..AGENTS, 8).await;

        paused.store(false, Ordering::SeqCst);
        if let Some(w) = waker.lock().unwrap().take() {
            w.wake();
        }
        let mut stream = response.into_body();
        let mut received = 0usize;
        while let Some(chunk) = stream.data().await {
            let chunk = chunk.unwrap();
            received += chunk.len();
            let _ = stream.flow_control().release_capacity(chunk.len());
        }
        let trailers = stream.trailers().await.unwrap().unwrap();
        let status = trailers
            .get("grpc-status")
            .map(|v| v.to_str().unwrap().to_owned());
        (received, status)
    });
    // The watcher was a ring behind: it was dropped, as documented.
    assert_eq!(
        status.as_deref(),
        Some("8"),
        "RESOURCE_EXHAUSTED after {received} bytes"
    );
    let bound = socket_send_buffer() + DAEMON_HOLDS_AT_MOST;
    assert!(
        received <= bound,
        "the daemon held {received} bytes for a watcher that did not read (at most {bound}: \
         the socket's send buffer and {DAEMON_HOLDS_AT_MOST} of its own)"
    );
    // It held what it could: at least the events of the agents that fit
    // before the socket filled (the test saw a stalled watcher).
    assert!(received > ANSWER_BYTES, "{received} bytes");
}
