//! Every request's peer must run as the daemon's own user (DESIGN §11).
//! The socket's file mode is the first fence; this check, on the kernel's
//! SO_PEERCRED of the connection, is the one that does not depend on it.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use tonic::Status;
use tonic::transport::server::UdsConnectInfo;
use tower::{Layer, Service};

#[derive(Debug, Clone, Copy)]
pub struct PeerUidLayer {
    uid: u32,
}

impl PeerUidLayer {
    pub fn new(uid: u32) -> Self {
        PeerUidLayer { uid }
    }
}

impl<S> Layer<S> for PeerUidLayer {
    type Service = PeerUid<S>;

    fn layer(&self, inner: S) -> PeerUid<S> {
        PeerUid {
            inner,
            uid: self.uid,
        }
    }
}

#[derive(Debug, Clone)]
pub struct PeerUid<S> {
    inner: S,
    uid: u32,
}

/// Why the process `pid` looks like one an agent's tool started: it runs
/// in a PID namespace other than the daemon's (every confined command runs
/// in one of its own, which nothing it starts can leave, and which the
/// kernel keeps whatever the process does to its environment or ancestry:
/// `sandbox::pid_namespace`), the daemon is among its ancestors (it is the
/// subreaper of its tools' processes, so a double fork does not leave its
/// descent: `process::adopt`), or it carries the marker every unconfined
/// tool process gets (`process::reap::MARKER_VAR`) in its environment. A
/// process another service starts on an unconfined tool's behalf
/// (`systemd-run --user`, `at`) is not caught; a confined tool reaches no
/// such service (no Unix sockets).
fn from_a_tool(pid: i32) -> Option<&'static str> {
    use crate::sandbox::pid_namespace::namespace_of;
    // Fail closed: a namespace that cannot be read is not the daemon's.
    match (namespace_of(&pid.to_string()), namespace_of("self")) {
        (Some(theirs), Some(ours)) if theirs == ours => {}
        (Some(_), Some(_)) => {
            return Some("it runs in another PID namespace, as every sandboxed command does");
        }
        _ => return Some("its process cannot be inspected"),
    }
    let daemon = std::process::id() as i32;
    let parent_of = |p: i32| -> Option<i32> {
        let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).ok()?;
        // The command name may hold spaces and parentheses: fields start
        // after the last ')'.
        let rest = &stat[stat.rfind(')')? + 1..];
        rest.split_whitespace().nth(1)?.parse().ok()
    };
    // Fail closed: a peer whose process cannot be looked at (gone, so the
    // connection is held by some other process now) is refused.
    let Some(mut current) = parent_of(pid) else {
        return Some("its process cannot be inspected");
    };
    if pid == daemon {
        return Some("it is the daemon itself");
    }
    // Up to init, however deep (a tool could nest shells to outrun a
    // bound); a cycle or an absurd depth is refused. An ancestor that cannot
    // be read is not the daemon's kin: only a chain through the daemon
    // (same user, readable) can make a peer a tool's.
    let mut steps = 0u32;
    while current > 1 {
        if current == daemon {
            return Some("the daemon is its ancestor");
        }
        steps += 1;
        if steps > 1_000_000 {
            return Some("its ancestry cannot be followed");
        }
        match parent_of(current) {
            Some(p) => current = p,
            None => break,
        }
    }
    let Ok(environ) = std::fs::read(format!("/proc/{pid}/environ")) else {
        return Some("its process cannot be inspected");
    };
    let marker = format!("{}=", crate::process::reap::MARKER_VAR);
    environ
        .split(|b| *b == 0)
        .any(|v| v.starts_with(marker.as_bytes()))
        .then_some("it carries the tool marker")
}

type BoxFuture<T, E> = Pin<Box<dyn Future<Output = Result<T, E>> + Send>>;

impl<S, B> Service<http::Request<B>> for PeerUid<S>
where
    S: Service<http::Request<B>, Response = http::Response<tonic::body::Body>>,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = BoxFuture<S::Response, S::Error>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: http::Request<B>) -> Self::Future {
        let cred = req
            .extensions()
            .get::<UdsConnectInfo>()
            .and_then(|info| info.peer_cred);
        match cred {
            Some(cred) if cred.uid() == self.uid => {
                if let Some(pid) = cred.pid()
                    && let Some(why) = from_a_tool(pid)
                {
                    tracing::warn!(peer_pid = pid, method = %req.uri().path(), why, "refused a request from an agent's tool");
                    let status = Status::permission_denied(format!(
                        "agentd does not take requests from its agents' own tools ({why}): a sandboxed agent must not start, steer or answer for agents through the socket; run agentctl from your own shell, in the daemon's PID namespace"
                    ));
                    return Box::pin(async move { Ok(status.into_http()) });
                }
                Box::pin(self.inner.call(req))
            }
            other => {
                let (uid, pid) = match other {
                    Some(c) => (Some(c.uid()), c.pid()),
                    None => (None, None),
                };
                tracing::warn!(
                    peer_uid = ?uid,
                    peer_pid = ?pid,
                    method = %req.uri().path(),
                    "refused a request from another user"
                );
                let status = Status::permission_denied(format!(
                    "agentd serves only uid {}; this connection comes from {}",
                    self.uid,
                    uid.map_or("an unknown uid".to_string(), |u| format!("uid {u}"))
                ));
                Box::pin(async move { Ok(status.into_http()) })
            }
        }
    }
}
