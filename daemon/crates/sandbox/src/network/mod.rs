//! The network a confined agent reaches (DESIGN §22, docs/security.md):
//! in `proxy` mode its tools run in a network namespace of their own with
//! only loopback, and the one way out is an HTTP proxy the daemon runs for
//! the agent on a listener inside that namespace. The proxy lets a
//! connection through by the host name the tool asked for (HTTP
//! absolute-form requests and `CONNECT` tunnels), never by an address it
//! resolved, and only when the agent's `Egress` says so; every decision is
//! recorded before a byte goes through.
//!
//! - `built_in`: the registries and source hosts allowed by default.
//! - `head`: reading and rewriting a request's head.
//! - `proxy`: the accept loop and one connection's life.
//!
//! What is allowed, who is asked and where it is recorded is the
//! supervisor's (`supervisor::egress`); this module never sees it.

pub mod built_in;
mod head;
pub mod proxy;

use std::future::Future;
use std::pin::Pin;

use crate::domain::{ConnectionRecord, NetTarget};

pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// The variables that point a tool at its proxy.
pub const PROXY_VARS: [&str; 6] = [
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
];
/// The variables that keep loopback (the namespace's own servers) direct.
pub const NO_PROXY_VARS: [&str; 2] = ["NO_PROXY", "no_proxy"];
/// What they hold for a tool.
pub const NO_PROXY_LOOPBACK: &str = "localhost,127.0.0.1,::1";

/// Decides and records one agent's connections.
pub trait Egress: Send + Sync + 'static {
    /// Decides whether the agent may reach `target` (asking someone if
    /// that is what its rules say, and waiting for the answer), and
    /// records the decision durably before it returns. A decision that
    /// cannot be recorded is a refusal.
    fn open<'a>(
        &'a self,
        target: &'a NetTarget,
        method: &'a str,
    ) -> BoxFuture<'a, ConnectionRecord>;

    /// Records how an allowed connection ended (its byte counts, or the
    /// error that kept it from being made).
    fn close(&self, record: ConnectionRecord) -> BoxFuture<'_, ()>;
}

/// The egress of a namespace nobody answers for (a probe): refuses all.
pub struct RefuseAll;

impl Egress for RefuseAll {
    fn open<'a>(
        &'a self,
        target: &'a NetTarget,
        method: &'a str,
    ) -> BoxFuture<'a, ConnectionRecord> {
        let record = ConnectionRecord {
            seq: 0,
            agent: crate::domain::AgentId::from_uuid(uuid::Uuid::nil()),
            target: target.clone(),
            method: method.to_string(),
            decision: crate::domain::ConnectionDecision::Refused,
            reason: "no agent answers for this process's network".to_string(),
            bytes_sent: 0,
            bytes_received: 0,
            started_at_ms: crate::domain::now_ms(),
            ended_at_ms: None,
            error: None,
        };
        Box::pin(async move { record })
    }

    fn close(&self, _record: ConnectionRecord) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
}
