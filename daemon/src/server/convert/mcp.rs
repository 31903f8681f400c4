//! MCP servers on the wire (DESIGN §18): an agent's, `ListMcpServers`'
//! reports, what `ApproveMcpServers` approved, and the definitions a
//! `CreateAgentRequest` passes, checked here by the same rules as
//! config.toml's.

use std::collections::HashSet;
use std::path::PathBuf;

use agentd_shared::proto as pb;

use crate::domain::{McpServerSummary, McpSource, McpTransport};
use crate::error::AgentdError;
use crate::mcp::{SandboxChoice, ServerDef, ServerName, Transport};
use crate::supervisor::{ApprovedServer, McpOrigin, McpReport, McpSelection, ReportState};

/// The most servers one request may pass.
const MAX_REQUESTED_SERVERS: usize = 64;

/// `CreateAgentRequest.mcp_servers`, each checked (name, transport, its
/// fields), names unique. They run with the defaults: under the agent's
/// sandbox (a request cannot opt out, config.toml can), 30 s to start,
/// 600 s a call.
pub fn requested_servers(
    defs: Vec<pb::McpServerDefinition>,
) -> Result<Vec<ServerDef>, AgentdError> {
    if defs.len() > MAX_REQUESTED_SERVERS {
        return Err(AgentdError::invalid(format!(
            "mcp_servers has {} servers; at most {MAX_REQUESTED_SERVERS} can be passed",
            defs.len()
        )));
    }
    let mut names = HashSet::with_capacity(defs.len());
    defs.into_iter()
        .enumerate()
        .map(|(i, def)| {
            let what = format!("mcp_servers[{i}] ({:?})", short(&def.name));
            let server = requested_server(def)
                .map_err(|why| AgentdError::invalid(format!("{what}: {why}")))?;
            if !names.insert(server.name.clone()) {
                return Err(AgentdError::invalid(format!(
                    "{what}: another server of this request has the same name; names must be unique"
                )));
            }
            Ok(server)
        })
        .collect()
}

/// A name as an error's subject: its first 32 characters (the reason after
/// it may quote more).
fn short(name: &str) -> String {
    let mut chars = name.chars();
    let head: String = chars.by_ref().take(32).collect();
    if chars.next().is_some() {
        format!("{head}…")
    } else {
        head
    }
}

fn requested_server(def: pb::McpServerDefinition) -> Result<ServerDef, String> {
    let name = ServerName::parse(&def.name)?;
    let transport = match def.transport {
        Some(pb::mcp_server_definition::Transport::Stdio(s)) => Transport::Stdio {
            command: s.command,
            args: s.args,
            env: s.env.into_iter().collect(),
            cwd: (!s.cwd.is_empty()).then(|| PathBuf::from(s.cwd)),
        },
        Some(pb::mcp_server_definition::Transport::Http(h)) => Transport::Http {
            url: h.url,
            headers: h.headers.into_iter().collect(),
        },
        None => {
            return Err(
                "no transport: set `stdio` (a command) or `http` (a streamable HTTP URL)".into(),
            );
        }
    };
    transport.check()?;
    Ok(ServerDef::new(name, transport))
}

pub fn agent_server(s: &McpServerSummary) -> pb::McpServerStatus {
    pb::McpServerStatus {
        name: s.name.clone(),
        transport: transport(s.transport) as i32,
        tools: s.tools,
        error: s.error.clone().unwrap_or_default(),
        sandboxed: s.sandboxed,
        source: source(s.source) as i32,
    }
}

fn source(s: McpSource) -> pb::McpSource {
    match s {
        McpSource::Config => pb::McpSource::Config,
        McpSource::Editor => pb::McpSource::Editor,
        McpSource::Repository => pb::McpSource::Repository,
        McpSource::AgentType => pb::McpSource::AgentType,
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
            McpOrigin::AgentType { .. } => pb::McpSource::AgentType,
        } as i32,
        transport: kind as i32,
        target,
        state: state as i32,
        tools,
        error,
        sandboxed: kind == pb::McpTransport::Stdio && r.def.sandbox != SandboxChoice::Off,
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

/// The longest agent type name a request may give.
const MAX_TYPE_NAME: usize = 128;

/// A request's `agent_type`: None when empty.
pub fn agent_type(name: &str) -> Result<Option<&str>, AgentdError> {
    if name.is_empty() {
        return Ok(None);
    }
    if name.chars().count() > MAX_TYPE_NAME || name.chars().any(char::is_control) {
        return Err(AgentdError::invalid(format!(
            "agent_type {:?} is not an agent type's name (at most {MAX_TYPE_NAME} characters, \
             no control characters)",
            crate::error::quote(name)
        )));
    }
    Ok(Some(name))
}

/// The most server names one approve or revoke request may give: more
/// than any `.mcp.json` defines in practice (`all` covers the rest), and
/// few enough that a request cannot hold the daemon up.
pub const MAX_SELECTED: usize = 256;

/// The servers an approve or revoke request names: exactly one of `names`
/// (each a valid server name, at most [`MAX_SELECTED`]; a name given
/// twice counts once) and `all`.
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
    if names.len() > MAX_SELECTED {
        return Err(AgentdError::invalid(format!(
            "{} server names given; at most {MAX_SELECTED} at once (or ask for `all`)",
            names.len()
        )));
    }
    let mut seen = HashSet::with_capacity(names.len());
    let mut parsed: Vec<ServerName> = Vec::with_capacity(names.len());
    for name in names {
        let name = ServerName::parse(name).map_err(AgentdError::invalid)?;
        if seen.insert(name.clone()) {
            parsed.push(name);
        }
    }
    Ok(McpSelection::Names(parsed))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stdio(name: &str, command: &str) -> pb::McpServerDefinition {
        pb::McpServerDefinition {
            name: name.into(),
            transport: Some(pb::mcp_server_definition::Transport::Stdio(
                pb::McpStdioServer {
                    command: command.into(),
                    args: vec!["server.py".into()],
                    env: [("TOKEN".to_string(), "t".to_string())].into(),
                    cwd: String::new(),
                },
            )),
        }
    }

    fn http(name: &str, url: &str) -> pb::McpServerDefinition {
        pb::McpServerDefinition {
            name: name.into(),
            transport: Some(pb::mcp_server_definition::Transport::Http(
                pb::McpHttpServer {
                    url: url.into(),
                    headers: [("Authorization".to_string(), "Bearer t".to_string())].into(),
                },
            )),
        }
    }

    fn refused(defs: Vec<pb::McpServerDefinition>) -> String {
        match requested_servers(defs) {
            Err(AgentdError::Invalid(why)) => why,
            other => panic!("not refused as invalid: {other:?}"),
        }
    }

    #[test]
    fn requested_servers_are_read_with_the_defaults() {
        let defs = requested_servers(vec![
            stdio("fx", "python3"),
            http("web", "http://127.0.0.1:9/mcp"),
        ])
        .unwrap();
        assert_eq!(defs.len(), 2);
        assert_eq!(
            defs[0],
            ServerDef::new(defs[0].name.clone(), defs[0].transport.clone())
        );
        assert_eq!(defs[0].sandbox, SandboxChoice::Agent);
        let Transport::Stdio { env, cwd, .. } = &defs[0].transport else {
            panic!("{:?}", defs[0]);
        };
        assert_eq!(env.get("TOKEN").map(String::as_str), Some("t"));
        assert_eq!(cwd, &None);
        assert_eq!(defs[1].transport.kind(), "http");
        assert!(requested_servers(Vec::new()).unwrap().is_empty());
    }

    #[test]
    fn malformed_requested_servers_are_invalid_and_quoted_short() {
        let why = refused(vec![pb::McpServerDefinition {
            name: "none".into(),
            transport: None,
        }]);
        assert!(
            why.contains("mcp_servers[0]") && why.contains("no transport"),
            "{why}"
        );
        assert!(refused(vec![stdio("a b", "x")]).contains("name"));
        assert!(refused(vec![stdio("fx", " ")]).contains("`command` is empty"));
        assert!(refused(vec![http("web", "ftp://h/mcp")]).contains("http://"));
        let mut bad_header = http("web", "http://h/mcp");
        if let Some(pb::mcp_server_definition::Transport::Http(h)) = &mut bad_header.transport {
            h.headers.insert("Mcp-Session-Id".into(), "s".into());
        }
        assert!(refused(vec![bad_header]).contains("Mcp-Session-Id"));
        let twice = refused(vec![stdio("fx", "a"), http("fx", "http://h/mcp")]);
        assert!(
            twice.contains("mcp_servers[1]") && twice.contains("unique"),
            "{twice}"
        );
        let many: Vec<_> = (0..65).map(|i| stdio(&format!("s{i}"), "x")).collect();
        assert!(refused(many).contains("at most 64"));
        let long = refused(vec![stdio(&"n".repeat(100_000), "x")]);
        assert!(
            long.len() < 400,
            "quotes only a prefix: {} bytes",
            long.len()
        );
        let long = refused(vec![http("web", &format!("ftp://{}", "h".repeat(100_000)))]);
        assert!(
            long.len() < 600,
            "quotes only a prefix: {} bytes",
            long.len()
        );
    }
}
