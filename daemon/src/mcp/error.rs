//! What can go wrong with an MCP server, in words the model (or a person
//! reading `agentctl mcp list`) can act on. Anything the server sent is
//! quoted only as a short prefix ([`crate::domain::text::quote`]): a server controls
//! those bytes and their size.

use std::time::Duration;

use rmcp::ServiceError;
use rmcp::service::ClientInitializeError;

use super::def::ServerName;
use crate::domain::text::quote;

#[derive(Debug, thiserror::Error)]
pub enum McpError {
    /// The server could not be started or did not finish the handshake.
    #[error("{0}")]
    Start(String),
    /// The connection is gone: the server exited, or its HTTP session ended.
    #[error("{0}")]
    Closed(String),
    /// The call ran past its timeout; the server was told to cancel it.
    #[error(
        "the MCP tool call did not finish within {} and was cancelled; do less in one \
         call, or try another way",
        seconds(*.0)
    )]
    Timeout(Duration),
    /// The caller cancelled the call; the server was told.
    #[error("the MCP tool call was cancelled")]
    Cancelled,
    /// The server broke the protocol (an answer of the wrong kind, an error
    /// where a listing should be).
    #[error("{0}")]
    Protocol(String),
    /// The server refused the call with a protocol error (an unknown tool,
    /// arguments that do not fit its schema), or the call could not be sent
    /// as given.
    #[error("{0}")]
    Tool(String),
}

fn seconds(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{} s", d.as_secs())
    } else {
        format!("{:.3} s", d.as_secs_f64())
    }
}

impl McpError {
    /// A handshake that failed.
    pub(super) fn from_init(server: &ServerName, e: ClientInitializeError) -> McpError {
        let why = match &e {
            ClientInitializeError::ConnectionClosed(_) => {
                "it closed the connection before answering (check that the command runs \
                 and speaks MCP on stdout)"
                    .to_string()
            }
            ClientInitializeError::JsonRpcError(data) => format!(
                "it refused to initialize: {} (error {})",
                quote(&data.message),
                data.code.0
            ),
            other => quote(&other.to_string()),
        };
        McpError::Start(format!("MCP server `{server}` did not start: {why}"))
    }

    /// A handshake still unanswered after `timeout`.
    pub(super) fn start_timeout(server: &ServerName, timeout: Duration) -> McpError {
        McpError::Start(format!(
            "MCP server `{server}` did not finish starting within {}",
            seconds(timeout)
        ))
    }

    /// A request (`during`: "tools/call", "tools/list") that failed.
    pub(super) fn from_service(server: &ServerName, during: &str, e: ServiceError) -> McpError {
        match e {
            ServiceError::TransportClosed | ServiceError::Cancelled { .. } => {
                McpError::Closed(closed(server, during))
            }
            ServiceError::TransportSend(e) => McpError::Closed(format!(
                "{} ({})",
                closed(server, during),
                quote(&e.error.to_string())
            )),
            ServiceError::Timeout { timeout } => McpError::Timeout(timeout),
            ServiceError::McpError(data) if during == "tools/call" => McpError::Tool(format!(
                "MCP server `{server}` refused the call: {} (error {})",
                quote(&data.message),
                data.code.0
            )),
            ServiceError::McpError(data) => McpError::Protocol(format!(
                "MCP server `{server}` answered {during} with an error: {} (error {})",
                quote(&data.message),
                data.code.0
            )),
            ServiceError::UnexpectedResponse => McpError::Protocol(format!(
                "MCP server `{server}` answered {during} with something other than its result"
            )),
            other => McpError::Protocol(format!(
                "MCP server `{server}` failed in {during}: {}",
                quote(&other.to_string())
            )),
        }
    }
}

fn closed(server: &ServerName, during: &str) -> String {
    format!(
        "MCP server `{server}` closed the connection during {during} (it may have exited); \
         its tools cannot be used until it is started again"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_server_and_quote_little_of_what_it_sent() {
        let server = ServerName::parse("fs").unwrap();
        let huge = "x".repeat(100_000);
        let data = rmcp::ErrorData::invalid_params(huge, None);
        let e = McpError::from_service(&server, "tools/call", ServiceError::McpError(data));
        assert!(matches!(e, McpError::Tool(_)));
        let msg = e.to_string();
        assert!(
            msg.starts_with("MCP server `fs` refused the call: xxx"),
            "{msg}"
        );
        assert!(msg.len() < 400, "{}", msg.len());

        let e = McpError::from_service(&server, "tools/call", ServiceError::TransportClosed);
        assert!(matches!(e, McpError::Closed(_)));
        assert!(e.to_string().contains("`fs` closed the connection"), "{e}");
    }

    #[test]
    fn timeouts_say_how_long() {
        let e = McpError::Timeout(Duration::from_secs(600));
        assert!(e.to_string().contains("within 600 s"), "{e}");
        let e = McpError::Timeout(Duration::from_millis(1500));
        assert!(e.to_string().contains("within 1.500 s"), "{e}");
    }
}
