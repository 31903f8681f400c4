//! `agentctl attach`: an agent's recent history, then its live output,
//! followed with the same terminal loop as a foreground `run` (`follow`:
//! Ctrl-B background, Ctrl-D detach, Ctrl-C cancel after a confirmation).
//! `--json` prints every event as one JSON line, for scripts and editor
//! plugins.

use agentd_shared::proto as pb;
use futures::StreamExt;
use serde_json::json;

use crate::autostart::{Client, Target};
use crate::exit::{Failure, SUCCESS};
use crate::follow::{Follower, follow};
use crate::view::{plan, render, status};

/// History entries shown before live output when `--from` is not given.
const RECENT: u64 = 20;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Agent id, unique id prefix, or name.
    id: String,
    /// First transcript entry to show [default: the last 20].
    #[arg(long)]
    from: Option<u64>,
    /// Print events as JSON lines instead of a transcript.
    #[arg(long)]
    json: bool,
}

pub async fn run(target: &Target, args: Args) -> Result<u8, Failure> {
    let mut client = target.client().await?;
    let agent = client
        .get_agent(pb::GetAgentRequest { id: args.id })
        .await?
        .into_inner();
    let from = args
        .from
        .unwrap_or_else(|| agent.transcript_len.saturating_sub(RECENT));
    if args.json {
        return follow_json(&mut client, &agent, from).await;
    }
    follow(&mut client, &agent, from, Follower::Attach).await
}

/// `--json`: every event as one JSON line, until the agent stops.
async fn follow_json(client: &mut Client, agent: &pb::Agent, from: u64) -> Result<u8, Failure> {
    // Held until the end: dropping it would detach.
    let (_requests, mut events) = agentd_shared::attach::open(client, &agent.id, from, 8).await?;
    loop {
        let event = match events.next().await {
            None => return Err(Failure::failed("the daemon closed the stream")),
            Some(Err(status)) => return Err(status.into()),
            Some(Ok(pb::AttachEvent { event: Some(e) })) => e,
            Some(Ok(_)) => continue,
        };
        print_json(&event);
        if let pb::attach_event::Event::Status(s) = &event {
            let status = pb::AgentStatus::try_from(s.status).unwrap_or_default();
            if !matches!(
                status,
                pb::AgentStatus::Pending | pb::AgentStatus::Running | pb::AgentStatus::Waiting
            ) {
                return Ok(SUCCESS);
            }
        }
    }
}

fn print_json(event: &pb::attach_event::Event) {
    use pb::attach_event::Event;
    let v = match event {
        Event::Agent(a) => json!({"type": "agent", "agent": render::AgentJson::of(a)}),
        Event::Entry(e) => json!({"type": "entry", "entry": render::EntryJson::of(e)}),
        Event::Delta(d) => {
            let (kind, text) = match &d.delta {
                Some(pb::content_delta::Delta::Text(t)) => ("text", t.clone()),
                Some(pb::content_delta::Delta::Thinking(t)) => ("thinking", t.clone()),
                Some(pb::content_delta::Delta::ToolUseStart(t)) => ("tool_use_start", t.clone()),
                Some(pb::content_delta::Delta::InputJson(t)) => ("input_json", t.clone()),
                None => ("none", String::new()),
            };
            json!({"type": "delta", "index": d.index, "kind": kind, "text": text})
        }
        Event::Tool(t) => json!({
            "type": "tool",
            "tool_use_id": t.tool_use_id,
            "name": t.name,
            "phase": if t.phase == pb::tool_activity::Phase::Finished as i32 { "finished" } else { "started" },
            "summary": t.summary,
            "is_error": t.is_error,
        }),
        Event::Status(s) => {
            json!({"type": "status", "status": status::name(s.status), "error": s.error, "result": s.result, "turns": s.turns, "waiting_for": s.waiting_for})
        }
        Event::Retry(r) => {
            json!({"type": "retry", "attempt": r.attempt, "delay_ms": r.delay_ms, "reason": r.reason})
        }
        Event::Released(r) => {
            json!({"type": "released", "reason": render::release_reason_name(r.reason)})
        }
        Event::Notice(n) => json!({"type": "notice", "text": n.text, "is_error": n.is_error}),
        Event::Plan(p) => json!({"type": "plan", "plan": plan::PlanItemJson::all(&p.items)}),
        Event::Connection(c) => json!({
            "type": "connection",
            "agent_id": c.agent_id,
            "agent_short_id": c.agent_short_id,
            "seq": c.seq,
            "host": c.host,
            "port": c.port,
            "method": c.method,
            "decision": crate::view::network::decision_name(c.decision),
            "reason": c.reason,
            "bytes_sent": c.bytes_sent,
            "bytes_received": c.bytes_received,
            "ended": c.ended_at.is_some(),
        }),
        Event::PermissionRequest(p) => json!({
            "type": "permission_request",
            "request_id": p.request_id,
            "agent_id": p.agent_id,
            "agent_short_id": p.agent_short_id,
            "tool": p.tool_name,
            "input": serde_json::from_str::<serde_json::Value>(&p.input_json).unwrap_or_default(),
            "summary": p.summary,
            "resolved": p.resolved,
        }),
    };
    render::write_json_line(&v.to_string());
}
