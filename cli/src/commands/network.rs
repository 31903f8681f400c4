//! `agentctl network AGENT`: the connections an agent's tools made or
//! tried through its network proxy, with each decision and why;
//! `agentctl network defaults`: what every proxy allows without asking.

use agentd_shared::proto as pb;
use serde::Serialize;

use crate::autostart::Target;
use crate::exit::{Failure, SUCCESS};
use crate::view::network::{connection_line, mode_name};
use crate::view::render::{self, rfc3339};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Agent id, unique id prefix or name; `defaults` prints the hosts
    /// every agent's proxy allows (built in, config.toml, answered for
    /// every agent).
    id: String,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

pub async fn run(target: &Target, args: Args) -> Result<u8, Failure> {
    let mut client = target.client().await?;
    if args.id == "defaults" {
        let policy = client
            .get_network_policy(pb::GetNetworkPolicyRequest {})
            .await?
            .into_inner();
        print_policy(&policy, args.json);
        return Ok(SUCCESS);
    }
    let found = client
        .list_connections(pb::ListConnectionsRequest { id: args.id })
        .await?
        .into_inner();
    if args.json {
        render::print_json(&ConnectionsJson {
            connections: found.connections.iter().map(ConnectionJson::of).collect(),
            allowed_always: &found.allowed_always,
        });
        return Ok(SUCCESS);
    }
    if found.connections.is_empty() {
        say!("no connections through its proxy");
    }
    for c in &found.connections {
        say!("{}", connection_line(c));
    }
    if !found.allowed_always.is_empty() {
        say!(
            "answered always for this agent: {}",
            found.allowed_always.join(", ")
        );
    }
    Ok(SUCCESS)
}

fn print_policy(p: &pb::NetworkPolicy, json: bool) {
    if json {
        render::print_json(&PolicyJson {
            default_mode: mode_name(p.default_mode),
            built_in: p.built_in.iter().map(EntryJson::of).collect(),
            config: p.config.iter().map(EntryJson::of).collect(),
            every_agent: p.every_agent.iter().map(EntryJson::of).collect(),
        });
        return;
    }
    say!("default network: {}", mode_name(p.default_mode));
    for (title, list) in [
        ("built in", &p.built_in),
        ("config.toml [network] allow", &p.config),
        ("answered: allow for every agent", &p.every_agent),
    ] {
        say!("{title}:");
        if list.is_empty() {
            say!("  (none)");
        }
        for e in list {
            say!("  {:<40} {}", e.pattern, e.purpose);
        }
    }
}

#[derive(Serialize)]
struct ConnectionsJson<'a> {
    connections: Vec<ConnectionJson<'a>>,
    allowed_always: &'a [String],
}

#[derive(Serialize)]
struct ConnectionJson<'a> {
    seq: u64,
    agent_id: &'a str,
    host: &'a str,
    port: u32,
    method: &'a str,
    decision: &'static str,
    reason: &'a str,
    bytes_sent: u64,
    bytes_received: u64,
    started_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    ended_at: Option<String>,
    #[serde(skip_serializing_if = "str::is_empty")]
    error: &'a str,
    cut_off: bool,
}

impl<'a> ConnectionJson<'a> {
    fn of(c: &'a pb::NetworkConnection) -> Self {
        ConnectionJson {
            seq: c.seq,
            agent_id: &c.agent_id,
            host: &c.host,
            port: c.port,
            method: &c.method,
            decision: crate::view::network::decision_name(c.decision),
            reason: &c.reason,
            bytes_sent: c.bytes_sent,
            bytes_received: c.bytes_received,
            started_at: rfc3339(c.started_at.as_ref()),
            ended_at: c.ended_at.as_ref().map(|t| rfc3339(Some(t))),
            error: &c.error,
            cut_off: c.cut_off,
        }
    }
}

#[derive(Serialize)]
struct PolicyJson<'a> {
    default_mode: &'static str,
    built_in: Vec<EntryJson<'a>>,
    config: Vec<EntryJson<'a>>,
    every_agent: Vec<EntryJson<'a>>,
}

#[derive(Serialize)]
struct EntryJson<'a> {
    pattern: &'a str,
    purpose: &'a str,
}

impl<'a> EntryJson<'a> {
    fn of(e: &'a pb::NetworkAllowEntry) -> Self {
        EntryJson {
            pattern: &e.pattern,
            purpose: &e.purpose,
        }
    }
}
