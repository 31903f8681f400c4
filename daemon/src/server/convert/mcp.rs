//! MCP servers on the wire (DESIGN §18): an agent's, and `ListMcpServers`'
//! reports.

use agentd_shared::proto as pb;

use crate::domain::{McpServerSummary, McpTransport};
use crate::mcp::{SandboxChoice, Transport};
use crate::supervisor::McpReport;

pub fn agent_server(s: &McpServerSummary) -> pb::McpServerStatus {
    pb::McpServerStatus {
        name: s.name.clone(),
        transport: transport(s.transport) as i32,
        tools: s.tools,
        error: s.error.clone().unwrap_or_default(),
        sandboxed: s.sandboxed,
    }
}

fn transport(t: McpTransport) -> pb::McpTransport {
    match t {
        McpTransport::Stdio => pb::McpTransport::Stdio,
        McpTransport::Http => pb::McpTransport::Http,
    }
}

pub fn server_report(r: &McpReport) -> pb::McpServerReport {
    let (kind, target, stdio) = match &r.def.transport {
        Transport::Stdio { command, args, .. } => {
            let mut line = vec![command.clone()];
            line.extend(args.iter().cloned());
            (McpTransport::Stdio, line.join(" "), true)
        }
        Transport::Http { url, .. } => (McpTransport::Http, url.clone(), false),
    };
    let (state, tools, error) = match &r.listed {
        None => (pb::McpServerState::Disabled, Vec::new(), String::new()),
        Some(Ok(tools)) => (pb::McpServerState::Ready, tools.clone(), String::new()),
        Some(Err(why)) => (pb::McpServerState::Failed, Vec::new(), why.clone()),
    };
    pb::McpServerReport {
        name: r.def.name.as_str().to_string(),
        source: pb::McpSource::Config as i32,
        transport: transport(kind) as i32,
        target,
        state: state as i32,
        tools,
        error,
        sandboxed: stdio && r.def.sandbox == SandboxChoice::Agent,
    }
}
