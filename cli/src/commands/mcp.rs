//! `agentctl mcp list [--json]`: the MCP servers a new agent here would
//! get, each started and asked for its tools now (DESIGN §18).

use agentd_shared::proto as pb;
use serde::Serialize;

use crate::autostart::Target;
use crate::commands::worktrees::client_dir;
use crate::exit::{Failure, SUCCESS};
use crate::view::render;

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    action: Action,
}

#[derive(Debug, clap::Subcommand)]
enum Action {
    /// Each server (from config.toml): where it comes from, how it is reached, whether it starts, and its tools.
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Serialize)]
struct ServerJson<'a> {
    name: &'a str,
    /// "config" (the only source `mcp list` reports now).
    source: &'static str,
    /// "stdio" or "http".
    transport: &'static str,
    target: &'a str,
    /// "ready", "failed" or "disabled".
    state: &'static str,
    tools: &'a [String],
    /// Why it failed; null otherwise.
    error: Option<&'a str>,
    sandboxed: bool,
}

pub async fn run(target: &Target, args: Args) -> Result<u8, Failure> {
    let Action::List { json } = args.action;
    let mut client = target.client().await?;
    let resp = client
        .list_mcp_servers(pb::ListMcpServersRequest { cwd: client_dir() })
        .await?
        .into_inner();
    if json {
        let servers: Vec<ServerJson<'_>> = resp.servers.iter().map(server_json).collect();
        render::print_json(&servers);
        return Ok(SUCCESS);
    }
    if resp.servers.is_empty() {
        println!("no MCP servers: add one as [mcp_servers.NAME] in config.toml");
        return Ok(SUCCESS);
    }
    for s in &resp.servers {
        let j = server_json(s);
        let confinement = if j.transport == "stdio" && !j.sandboxed {
            " · NOT SANDBOXED (sandbox = \"off\")"
        } else {
            ""
        };
        println!(
            "{} ({}, {}{confinement}): {}",
            j.name, j.source, j.transport, j.target
        );
        match (j.state, j.error) {
            ("ready", _) => println!("  ready · {} tools: {}", j.tools.len(), j.tools.join(", ")),
            (_, Some(why)) => println!("  {} · {why}", j.state),
            (state, None) => println!("  {state}"),
        }
    }
    Ok(SUCCESS)
}

/// How `show` and `mcp list` name where a server was defined.
pub(crate) fn source_name(source: i32) -> &'static str {
    match pb::McpSource::try_from(source) {
        Ok(pb::McpSource::Config) => "config",
        Ok(pb::McpSource::Editor) => "editor",
        _ => "unknown",
    }
}

fn server_json(s: &pb::McpServerReport) -> ServerJson<'_> {
    ServerJson {
        name: &s.name,
        source: source_name(s.source),
        transport: match pb::McpTransport::try_from(s.transport) {
            Ok(pb::McpTransport::Stdio) => "stdio",
            Ok(pb::McpTransport::Http) => "http",
            _ => "unknown",
        },
        target: &s.target,
        state: match pb::McpServerState::try_from(s.state) {
            Ok(pb::McpServerState::Ready) => "ready",
            Ok(pb::McpServerState::Failed) => "failed",
            Ok(pb::McpServerState::Disabled) => "disabled",
            _ => "unknown",
        },
        tools: &s.tools,
        error: (!s.error.is_empty()).then_some(s.error.as_str()),
        sandboxed: s.sandboxed,
    }
}
