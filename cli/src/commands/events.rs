//! `agentctl events`: the daemon's lifecycle stream (agents created, status
//! and plan changes, task notifications, permission asks) until interrupted.

use std::io::Write;

use agentd_shared::proto as pb;
use agentd_shared::visible;
use serde_json::json;
use tokio::signal::unix::{SignalKind, signal};

use crate::autostart::Target;
use crate::exit::{FAILURE, Failure, SUCCESS};
use crate::view::{plan, render, status};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print one JSON object per line.
    #[arg(long)]
    json: bool,
}

pub async fn run(target: &Target, args: Args) -> Result<u8, Failure> {
    // One listener for the whole watch: a listener made anew for each
    // event dropped an interrupt that came as an event did, and the
    // watcher went on.
    let mut interrupt = signal(SignalKind::interrupt())
        .map_err(|e| Failure::new(FAILURE, format!("cannot listen for Ctrl-C: {e}")))?;
    let mut client = target.client().await?;
    let mut events = client.watch(pb::WatchRequest {}).await?.into_inner();
    loop {
        let next = tokio::select! {
            biased;
            _ = interrupt.recv() => return Ok(SUCCESS),
            e = events.message() => e,
        };
        let Some(e) = next? else {
            return Ok(SUCCESS);
        };
        let at = render::rfc3339(e.at.as_ref());
        let short = &e.agent_short_id;
        let line = match &e.event {
            Some(pb::watch_event::Event::Created(a)) => {
                if args.json {
                    json!({"at": at, "agent_id": e.agent_id, "type": "created", "agent": render::AgentJson::of(a)})
                        .to_string()
                } else {
                    format!("{at} {short} created: {}", a.description)
                }
            }
            Some(pb::watch_event::Event::Status(s)) => {
                let status = status::name(s.status);
                if args.json {
                    json!({"at": at, "agent_id": e.agent_id, "type": "status", "status": status, "error": s.error, "turns": s.turns})
                        .to_string()
                } else if s.error.is_empty() {
                    format!("{at} {short} {status}")
                } else {
                    format!("{at} {short} {status}: {}", s.error)
                }
            }
            Some(pb::watch_event::Event::Notification(text)) => {
                if args.json {
                    let task = e.task_notification.as_ref().map(|n| {
                        json!({
                            "task_id": n.task_id,
                            "status": status::name(n.status),
                            "description": n.description,
                            "result": n.result,
                            "worktree": n.worktree,
                            "total_tokens": n.total_tokens,
                            "tool_uses": n.tool_uses,
                            "duration_ms": n.duration_ms,
                        })
                    });
                    json!({"at": at, "agent_id": e.agent_id, "agent_short_id": short, "type": "notification", "text": text, "task": task})
                        .to_string()
                } else {
                    let summary = text
                        .lines()
                        .find(|l| l.starts_with("<summary>"))
                        .unwrap_or("")
                        .trim_start_matches("<summary>")
                        .trim_end_matches("</summary>");
                    format!("{at} {short} notified: {summary}")
                }
            }
            Some(pb::watch_event::Event::PermissionRequest(p)) => {
                if args.json {
                    json!({"at": at, "agent_id": e.agent_id, "type": "permission_request", "tool": p.tool_name, "summary": p.summary})
                        .to_string()
                } else {
                    format!("{at} {short} asks to run {}: {}", p.tool_name, p.summary)
                }
            }
            Some(pb::watch_event::Event::Plan(p)) => {
                if args.json {
                    json!({"at": at, "agent_id": e.agent_id, "agent_short_id": short, "type": "plan", "plan": plan::PlanItemJson::all(&p.items)})
                        .to_string()
                } else {
                    format!("{at} {short} {}", plan_line(&p.items))
                }
            }
            None => continue,
        };
        // A line made of what agents chose (descriptions, errors, plans):
        // made visible, and kept to one line. JSON stays exact.
        let line = if args.json {
            visible::json(&line).into_owned()
        } else {
            visible::line(&line).into_owned()
        };
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{line}");
        let _ = out.flush();
    }
}

/// "plan 1/3: Fixing the bug" (the item in progress, as it is done), or
/// "plan cleared".
fn plan_line(items: &[pb::PlanItem]) -> String {
    if items.is_empty() {
        return "plan cleared".into();
    }
    let doing = items
        .iter()
        .find(|i| i.status == pb::PlanStatus::InProgress as i32)
        .map(|i| format!(": {}", i.active_form))
        .unwrap_or_default();
    format!("plan {}{doing}", plan::progress(items))
}
