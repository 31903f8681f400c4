//! An agent's status as a word: `running`, `completed`, … — the one
//! spelling the tables, the JSON and the colours share. A file of its own
//! so that `color`, `render` and `worktree` can each name a status without
//! importing one another.

use agentd_shared::proto as pb;

/// The word for `status` (an `AgentStatus` on the wire); `unknown` for a
/// value this client does not know.
pub fn name(status: i32) -> &'static str {
    match pb::AgentStatus::try_from(status).unwrap_or_default() {
        pb::AgentStatus::Unspecified => "unknown",
        pb::AgentStatus::Pending => "pending",
        pb::AgentStatus::Running => "running",
        pb::AgentStatus::Waiting => "waiting",
        pb::AgentStatus::Paused => "paused",
        pb::AgentStatus::Completed => "completed",
        pb::AgentStatus::Failed => "failed",
        pb::AgentStatus::Cancelled => "cancelled",
        pb::AgentStatus::Interrupted => "interrupted",
    }
}
