//! What waits in an agent's inbox for its next turn boundary (DESIGN §5).

use super::AgentId;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InboxKind {
    /// A message from a user or another agent (`send`, `SendMessage`).
    Message,
    /// A `<task-notification>` about a background child that ended.
    Notification,
}

/// One undelivered message or notification. Moving it into the transcript
/// and deleting it from the inbox happen in one transaction: delivered
/// exactly once.
#[derive(Clone, Debug, PartialEq)]
pub struct InboxItem {
    pub kind: InboxKind,
    /// The text the agent receives, as a user-role text block.
    pub text: String,
    /// The sender, or the child that ended, if an agent.
    pub from: Option<AgentId>,
    pub created_at_ms: i64,
}
