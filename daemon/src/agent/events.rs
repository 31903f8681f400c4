//! What an agent's run publishes: its own events (`AgentEvent`, for
//! attachers: entries, deltas, tool activity, status, asks, plans,
//! connections) and the daemon-wide lifecycle events (`Lifecycle`, the
//! `Watch` stream: agents created, status and plan changes, task
//! notifications, asks). `hub` delivers them.

use std::sync::Arc;

use super::permission::PermissionAsk;
use crate::domain::{
    AgentId, AgentRecord, PlanItem, ReleaseReason, ShortId, Status, TranscriptEntry,
};
use crate::model::StreamDelta;

/// A tool call starting or finishing.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolEvent {
    pub tool_use_id: String,
    pub name: String,
    pub finished: bool,
    pub summary: String,
    pub is_error: bool,
}

/// The agent's state as clients see it change.
#[derive(Debug, Clone, PartialEq)]
pub struct StatusSnapshot {
    pub status: Status,
    pub outcome: Option<crate::domain::Outcome>,
    pub turns: u32,
    /// For a `waiting` agent that waits for something other than a
    /// permission answer (disk space), what it waits for.
    pub waiting_for: Option<String>,
}

impl StatusSnapshot {
    pub fn of(record: &crate::domain::AgentRecord) -> StatusSnapshot {
        StatusSnapshot {
            status: record.status,
            outcome: record.outcome.clone(),
            turns: record.turns,
            waiting_for: None,
        }
    }
}

/// A model call failed and will be retried.
#[derive(Debug, Clone, PartialEq)]
pub struct RetryNotice {
    pub attempt: u32,
    pub delay_ms: u64,
    pub reason: String,
}

#[derive(Debug, Clone)]
pub enum AgentEvent {
    /// Persisted (durable) before it was published.
    Entry(Arc<TranscriptEntry>),
    Delta(StreamDelta),
    Tool(ToolEvent),
    Status(StatusSnapshot),
    /// The response in progress was discarded; the call is retried.
    Retry(RetryNotice),
    /// The foreground waiter was released; the agent keeps running.
    Released(ReleaseReason),
    /// A permission ask was opened (or, `resolved`, closed).
    Permission {
        ask: PermissionAsk,
        resolved: bool,
    },
    /// The plan changed (durably): the whole plan now.
    Plan(Arc<Vec<PlanItem>>),
    /// A proxy connection of the agent or a descendant (`asker`), decided
    /// or closed, recorded durably before it was published.
    Connection {
        record: Arc<crate::domain::ConnectionRecord>,
        asker: crate::domain::ShortId,
    },
}

/// A `<task-notification>` put in a parent's inbox (DESIGN §5), as fields
/// and as the text the parent receives.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskNotice {
    /// The child that ended.
    pub task_id: AgentId,
    pub status: Status,
    pub description: String,
    /// The final answer, or `Error: …`.
    pub result: String,
    /// A worktree that was kept, if any.
    pub worktree: Option<String>,
    pub total_tokens: u64,
    pub tool_uses: u32,
    pub duration_ms: u64,
    /// The text exactly as delivered to the parent.
    pub text: String,
}

#[derive(Debug, Clone)]
pub enum LifecycleKind {
    Created(Box<AgentRecord>),
    Status(StatusSnapshot),
    /// A task notification was put in this agent's inbox.
    Notification(Box<TaskNotice>),
    Permission(PermissionAsk),
    /// The agent's plan changed (durably): the whole plan now.
    Plan(Arc<Vec<PlanItem>>),
}

#[derive(Debug, Clone)]
pub struct Lifecycle {
    pub agent: AgentId,
    pub short_id: ShortId,
    pub at_ms: i64,
    pub kind: LifecycleKind,
}
