//! How an agent's MCP servers are summarised on disk, inside its record
//! (`codec`, `StoredAgent` tag 39). Transport and source numbers are
//! on-disk format: never reuse or renumber them; one this agentd does not
//! know is corrupt.

use super::Corrupt;
use crate::domain::{McpServerSummary, McpSource, McpTransport};

#[derive(Clone, PartialEq, prost::Message)]
pub(super) struct StoredMcpServer {
    #[prost(string, tag = "1")]
    name: String,
    /// 1 stdio, 2 streamable HTTP.
    #[prost(int32, tag = "2")]
    transport: i32,
    #[prost(uint32, tag = "3")]
    tools: u32,
    #[prost(string, optional, tag = "4")]
    error: Option<String>,
    #[prost(bool, tag = "5")]
    sandboxed: bool,
    /// 0 config.toml (so records from before sources read as it), 1 the
    /// creation request (an editor's), 2 the repository's `.mcp.json`, 3 the
    /// agent's type.
    #[prost(int32, tag = "6")]
    source: i32,
}

fn source_number(s: McpSource) -> i32 {
    match s {
        McpSource::Config => 0,
        McpSource::Editor => 1,
        McpSource::Repository => 2,
        McpSource::AgentType => 3,
    }
}

fn transport_number(t: McpTransport) -> i32 {
    match t {
        McpTransport::Stdio => 1,
        McpTransport::Http => 2,
    }
}

pub(super) fn stored_mcp(servers: &[McpServerSummary]) -> Vec<StoredMcpServer> {
    servers
        .iter()
        .map(|s| StoredMcpServer {
            name: s.name.clone(),
            transport: transport_number(s.transport),
            tools: s.tools,
            error: s.error.clone(),
            sandboxed: s.sandboxed,
            source: source_number(s.source),
        })
        .collect()
}

pub(super) fn mcp_of(stored: Vec<StoredMcpServer>) -> Result<Vec<McpServerSummary>, Corrupt> {
    stored
        .into_iter()
        .map(|s| {
            let transport = [McpTransport::Stdio, McpTransport::Http]
                .into_iter()
                .find(|t| transport_number(*t) == s.transport)
                .ok_or(Corrupt::Field("mcp transport"))?;
            let source = [
                McpSource::Config,
                McpSource::Editor,
                McpSource::Repository,
                McpSource::AgentType,
            ]
            .into_iter()
            .find(|t| source_number(*t) == s.source)
            .ok_or(Corrupt::Field("mcp source"))?;
            Ok(McpServerSummary {
                name: s.name,
                transport,
                tools: s.tools,
                error: s.error,
                sandboxed: s.sandboxed,
                source,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summaries_round_trip_and_an_unknown_transport_or_source_is_corrupt() {
        let servers = vec![
            McpServerSummary {
                name: "fx".into(),
                transport: McpTransport::Stdio,
                tools: 8,
                error: None,
                sandboxed: true,
                source: McpSource::Config,
            },
            McpServerSummary {
                name: "web".into(),
                transport: McpTransport::Http,
                tools: 0,
                error: Some("connection refused".into()),
                sandboxed: false,
                source: McpSource::Editor,
            },
        ];
        assert_eq!(mcp_of(stored_mcp(&servers)).unwrap(), servers);
        let mut bad = stored_mcp(&servers);
        bad[0].transport = 7;
        assert!(matches!(mcp_of(bad), Err(Corrupt::Field("mcp transport"))));
        let mut bad = stored_mcp(&servers);
        bad[1].source = 9;
        assert!(matches!(mcp_of(bad), Err(Corrupt::Field("mcp source"))));
    }
}
