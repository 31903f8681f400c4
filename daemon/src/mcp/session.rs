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
//! caller's cancellation token. When either wins, the request's future is
//! dropped, and rmcp sends `notifications/cancelled` for it as it is dropped
//! (its guard for abandoned requests): the server is told to stop, and the
//! session stays usable for the next call.

use std::collections::HashMap;
use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation};
use rmcp::service::{RoleClient, RunningService};
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
    /// passing, returns [`McpError::Cancelled`] or [`McpError::Timeout`] at
    /// once, and the server is sent `notifications/cancelled`.
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
        // Dropping this future before it completes (a lost race below)
        // makes rmcp send `notifications/cancelled` for the request.
        let request = self.service.call_tool(params);
        tokio::select! {
            biased;
            () = cancel.cancelled() => Err(McpError::Cancelled),
            answer = tokio::time::timeout(timeout, request) => match answer {
                Err(_) => Err(McpError::Timeout(timeout)),
                Ok(Ok(result)) => Ok(CallOutput::from(result)),
                Ok(Err(e)) => Err(McpError::from_service(&self.server, "tools/call", e)),
            },
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
