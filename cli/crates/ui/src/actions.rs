//! Doing what the keys ask, through the public API, off the event loop:
//! each action runs as its own task on a clone of the client and reports
//! back one `Done` on a channel, so a slow daemon never freezes the screen.
//! The calls and their words are the commands' own (`commands::merge`,
//! `commands::rm`, `commands::one_shot`).

use std::collections::HashMap;

use agentd_shared::proto as pb;
use tokio::sync::mpsc;

use crate::autostart::Client;
use crate::exit::Failure;
use agentctl_core::client_dir::client_dir;
use agentctl_core::view::outcome::{merge_summary, removal_holds, removal_lines, status_line};

/// What an action came to.
#[derive(Debug)]
pub enum Done {
    /// A line for the bar.
    Said(String),
    Failed(String),
    /// The agent's diff, for the output pane.
    Diff {
        id: String,
        text: String,
    },
    /// What `rm` would leave behind, to ask with.
    RmPreview {
        id: String,
        short: String,
        holds: String,
    },
    /// The agent is gone.
    Removed {
        id: String,
        text: String,
    },
    /// The agent's checkpoints, for the output pane.
    Checkpoints {
        id: String,
        text: String,
    },
    /// A fork was made: select it.
    Forked(Box<pb::Agent>),
    /// Costs by agent id (a usage report).
    Costs(HashMap<String, f64>),
}

/// One thing to do to an agent (by full id).
#[derive(Debug, Clone)]
pub enum Request {
    Send {
        id: String,
        message: String,
    },
    Background(String),
    Interrupt(String),
    Stop(String),
    Fork {
        id: String,
        directive: String,
    },
    Diff(String),
    Merge(String),
    RmPreview(String),
    Rm(String),
    Checkpoints(String),
    Rewind {
        id: String,
        to: u32,
        scope: pb::RewindScope,
    },
    Costs,
}

/// Starts `request` on its own task; its outcome goes to `done`.
pub fn spawn(client: &Client, request: Request, done: mpsc::UnboundedSender<Done>) {
    let mut client = client.clone();
    tokio::spawn(async move {
        let outcome = run(&mut client, request)
            .await
            .unwrap_or_else(|status| Done::Failed(Failure::from(status).message));
        let _ = done.send(outcome);
    });
}

async fn run(c: &mut Client, request: Request) -> Result<Done, tonic::Status> {
    Ok(match request {
        Request::Send { id, message } => {
            let resp = c
                .send_message(pb::SendMessageRequest {
                    id,
                    message,
                    ..Default::default()
                })
                .await?
                .into_inner();
            let a = resp.agent.unwrap_or_default();
            let what = if resp.revived {
                "revived"
            } else {
                "queued for"
            };
            Done::Said(format!("{what} {}", status_line(&a)))
        }
        Request::Background(id) => {
            let a = c
                .background(pb::BackgroundRequest { id })
                .await?
                .into_inner();
            Done::Said(format!("{} running in the background", a.short_id))
        }
        Request::Interrupt(id) => {
            let a = c
                .interrupt_agent(pb::InterruptAgentRequest { id })
                .await?
                .into_inner();
            Done::Said(format!(
                "{} (s sends a message to continue it)",
                status_line(&a)
            ))
        }
        Request::Stop(id) => {
            let a = c
                .cancel_agent(pb::CancelAgentRequest { id })
                .await?
                .into_inner();
            Done::Said(status_line(&a))
        }
        Request::Fork { id, directive } => {
            let a = c
                .fork_agent(pb::ForkAgentRequest {
                    parent_id: id,
                    directive,
                    fork_turns: "all".into(),
                    background: true,
                    ..Default::default()
                })
                .await?
                .into_inner();
            Done::Forked(Box::new(a))
        }
        Request::Diff(id) => {
            let resp = c
                .diff_agent(pb::DiffAgentRequest {
                    id: id.clone(),
                    stat: false,
                })
                .await?
                .into_inner();
            let text = if resp.diff.is_empty() {
                "(no changes)".to_string()
            } else {
                resp.diff
            };
            Done::Diff { id, text }
        }
        Request::Merge(id) => {
            let resp = c
                .merge_agent(pb::MergeAgentRequest { id, squash: false })
                .await?
                .into_inner();
            Done::Said(merge_summary(&resp))
        }
        Request::RmPreview(id) => rm_preview(c, id).await?,
        Request::Checkpoints(id) => checkpoints(c, id).await?,
        Request::Rewind { id, to, scope } => rewind(c, id, to, scope).await?,
        Request::Rm(id) => {
            let resp = c
                .remove_agent(pb::RemoveAgentRequest {
                    id: id.clone(),
                    force: false,
                    discard_worktree: false,
                    cwd: client_dir(),
                })
                .await?
                .into_inner();
            Done::Removed {
                id,
                text: removal_lines(&resp, false).join("; "),
            }
        }
        Request::Costs => {
            let report = c
                .get_usage(pb::GetUsageRequest::default())
                .await?
                .into_inner();
            let costs = report
                .agents
                .into_iter()
                .filter_map(|a| a.cost.map(|cost| (a.id, cost.usd)))
                .collect();
            Done::Costs(costs)
        }
    })
}

async fn checkpoints(c: &mut Client, id: String) -> Result<Done, tonic::Status> {
    let resp = c
        .list_checkpoints(pb::ListCheckpointsRequest {
            id: id.clone(),
            stat: true,
        })
        .await?
        .into_inner();
    Ok(Done::Checkpoints {
        id,
        text: checkpoints_text(&resp),
    })
}

async fn rewind(
    c: &mut Client,
    id: String,
    to: u32,
    scope: pb::RewindScope,
) -> Result<Done, tonic::Status> {
    let resp = c
        .rewind_agent(pb::RewindAgentRequest {
            id,
            to_turn: to,
            scope: scope as i32,
            force: false,
        })
        .await?
        .into_inner();
    let a = resp.agent.unwrap_or_default();
    Ok(Done::Said(format!(
        "{} rewound to the beginning of turn {to}: {} written back, {} removed{}",
        a.short_id,
        resp.written.len(),
        resp.removed.len(),
        if resp.conversation {
            "; its next request starts there"
        } else {
            ""
        }
    )))
}

/// The checkpoints as lines: each turn, whether its files were recorded,
/// its message's first line, and what changed since the one before.
fn checkpoints_text(resp: &pb::ListCheckpointsResponse) -> String {
    if resp.checkpoints.is_empty() {
        return "(no user turns yet)".to_string();
    }
    let mut out = String::new();
    for c in &resp.checkpoints {
        let files = if c.has_files {
            ""
        } else {
            " (no files recorded)"
        };
        let first = c.message.lines().next().unwrap_or_default();
        out.push_str(&format!("turn {}{files}: {first}\n", c.turn));
        for f in &c.changed {
            out.push_str(&format!("    {} {}\n", f.status, f.path));
        }
    }
    out.push_str("w rewinds to the beginning of a turn");
    out
}

/// The agent as it is now and what its worktree holds (a diffstat's last
/// line), so the question names the work at stake.
async fn rm_preview(c: &mut Client, id: String) -> Result<Done, tonic::Status> {
    let agent = c
        .get_agent(pb::GetAgentRequest { id: id.clone() })
        .await?
        .into_inner();
    let mut holds = removal_holds(&agent);
    let live_tree = agent
        .worktree
        .as_ref()
        .is_some_and(|w| w.owned && std::path::Path::new(&w.path).exists());
    if live_tree
        && let Ok(resp) = c
            .diff_agent(pb::DiffAgentRequest {
                id: id.clone(),
                stat: true,
            })
            .await
    {
        let stat = resp.into_inner().diff;
        let last = stat.lines().last().unwrap_or("").trim();
        holds = format!(
            "{holds}; now: {}",
            if last.is_empty() { "no changes" } else { last }
        );
    }
    Ok(Done::RmPreview {
        id,
        short: agent.short_id,
        holds,
    })
}
