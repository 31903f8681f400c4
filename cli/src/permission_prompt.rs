//! Permission asks as the terminal shows and answers them.

use agentd_shared::proto as pb;

/// `--permission-mode` values.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum Mode {
    Default,
    AcceptEdits,
    Plan,
    Bypass,
}

impl Mode {
    pub fn wire(self) -> pb::PermissionMode {
        match self {
            Mode::Default => pb::PermissionMode::Default,
            Mode::AcceptEdits => pb::PermissionMode::AcceptEdits,
            Mode::Plan => pb::PermissionMode::Plan,
            Mode::Bypass => pb::PermissionMode::Bypass,
        }
    }
}

pub fn question(p: &pb::PermissionRequest) -> String {
    format!(
        "agent {} asks to run {}: {}",
        p.agent_short_id, p.tool_name, p.summary
    )
}

/// The answer message for a decision.
pub fn answer(
    request_id: &str,
    decision: pb::permission_answer::Decision,
    reason: String,
) -> pb::PermissionAnswer {
    pb::PermissionAnswer {
        request_id: request_id.to_string(),
        decision: decision as i32,
        reason,
    }
}
