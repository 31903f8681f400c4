//! MCP servers on the wire (DESIGN §18): an agent's, `ListMcpServers`'
//! reports, and what `ApproveMcpServers` approved.

use agentd_shared::proto as pb;

use crate::domain::{McpServerSummary, McpTransport};
use crate::error::AgentdError;
use crate::mcp::{SandboxChoice, ServerDef, ServerName, Transport};
use crate::supervisor::{ApprovedServer, McpOrigin, McpReport, McpSelection, ReportState};

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

/// How a server is reached, and the command line (stdio) or URL (HTTP)
/// listings show: what the person approves.
fn reached_by(def: &ServerDef) -> (pb::McpTransport, String) {
    match &def.transport {
        Transport::Stdio { command, args, .. } => {
            let mut line = vec![command.clone()];
            line.extend(args.iter().cloned());
            (pb::McpTransport::Stdio, line.join(" "))
        }
        Transport::Http { url, .. } => (pb::McpTransport::Http, url.clone()),
    }
}

pub fn server_report(r: &McpReport) -> pb::McpServerReport {
    let (kind, target) = reached_by(&r.def);
    let (state, tools, error) = match &r.state {
        ReportState::Disabled => (pb::McpServerState::Disabled, Vec::new(), String::new()),
        ReportState::Unapproved => (pb::McpServerState::Unapproved, Vec::new(), String::new()),
        ReportState::Listed(Ok(tools)) => (pb::McpServerState::Ready, tools.clone(), String::new()),
        ReportState::Listed(Err(why)) => (pb::McpServerState::Failed, Vec::new(), why.clone()),
    };
    pb::McpServerReport {
        name: r.def.name.as_str().to_string(),
        source: match r.origin {
            McpOrigin::Config => pb::McpSource::Config,
            McpOrigin::Repository => pb::McpSource::Repository,
        } as i32,
        transport: kind as i32,
        target,
        state: state as i32,
        tools,
        error,
        sandboxed: kind == pb::McpTransport::Stdio && r.def.sandbox == SandboxChoice::Agent,
    }
}

pub fn approved_server(a: &ApprovedServer) -> pb::ApprovedMcpServer {
    let (kind, target) = reached_by(&a.def);
    pb::ApprovedMcpServer {
        name: a.def.name.as_str().to_string(),
        transport: kind as i32,
        target,
        fingerprint: a.def.fingerprint(),
        already: a.already,
    }
}

/// The servers an approve or revoke request names: exactly one of `names`
/// (each a valid server name, none repeated) and `all`.
pub fn selection(names: &[String], all: bool) -> Result<McpSelection, AgentdError> {
    match (names.is_empty(), all) {
        (true, true) => return Ok(McpSelection::All),
        (false, true) => {
            return Err(AgentdError::invalid("give server names or `all`, not both"));
        }
        (true, false) => {
            return Err(AgentdError::invalid(
                "name the servers (or ask for `all` of them)",
            ));
        }
        (false, false) => {}
    }
    let mut parsed: Vec<ServerName> = Vec::with_capacity(names.len());
    for name in names {
        let name = ServerName::parse(name).map_err(AgentdError::invalid)?;
        if !parsed.contains(&name) {
            parsed.push(name);
        }
    }
    Ok(McpSelection::Names(parsed))
}
