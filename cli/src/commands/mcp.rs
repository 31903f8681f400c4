//! `agentctl mcp list|approve|revoke`: the MCP servers a new agent here
//! would get, each started and asked for its tools now; and the approval
//! a repository's `.mcp.json` servers need before they run (DESIGN §18).

use std::path::PathBuf;

use agentd_shared::proto as pb;
use serde::Serialize;

use crate::autostart::Target;
use crate::exit::{Failure, SUCCESS};
use crate::view::render;

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    action: Action,
}

#[derive(Debug, clap::Subcommand)]
enum Action {
    /// Each server (config.toml's, then the repository's .mcp.json): where it comes from, how it is reached, whether it starts, and its tools. A repository's server is not started until approved.
    List {
        /// Print JSON (notes go to stderr).
        #[arg(long)]
        json: bool,
        /// The directory agents would work in [default: the current directory].
        #[arg(long)]
        cwd: Option<PathBuf>,
        /// Also the servers of this agent type's front matter (mcpServers), as its subagents would get them.
        #[arg(long = "type", value_name = "AGENT_TYPE")]
        agent_type: Option<String>,
    },
    /// End a server's session in every running agent that has it; each starts it again at its next call.
    Restart {
        /// The server's name.
        name: String,
    },
    /// Approve servers of the repository's .mcp.json (or, with --type, of an agent type file in the repository), as defined now, for agents made from now on; a changed definition needs approving again.
    Approve(Selection),
    /// Forget approvals of the repository's servers (agents made before keep theirs).
    Revoke(Selection),
}

#[derive(Debug, clap::Args)]
struct Selection {
    /// Server names.
    #[arg(required_unless_present = "all", conflicts_with = "all")]
    names: Vec<String>,
    /// Every server.
    #[arg(long)]
    all: bool,
    /// A directory in the repository [default: the current directory].
    #[arg(long)]
    cwd: Option<PathBuf>,
    /// The servers of this agent type's front matter (mcpServers) instead of .mcp.json's.
    #[arg(long = "type", value_name = "AGENT_TYPE")]
    agent_type: Option<String>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Serialize)]
struct ServerJson<'a> {
    name: &'a str,
    /// "config", "repository", "editor" or "agent_type".
    source: &'static str,
    /// "stdio" or "http".
    transport: &'static str,
    target: &'a str,
    /// "ready", "failed", "disabled" or "unapproved".
    state: &'static str,
    tools: &'a [String],
    /// Why it failed; null otherwise.
    error: Option<&'a str>,
    sandboxed: bool,
}

#[derive(Serialize)]
struct ApprovedJson<'a> {
    repository: &'a str,
    servers: Vec<ApprovedServerJson<'a>>,
}

#[derive(Serialize)]
struct ApprovedServerJson<'a> {
    name: &'a str,
    transport: &'static str,
    target: &'a str,
    fingerprint: &'a str,
    /// It was approved already, as defined now.
    already: bool,
}

#[derive(Serialize)]
struct RevokedJson<'a> {
    repository: &'a str,
    names: &'a [String],
}

pub async fn run(target: &Target, args: Args) -> Result<u8, Failure> {
    match args.action {
        Action::List {
            json,
            cwd,
            agent_type,
        } => list(target, json, cwd, agent_type).await,
        Action::Approve(s) => approve(target, s).await,
        Action::Revoke(s) => revoke(target, s).await,
        Action::Restart { name } => restart(target, name).await,
    }
}

async fn restart(target: &Target, name: String) -> Result<u8, Failure> {
    let mut client = target.client().await?;
    let ended = client
        .restart_mcp_server(pb::RestartMcpServerRequest { name: name.clone() })
        .await?
        .into_inner()
        .ended;
    say!("{name}: {ended} running server(s) ended; each agent starts it again at its next call");
    Ok(SUCCESS)
}

async fn list(
    target: &Target,
    json: bool,
    cwd: Option<PathBuf>,
    agent_type: Option<String>,
) -> Result<u8, Failure> {
    let cwd = crate::client_dir::given_or_current(cwd)?;
    let mut client = target.client().await?;
    let resp = client
        .list_mcp_servers(pb::ListMcpServersRequest {
            cwd,
            agent_type: agent_type.clone().unwrap_or_default(),
        })
        .await?
        .into_inner();
    if json {
        let servers: Vec<ServerJson<'_>> = resp.servers.iter().map(server_json).collect();
        render::print_json(&servers);
        for note in &resp.notes {
            say_err!("agentctl: note: {note}");
        }
        return Ok(SUCCESS);
    }
    if resp.servers.is_empty() {
        say!(
            "no MCP servers: add one as [mcp_servers.NAME] in config.toml, or in a repository's .mcp.json"
        );
    }
    for s in &resp.servers {
        print_server(s, agent_type.as_deref());
    }
    let unapproved: Vec<&pb::McpServerReport> = resp
        .servers
        .iter()
        .filter(|s| s.state == pb::McpServerState::Unapproved as i32)
        .collect();
    if !unapproved.is_empty() {
        let of_type = match &agent_type {
            Some(t)
                if unapproved
                    .iter()
                    .all(|s| s.source == pb::McpSource::AgentType as i32) =>
            {
                format!("--type {t} ")
            }
            _ => String::new(),
        };
        say!(
            "A repository's servers run only once approved, as defined now: \
             `agentctl mcp approve {of_type}NAME` (or --all) in {}.",
            resp.repository
        );
    }
    for note in &resp.notes {
        say!("note: {note}");
    }
    Ok(SUCCESS)
}

fn print_server(s: &pb::McpServerReport, agent_type: Option<&str>) {
    let j = server_json(s);
    let confinement = if j.transport == "stdio" && !j.sandboxed {
        " · NOT SANDBOXED (sandbox = \"off\")"
    } else {
        ""
    };
    say!(
        "{} ({}, {}{confinement}): {}",
        j.name,
        j.source,
        j.transport,
        j.target
    );
    match (j.state, j.error) {
        ("ready", _) => say!("  ready · {} tools: {}", j.tools.len(), j.tools.join(", ")),
        ("unapproved", _) => {
            let of_type = match agent_type {
                Some(t) if s.source == pb::McpSource::AgentType as i32 => format!("--type {t} "),
                _ => String::new(),
            };
            say!(
                "  unapproved · not started; `agentctl mcp approve {of_type}{}` approves it",
                j.name
            )
        }
        (_, Some(why)) => say!("  {} · {why}", j.state),
        (state, None) => say!("  {state}"),
    }
}

async fn approve(target: &Target, s: Selection) -> Result<u8, Failure> {
    let cwd = crate::client_dir::given_or_current(s.cwd)?;
    let mut client = target.client().await?;
    let resp = client
        .approve_mcp_servers(pb::ApproveMcpServersRequest {
            cwd,
            names: s.names,
            all: s.all,
            agent_type: s.agent_type.unwrap_or_default(),
        })
        .await?
        .into_inner();
    if s.json {
        render::print_json(&ApprovedJson {
            repository: &resp.repository,
            servers: resp
                .servers
                .iter()
                .map(|a| ApprovedServerJson {
                    name: &a.name,
                    transport: transport_name(a.transport),
                    target: &a.target,
                    fingerprint: &a.fingerprint,
                    already: a.already,
                })
                .collect(),
        });
        return Ok(SUCCESS);
    }
    for a in &resp.servers {
        let what = if a.already {
            "approved already"
        } else {
            "approved"
        };
        say!(
            "{} ({}): {what}: {}",
            a.name,
            transport_name(a.transport),
            a.target
        );
    }
    say!(
        "New agents in {} get these servers; a changed definition needs approving again.",
        resp.repository
    );
    Ok(SUCCESS)
}

async fn revoke(target: &Target, s: Selection) -> Result<u8, Failure> {
    let cwd = crate::client_dir::given_or_current(s.cwd)?;
    let mut client = target.client().await?;
    let resp = client
        .revoke_mcp_servers(pb::RevokeMcpServersRequest {
            cwd,
            names: s.names,
            all: s.all,
            agent_type: s.agent_type.unwrap_or_default(),
        })
        .await?
        .into_inner();
    if s.json {
        render::print_json(&RevokedJson {
            repository: &resp.repository,
            names: &resp.names,
        });
        return Ok(SUCCESS);
    }
    if resp.names.is_empty() {
        say!("no server is approved for {}", resp.repository);
    } else {
        say!(
            "revoked for {}: {} (agents made before keep theirs)",
            resp.repository,
            resp.names.join(", ")
        );
    }
    Ok(SUCCESS)
}

fn transport_name(t: i32) -> &'static str {
    match pb::McpTransport::try_from(t) {
        Ok(pb::McpTransport::Stdio) => "stdio",
        Ok(pb::McpTransport::Http) => "http",
        _ => "unknown",
    }
}

/// How `show` and `mcp list` name where a server was defined.
pub(crate) fn source_name(source: i32) -> &'static str {
    match pb::McpSource::try_from(source) {
        Ok(pb::McpSource::Config) => "config",
        Ok(pb::McpSource::Repository) => "repository",
        Ok(pb::McpSource::Editor) => "editor",
        Ok(pb::McpSource::AgentType) => "agent_type",
        _ => "unknown",
    }
}

fn server_json(s: &pb::McpServerReport) -> ServerJson<'_> {
    ServerJson {
        name: &s.name,
        source: source_name(s.source),
        transport: transport_name(s.transport),
        target: &s.target,
        state: match pb::McpServerState::try_from(s.state) {
            Ok(pb::McpServerState::Ready) => "ready",
            Ok(pb::McpServerState::Failed) => "failed",
            Ok(pb::McpServerState::Disabled) => "disabled",
            Ok(pb::McpServerState::Unapproved) => "unapproved",
            _ => "unknown",
        },
        tools: &s.tools,
        error: (!s.error.is_empty()).then_some(s.error.as_str()),
        sandboxed: s.sandboxed,
    }
}
