//! The daemon's own vocabulary: typed values that domain code works with.
//!
//! Wire types (the v1 proto) are mapped to these at the server edge
//! (`server::convert`), and stored bytes at the store edge (`store::codec`);
//! nothing between the two edges handles raw ids, integer enums or strings
//! standing for a closed set of values.

mod agent;
mod allowlist;
mod budget;
mod confinement;
mod external_run;
mod family_limits;
mod file_change;
mod fork;
mod id;
mod inbox;
mod mcp;
mod name;
mod network;
mod plan;
mod prompt;
mod rule_decision;
mod sandbox;
pub mod text;
mod tool;
mod tool_ref;
mod transcript;
pub mod turns;
mod worktree;

pub use agent::{
    AgentRecord, Isolation, Outcome, PermissionMode, ReleaseReason, ResumeBlocked,
    ResumeBlockedReason, Status, Usage,
};
pub use allowlist::{McpPattern, ToolAllowlist};
pub use budget::{Budget, MICROS_PER_USD, Spent};
pub use confinement::Confinement;
pub use external_run::{
    ContextFill, ExternalAgentName, ExternalRun, ExternalToolKind, ReportedCost,
};
pub use family_limits::FamilyLimits;
pub use file_change::{Before, FileChange, FileText, RECORDED_BYTES, ToolFileChange};
pub use fork::{FORK_MAX_TURNS, FORK_TYPE, ForkTools, ForkTurns, QuerySource};
pub use id::{AgentId, SHORT_ID_LEN, ShortId};
pub use inbox::{InboxItem, InboxKind};
pub use mcp::{McpServerSummary, McpSource, McpTransport};
pub use name::AgentName;
pub use network::{ConnectionDecision, ConnectionRecord, HostPattern, NetTarget, NetworkMode};
pub use plan::{PlanItem, PlanStatus};
pub use prompt::{InstructionFile, InstructionsLoaded, PromptContext};
pub use rule_decision::{RuleDecision, RuleVerdict};
pub use sandbox::SandboxMode;
pub use tool::ToolName;
pub use tool_ref::{McpToolName, ToolRef};
pub use transcript::{
    CompactBoundary, CompactTrigger, Role, StopReason, TranscriptEntry, json_bytes,
};
pub use worktree::{AgentWorktree, MergeJournal, WorkSummary, WorktreeState};

/// Milliseconds since the Unix epoch, now.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}
