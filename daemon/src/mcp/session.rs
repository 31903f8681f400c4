//! One live connection to an MCP server, over a stdio server's pipes or
//! streamable HTTP. rmcp speaks the protocol; this file decides the bounds:
//! how long starting may take, how long a call may run, and what a cancelled
//! or timed-out call does.
//!
//! The daemon spawns a stdio server itself (as the agent's child, in its
//! sandbox), so a session takes the pipes, not a command: it neither starts
//! nor reaps the process. A server that exits closes its stdout, which ends
//! the session: a call in flight returns [`McpError::Closed`], not a hang.
//!
//! A call is a `tools/call` request raced against its timeout and the
//! caller's cancellation token. When either wins, the server is sent
//! `notifications/cancelled` for the request, and the call returns once
//! that notification is written (at most [`CANCEL_SEND_LIMIT`] later): an
//! agent's run may end right after, and a notification still queued when
//! the server is stopped would never reach it. The session stays usable for
//! the next call. A call whose future is dropped before it ends (the run
//! aborted) sends the notification in the background, as best it can.

use std::collections::HashMap;
use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, CancelledNotification,
    CancelledNotificationParam, ClientCapabilities, ClientConfig, ClientRequest, Implementation,
    RequestId, ServerResult,
};
use rmcp::service::{
    Peer, PeerRequestOptions, RequestHandle, RoleClient, RunningService, ServiceError,
};
use rmcp::transport::IntoTransport;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::Value;
use tokio::process::{ChildStdin, ChildStdout};
use tokio_util::sync::CancellationToken;

use super::def::{ServerDef, ServerName, Transport};
pub use super::error::McpError;
use super::result::CallOutput;
use super::tool::{ToolDecl, dedup_wire_names};

/// How long closing waits for rmcp to wind the connection down.
const CLOSE_GRACE: Duration = Duration::from_secs(5);
/// How long a cancelled call waits for its `notifications/cancelled` to be
/// written (a server that stopped reading its stdin must not hold it up).
pub const CANCEL_SEND_LIMIT: Duration = Duration::from_secs(1);

/// A connected server: handshake done, ready for `tools/list` and
/// `tools/call`. Dropping it closes the connection too (in the background).
pub struct Session {
    server: ServerName,
    service: RunningService<RoleClient, ClientConfig>,
    /// Bounds `tools/list` as well as the handshake: both are part of
    /// making the server's tools available.
    startup_timeout: Duration,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("server", &self.server)
            .field("closed", &self.is_closed())
            .finish()
    }
}

/// What agentd tells servers about itself: its name and version, and no
/// optional client capabilities (no sampling, roots or elicitation).
fn client_config() -> ClientConfig {
    ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("agentd", env!("CARGO_PKG_VERSION")),
    )
}

impl Session {
    /// The MCP handshake over a spawned server's pipes.
    pub async fn over_stdio(
        name: ServerName,
        stdout: ChildStdout,
        stdin: ChildStdin,
        startup_timeout: Duration,
    ) -> Result<Session, McpError> {
        Session::start(name, (stdout, stdin), startup_timeout).await
    }

    /// Connects to a streamable HTTP server (`def` must be one) and does
    /// the handshake; its headers go with every request.
    pub async fn over_http(
        def: &ServerDef,
        startup_timeout: Duration,
    ) -> Result<Session, McpError> {
        let Transport::Http { url, headers } = &def.transport else {
            return Err(McpError::Start(format!(
                "MCP server `{}` is a stdio server: spawn its command and use its pipes",
                def.name
            )));
        };
        let mut custom = HashMap::with_capacity(headers.len());
        for (name, value) in headers {
            // Checked when the definition was made; a failure here is a bug
            // upstream, reported rather than sent half-configured.
            let header = http::HeaderName::from_bytes(name.as_bytes())
                .ok()
                .zip(http::HeaderValue::from_str(value).ok())
                .ok_or_else(|| {
                    McpError::Start(format!(
                        "MCP server `{}`: header {name:?} cannot be sent",
                        def.name
                    ))
                })?;
            custom.insert(header.0, header.1);
        }
        let config =
            StreamableHttpClientTransportConfig::with_uri(url.as_str()).custom_headers(custom);
        let transport = StreamableHttpClientTransport::from_config(config);
        Session::start(def.name.clone(), transport, startup_timeout).await
    }

    async fn start<T, E, A>(
        server: ServerName,
        transport: T,
        startup_timeout: Duration,
    ) -> Result<Session, McpError>
    where
        T: IntoTransport<RoleClient, E, A>,
        E: std::error::Error + Send + Sync + 'static,
    {
        let handshake = client_config().serve(transport);
        let service = match tokio::time::timeout(startup_timeout, handshake).await {
            Err(_) => return Err(McpError::start_timeout(&server, startup_timeout)),
            Ok(Err(e)) => return Err(McpError::from_init(&server, e)),
            Ok(Ok(service)) => service,
        };
        Ok(Session {
            server,
            service,
            startup_timeout,
        })
    }

    pub fn server(&self) -> &ServerName {
        &self.server
    }

    /// Every tool the server lists (all pages), with unique wire names.
    /// Bounded by the startup timeout. A server that declared no tools
    /// capability has none.
    pub async fn list_tools(&self) -> Result<Vec<ToolDecl>, McpError> {
        if self
            .service
            .peer_info()
            .is_some_and(|info| info.capabilities.tools.is_none())
        {
            return Ok(Vec::new());
        }
        let listing = self.service.peer().list_all_tools();
        let tools = match tokio::time::timeout(self.startup_timeout, listing).await {
            Err(_) => {
                return Err(McpError::Protocol(format!(
                    "MCP server `{}` did not list its tools within {} s",
                    self.server,
                    self.startup_timeout.as_secs()
                )));
            }
            Ok(listed) => {
                listed.map_err(|e| McpError::from_service(&self.server, "tools/list", e))?
            }
        };
        let mut decls: Vec<ToolDecl> = tools
            .into_iter()
            .map(|tool| ToolDecl::from_listed(&self.server, tool))
            .collect();
        dedup_wire_names(&mut decls);
        Ok(decls)
    }

    /// Calls `tool` (the server's own name) with `arguments` (an object,
    /// or null for none). The result is converted for the model, not
    /// capped (see `result::cap`). Cancelling `cancel`, or `timeout`
    /// passing, returns [`McpError::Cancelled`] or [`McpError::Timeout`]
    /// once the server has been sent `notifications/cancelled`.
    pub async fn call(
        &self,
        tool: &str,
        arguments: Value,
        timeout: Duration,
        cancel: CancellationToken,
    ) -> Result<CallOutput, McpError> {
        let mut params = CallToolRequestParams::new(tool.to_string());
        match arguments {
            Value::Object(map) => params.arguments = Some(map),
            Value::Null => {}
            other => {
                return Err(McpError::Tool(format!(
                    "the input of an MCP tool is a JSON object, not {}",
                    json_kind(&other)
                )));
            }
        }
        if cancel.is_cancelled() {
            return Err(McpError::Cancelled);
        }
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let handle = self
            .service
            .peer()
            .send_request_with_option(request, PeerRequestOptions::no_options())
            .await
            .map_err(|e| McpError::from_service(&self.server, "tools/call", e))?;
        let mut pending = PendingCall::new(handle);
        let answer = tokio::select! {
            biased;
            () = cancel.cancelled() => None,
            answer = tokio::time::timeout(timeout, pending.answer()) => Some(answer),
        };
        match answer {
            None => {
                pending
                    .cancel("the agent was interrupted or cancelled")
                    .await;
                Err(McpError::Cancelled)
            }
            Some(Err(_)) => {
                pending.cancel("the call timed out").await;
                Err(McpError::Timeout(timeout))
            }
            Some(Ok(answer)) => {
                pending.disarm();
                match answer {
                    Ok(result) => tool_result(result).map(CallOutput::from).ok_or_else(|| {
                        McpError::Protocol(format!(
                            "MCP server `{}` answered tools/call with something other than a tool result",
                            self.server
                        ))
                    }),
                    Err(e) => Err(McpError::from_service(&self.server, "tools/call", e)),
                }
            }
        }
    }

    /// The connection is gone (the server exited, the session was closed):
    /// no call can succeed on it.
    pub fn is_closed(&self) -> bool {
        self.service.is_closed() || self.service.peer().is_transport_closed()
    }

    /// Ends the session: closes the connection (for stdio, the server's
    /// stdin, which tells it to exit; the caller reaps the process).
    pub async fn close(self) {
        let mut service = self.service;
        if let Err(e) = service.close_with_timeout(CLOSE_GRACE).await {
            tracing::debug!(server = %self.server, error = %e, "MCP session did not close cleanly");
        }
    }
}

/// A `tools/call` in flight: its answer to come, and the request to cancel
/// on the server if the caller stops waiting for it. Dropped armed (the
/// call's future dropped), it sends the cancellation in the background.
struct PendingCall {
    answer: tokio::sync::oneshot::Receiver<Result<ServerResult, ServiceError>>,
    /// Who to tell and which request; None once answered or cancelled.
    armed: Option<(Peer<RoleClient>, RequestId)>,
}

impl PendingCall {
    fn new(handle: RequestHandle<RoleClient>) -> PendingCall {
        let RequestHandle { rx, peer, id, .. } = handle;
        PendingCall {
            answer: rx,
            armed: Some((peer, id)),
        }
    }

    /// The server's answer; a closed connection is one too.
    async fn answer(&mut self) -> Result<ServerResult, ServiceError> {
        (&mut self.answer)
            .await
            .unwrap_or(Err(ServiceError::TransportClosed))
    }

    fn disarm(&mut self) {
        self.armed = None;
    }

    /// Sends `notifications/cancelled` and waits (bounded) until it is
    /// written.
    async fn cancel(&mut self, reason: &str) {
        if let Some((peer, id)) = self.armed.take() {
            let sent = tokio::time::timeout(CANCEL_SEND_LIMIT, send_cancel(&peer, id, reason));
            if !matches!(sent.await, Ok(Ok(()))) {
                tracing::debug!(reason, "notifications/cancelled could not be sent");
            }
        }
    }
}

impl Drop for PendingCall {
    fn drop(&mut self) {
        let Some((peer, id)) = self.armed.take() else {
            return;
        };
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let _ = tokio::time::timeout(
                    CANCEL_SEND_LIMIT,
                    send_cancel(&peer, id, "the call was abandoned"),
                )
                .await;
            });
        }
    }
}

async fn send_cancel(
    peer: &Peer<RoleClient>,
    id: RequestId,
    reason: &str,
) -> Result<(), ServiceError> {
    let params = CancelledNotificationParam::new(Some(id), Some(reason.to_string()));
    peer.send_notification(CancelledNotification::new(params).into())
        .await
}

/// A `tools/call` answer as a tool result. An empty answer (`{}`, which
/// some servers send for a tool with nothing to say) is a result with no
/// content, as rmcp's own `call_tool` reads it.
fn tool_result(answer: ServerResult) -> Option<CallToolResult> {
    match answer {
        ServerResult::CallToolResult(result) => Some(result),
        ServerResult::EmptyResult(_) => Some(CallToolResult::default()),
        _ => None,
    }
}

#[cfg(test)]
mod tests;

fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
