//! The checks a new agent (created or forked) passes before anything is
//! stored: the daemon takes agents, the first message fits, the name is
//! free, and the sandbox asked for can be enforced here and keeps a child
//! within its parent's.

use super::Supervisor;
use crate::domain::{AgentRecord, SandboxMode};
use crate::error::AgentdError;

/// Prompts larger than this are refused.
pub const MAX_PROMPT_BYTES: usize = 1024 * 1024;

impl Supervisor {
    /// The checks every new agent passes first: the daemon takes new
    /// agents, and its first message (`what`: the prompt, a fork's
    /// directive) is neither blank nor too big.
    pub(super) fn admit(&self, what: &str, text: &str) -> Result<(), AgentdError> {
        if self.runs.shutting_down() {
            return Err(AgentdError::ShuttingDown("agentd is shutting down".into()));
        }
        if text.trim().is_empty() {
            return Err(AgentdError::invalid(format!("the {what} is empty")));
        }
        if text.len() > MAX_PROMPT_BYTES {
            return Err(AgentdError::invalid(format!(
                "the {what} is {} bytes; the limit is {MAX_PROMPT_BYTES} bytes (1 MiB)",
                text.len()
            )));
        }
        Ok(())
    }

    /// Refuses an agent whose sandbox cannot be enforced here (fail
    /// closed: never a silent downgrade).
    pub(super) fn sandbox_admits(&self, record: &AgentRecord) -> Result<(), AgentdError> {
        let workspace = record
            .worktree
            .as_ref()
            .filter(|w| w.owned)
            .map_or(record.cwd.as_path(), |w| w.path.as_path());
        match crate::sandbox::refusal(
            record.effective_sandbox(),
            record.network,
            workspace,
            &self.settings.tool_env().protected,
        ) {
            Some(why) => Err(AgentdError::refused(why)),
            None => Ok(()),
        }
    }

    /// A sandboxed parent's child works nowhere its parent could not write:
    /// a read-only parent gets no tree and pins none; a workspace-write
    /// parent may pin only a directory beneath its own workspace (a new
    /// tree of its own is fresh, nobody's work, and allowed).
    pub(super) fn child_stays_within(
        &self,
        parent: &AgentRecord,
        child: &AgentRecord,
    ) -> Result<(), AgentdError> {
        let Some(wt) = child.worktree.as_ref() else {
            return Ok(());
        };
        match parent.effective_sandbox() {
            SandboxMode::Off => Ok(()),
            SandboxMode::ReadOnly => Err(AgentdError::refused(
                "a read-only agent cannot start agents in worktrees (isolation or working_dir): they would write",
            )),
            SandboxMode::WorkspaceWrite if wt.owned => Ok(()),
            SandboxMode::WorkspaceWrite => {
                let workspace = crate::sandbox::Policy::for_agent(parent)
                    .map(|p| p.workspace)
                    .unwrap_or_else(|| parent.cwd.clone());
                // Compared as the kernel resolves them: a link in either
                // path must not make outside look inside.
                let real =
                    |p: &std::path::Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
                if real(&child.cwd).starts_with(real(&workspace)) {
                    Ok(())
                } else {
                    Err(AgentdError::refused(format!(
                        "working_dir {} is outside this agent's sandbox ({}); a child may work only where its parent may write",
                        child.cwd.display(),
                        workspace.display()
                    )))
                }
            }
        }
    }

    /// A name is unique among agents that have not ended (an index lookup).
    pub(super) fn ensure_name_free(&self, name: &str) -> Result<(), AgentdError> {
        for id in self.store.ids_named(name)? {
            if let Some(record) = self.store.get_agent(id)?
                && !record.status.is_terminal()
            {
                return Err(AgentdError::Exists(format!(
                    "the name '{name}' is taken by agent {} ({}); pick another or stop that agent first",
                    record.short_id, record.status
                )));
            }
        }
        Ok(())
    }
}
