//! Daemon-wide lifecycle events, for editors and `agentctl events`
//! (the `Watch` stream): agents created, status and plan changes, task
//! notifications and permission asks.

use std::sync::Arc;

use super::hub::StatusSnapshot;
use super::permission::PermissionAsk;
use crate::domain::{AgentId, AgentRecord, PlanItem, ShortId, Status};

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
