//! Answering permission asks from the terminal.

use std::io::{IsTerminal, Write};

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
        agentd_shared::ids::short_id(&p.agent_id),
        p.tool_name,
        p.summary
    )
}

/// The answer message for a decision.
pub fn answer(
    request_id: &str,
    decision: pb::permission_answer::Decision,
    reason: String,
) -> pb::AttachRequest {
    pb::AttachRequest {
        request: Some(pb::attach_request::Request::PermissionAnswer(
            pb::PermissionAnswer {
                request_id: request_id.to_string(),
                decision: decision as i32,
                reason,
            },
        )),
    }
}

/// Asks on the terminal (a line on stdin); without a terminal, says how to
/// answer and returns None: the agent waits.
pub async fn ask(p: &pb::PermissionRequest) -> Option<pb::AttachRequest> {
    if !std::io::stdin().is_terminal() {
        eprintln!(
            "{} — waiting for an answer (`agentctl attach {}` in a terminal)",
            question(p),
            agentd_shared::ids::short_id(&p.agent_id)
        );
        return None;
    }
    eprint!(
        "{}\n  allow [y]es once, [a]lways for this agent, [n]o (optionally with a reason): ",
        question(p)
    );
    let _ = std::io::stderr().flush();
    let line = tokio::task::spawn_blocking(|| {
        let mut line = String::new();
        std::io::stdin().read_line(&mut line).map(|_| line)
    })
    .await
    .ok()?
    .ok()?;
    let line = line.trim();
    use pb::permission_answer::Decision;
    let (decision, reason) = match line.chars().next().map(|c| c.to_ascii_lowercase()) {
        Some('y') => (Decision::AllowOnce, String::new()),
        Some('a') => (Decision::AllowAlways, String::new()),
        _ => (
            Decision::Deny,
            line.trim_start_matches(['n', 'N']).trim().to_string(),
        ),
    };
    Some(answer(&p.request_id, decision, reason))
}
