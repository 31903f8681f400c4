//! `agentctl show`

use agentd_shared::proto as pb;
use agentd_shared::visible;

use serde::Serialize;

use crate::autostart::Target;
use crate::exit::{Failure, SUCCESS};
use crate::view::cost::{self, CostJson};
use crate::view::status;
use crate::view::{plan, render, worktree};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Agent id, unique id prefix, or name.
    id: String,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// `show --json`: the agent, with its cost and its family's.
#[derive(Serialize)]
struct ShowJson<'a> {
    #[serde(flatten)]
    agent: render::AgentJson<'a>,
    /// Null when its model has no price and it reported no cost.
    cost: Option<CostJson>,
    /// `cost` is its external agent's own figure, not agentd's pricing.
    cost_reported: bool,
    family: FamilyJson,
    /// The instruction files its system prompt holds.
    instructions: Vec<InstructionJson<'a>>,
    instruction_notes: &'a [String],
    instructions_skipped: bool,
    compactions: u32,
    /// Its MCP servers, as listed when it was made.
    mcp_servers: Vec<McpServerJson<'a>>,
    /// What it was not given of its MCP servers and why (a repository's
    /// server not approved, a `.mcp.json` that could not be read).
    mcp_notes: &'a [String],
}

#[derive(Serialize)]
struct McpServerJson<'a> {
    name: &'a str,
    /// "stdio" or "http".
    transport: &'static str,
    tools: u32,
    /// Why it offered no tools; null when it listed them.
    error: Option<&'a str>,
    sandboxed: bool,
    /// "config" (config.toml) or "editor" (passed when the agent was made).
    source: &'static str,
}

#[derive(Serialize)]
struct InstructionJson<'a> {
    path: &'a str,
    bytes: u64,
    cut: bool,
}

/// The agent and all its descendants.
#[derive(Serialize)]
struct FamilyJson {
    agents: usize,
    requests: u64,
    usage: render::UsageJson,
    cost: CostJson,
}

pub async fn run(target: &Target, args: Args) -> Result<u8, Failure> {
    let mut client = target.client().await?;
    let a = client
        .get_agent(pb::GetAgentRequest { id: args.id })
        .await?
        .into_inner();
    let family = client
        .get_usage(pb::GetUsageRequest {
            id: a.id.clone(),
            family: true,
        })
        .await?
        .into_inner();
    let own = family.agents.first().cloned().unwrap_or_default();
    if args.json {
        print_json(&a, &own, &family);
    } else {
        let status = client
            .get_status(pb::GetStatusRequest {})
            .await?
            .into_inner();
        print_text(&a, &own, &family, &status);
    }
    Ok(SUCCESS)
}

fn print_json(a: &pb::Agent, own: &pb::AgentUsage, family: &pb::UsageReport) {
    render::print_json(&ShowJson {
        agent: render::AgentJson::of(a),
        cost: own.cost.as_ref().map(CostJson::of),
        cost_reported: own.cost_reported,
        family: FamilyJson {
            agents: family.agents.len(),
            requests: family.requests,
            usage: render::UsageJson::of(family.total.as_ref()),
            cost: CostJson::of(&family.cost.unwrap_or_default()),
        },
        instructions: a
            .instructions
            .iter()
            .map(|f| InstructionJson {
                path: &f.path,
                bytes: f.bytes,
                cut: f.cut,
            })
            .collect(),
        instruction_notes: &a.instruction_notes,
        instructions_skipped: a.instructions_skipped,
        compactions: a.compactions,
        mcp_servers: a
            .mcp_servers
            .iter()
            .map(|s| McpServerJson {
                name: &s.name,
                transport: transport_name(s.transport),
                tools: s.tools,
                error: (!s.error.is_empty()).then_some(s.error.as_str()),
                sandboxed: s.sandboxed,
                source: crate::commands::mcp::source_name(s.source),
            })
            .collect(),
        mcp_notes: &a.mcp_notes,
    });
}

fn transport_name(t: i32) -> &'static str {
    match pb::McpTransport::try_from(t) {
        Ok(pb::McpTransport::Stdio) => "stdio",
        Ok(pb::McpTransport::Http) => "http",
        _ => "unknown",
    }
}

/// One line per MCP server: name, transport, tools or why none; then
/// what it was not given.
fn mcp_line(a: &pb::Agent) -> String {
    a.mcp_servers
        .iter()
        .map(|s| {
            let what = if s.error.is_empty() {
                format!("{} tools", s.tools)
            } else {
                format!("no tools: {}", visible::line(&s.error))
            };
            let unconfined = if !s.sandboxed && s.transport == pb::McpTransport::Stdio as i32 {
                ", not sandboxed"
            } else {
                ""
            };
            let from = match crate::commands::mcp::source_name(s.source) {
                "config" => String::new(),
                other => format!(", {other}"),
            };
            format!(
                "{} ({}{unconfined}{from}) · {what}",
                visible::line(&s.name),
                transport_name(s.transport)
            )
        })
        .chain(
            a.mcp_notes
                .iter()
                .map(|n| format!("note: {}", visible::line(n))),
        )
        .collect::<Vec<_>>()
        .join("\n               ")
}

/// Who runs an external agent (DESIGN §19) and its own session id.
fn external_line(a: &pb::Agent) -> String {
    match (a.executor.as_str(), a.external_session_id.as_str()) {
        ("", _) => String::new(),
        (name, "") => format!("{} over ACP (no session yet)", visible::line(name)),
        (name, session) => format!(
            "{} over ACP, its session {}",
            visible::line(name),
            visible::line(session)
        ),
    }
}

/// One `key: value` line per field that has a value, then the plan, then
/// the result. A value that is anyone's but the daemon's (a name, a
/// description, an error, a path) is made visible in one line, so it
/// cannot print as a line of its own.
fn print_text(
    a: &pb::Agent,
    own: &pb::AgentUsage,
    family: &pb::UsageReport,
    status: &pb::DaemonStatus,
) {
    let u = a.usage.unwrap_or_default();
    let one = |s: &str| visible::line(s).into_owned();
    let mut lines = vec![
        ("id", one(&a.id)),
        ("name", one(&a.name)),
        ("description", one(&a.description)),
        ("status", status::name(a.status).to_string()),
        ("model", one(&a.model)),
        ("run by", external_line(a)),
        ("cwd", one(&a.cwd)),
        ("sandbox", crate::view::sandbox::line(a)),
        ("network", crate::view::network::line(a)),
        (
            "reads",
            if a.sandbox == pb::SandboxMode::Off as i32 {
                String::new()
            } else {
                crate::view::sandbox::reads_line(status)
            },
        ),
        (
            "worktree",
            a.worktree.as_ref().map(worktree_line).unwrap_or_default(),
        ),
        ("background", a.background.to_string()),
        ("parent", one(&a.parent_id)),
        ("created", render::rfc3339(a.created_at.as_ref())),
        ("updated", render::rfc3339(a.updated_at.as_ref())),
        ("turns", format!("{} of at most {}", a.turns, a.max_turns)),
        ("tool calls", a.tool_uses.to_string()),
        ("transcript", format!("{} entries", a.transcript_len)),
        ("instructions", instructions_line(a)),
        ("mcp servers", mcp_line(a)),
        (
            "compactions",
            if a.compactions == 0 {
                String::new()
            } else {
                a.compactions.to_string()
            },
        ),
        (
            "usage",
            format!(
                "input {} · output {} · cache read {} · cache write {}",
                u.input_tokens,
                u.output_tokens,
                u.cache_read_input_tokens,
                u.cache_creation_input_tokens
            ),
        ),
        (
            "cost",
            cost::agent_cost_line(own).unwrap_or_else(|| format!("no price for {}", one(&a.model))),
        ),
        ("family", family_line(family)),
        (
            "budget",
            a.budget
                .as_ref()
                .map(|b| {
                    render::budget_line(b)
                        .trim_start_matches("budget: ")
                        .to_string()
                })
                .unwrap_or_default(),
        ),
        ("can message", a.can_message.to_string()),
        (
            "resume blocked",
            match render::resume_blocked_name(a.resume_blocked_reason) {
                Some(reason) => format!("{reason}: {}", one(&a.resume_blocked_detail)),
                None => String::new(),
            },
        ),
        ("error", one(&a.error)),
        ("waiting for", one(&a.waiting_for)),
    ];
    lines.retain(|(_, v)| !v.is_empty());
    for (k, v) in lines {
        // The joined values are made of parts made visible above; this
        // is for what a part may have missed.
        println!("{:<15}{}", format!("{k}:"), visible::text(&v));
    }
    print!("{}", plan::block(&a.plan));
    if !a.result.is_empty() {
        println!("result:\n{}", visible::text(&a.result));
    }
}

/// The instruction files loaded, each with its size (and a mark when
/// cut), then what was left out; or why there are none.
fn instructions_line(a: &pb::Agent) -> String {
    if a.instructions_skipped {
        return "none (made with --no-instructions or instructions = false)".into();
    }
    let mut parts: Vec<String> = a
        .instructions
        .iter()
        .map(|f| {
            let cut = if f.cut { ", cut" } else { "" };
            format!("{} ({} bytes{cut})", visible::line(&f.path), f.bytes)
        })
        .collect();
    parts.extend(
        a.instruction_notes
            .iter()
            .map(|n| format!("note: {}", visible::line(n))),
    );
    if parts.is_empty() {
        return "none found".into();
    }
    parts.join("\n               ")
}

/// "path · branch B from BASE · state (work)", and the notice on a line
/// of its own.
fn worktree_line(w: &pb::AgentWorktree) -> String {
    format!(
        "{} · branch {}{} · {}{}",
        visible::line(&w.path),
        visible::line(&w.branch),
        if w.base.is_empty() {
            String::new()
        } else {
            format!(" from {}", worktree::base_label(&w.base))
        },
        worktree::state_name(w.state),
        match pb::WorktreeState::try_from(w.state).unwrap_or_default() {
            pb::WorktreeState::Kept => {
                format!(" ({})", worktree::work_line(w.work.as_ref()))
            }
            _ if !w.owned => " (pinned)".to_string(),
            _ => String::new(),
        }
    ) + &if w.notice.is_empty() {
        String::new()
    } else {
        format!("\n          note: {}", visible::line(&w.notice))
    }
}

/// The family's totals, empty for an agent without descendants.
fn family_line(family: &pb::UsageReport) -> String {
    if family.agents.len() <= 1 {
        return String::new();
    }
    let t = family.total.unwrap_or_default();
    format!(
        "{} agents · {} requests · {} tokens · {}",
        family.agents.len(),
        family.requests,
        t.input_tokens
            + t.output_tokens
            + t.cache_read_input_tokens
            + t.cache_creation_input_tokens,
        cost::cost_line(&family.cost.unwrap_or_default())
    ) + &if family.unpriced_models.is_empty() {
        String::new()
    } else {
        format!(
            " (not counting {}: no price)",
            visible::line(&family.unpriced_models.join(", "))
        )
    }
}
