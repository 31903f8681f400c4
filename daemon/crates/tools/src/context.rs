//! What a tool call gets from its agent (`ToolContext`, `ToolEnv`) and
//! gives back (`ToolOutput`), and how a tool is declared (`ToolSpec`).

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::paths;
use super::tool_process::AgentProcesses;

/// What a tool call needs from its agent.
#[derive(Debug, Clone)]
pub struct ToolContext {
    /// The agent's working directory: the root that file tools are contained in
    /// and the cwd of Bash commands.
    pub cwd: PathBuf,
    /// Cancelled when the agent is cancelled; long-running tools stop promptly.
    pub cancel: CancellationToken,
    /// Where Bash writes what it captures while the command runs, so that
    /// after a daemon crash the output so far can still be reported.
    pub spool: Option<PathBuf>,
    pub env: Arc<ToolEnv>,
    /// For an agent in a worktree of its own: (the checkout it was made
    /// from, the worktree's root), to tell a model that reaches into the
    /// checkout where the same file is in its tree.
    pub worktree_of: Option<(PathBuf, PathBuf)>,
    /// How the processes tools start are confined; None: not at all.
    pub sandbox: Option<agentd_sandbox::Policy>,
    /// The processes of the agent's run (its PID namespace), ended with
    /// the run.
    pub processes: Arc<AgentProcesses>,
}

impl ToolContext {
    pub fn new(cwd: PathBuf, cancel: CancellationToken) -> ToolContext {
        ToolContext {
            cwd,
            cancel,
            spool: None,
            env: Arc::default(),
            worktree_of: None,
            sandbox: None,
            processes: Arc::default(),
        }
    }

    /// The path of `resolved` (from `resolve`) below the working directory,
    /// for opening it beneath it (`beneath`); with the directory itself.
    pub fn below(&self, resolved: &std::path::Path) -> Result<(PathBuf, PathBuf), ToolOutput> {
        let root = std::fs::canonicalize(&self.cwd).map_err(|e| {
            ToolOutput::error(format!(
                "The agent's working directory {} cannot be resolved: {e}",
                self.cwd.display()
            ))
        })?;
        let rel = resolved
            .strip_prefix(&root)
            .map(PathBuf::from)
            .map_err(|_| {
                ToolOutput::error(format!(
                    "{} is outside the agent's working directory {}.",
                    resolved.display(),
                    self.cwd.display()
                ))
            })?;
        Ok((root, rel))
    }

    /// `below`, for a write: a confined agent's file tools never write
    /// its `.git` (its git writes go through its quarantine, DESIGN §23;
    /// the repository's git directory is read only to everything it runs).
    pub fn below_for_writing(
        &self,
        resolved: &std::path::Path,
    ) -> Result<(PathBuf, PathBuf, bool), ToolOutput> {
        let (root, rel) = self.below(resolved)?;
        let confined = self.sandbox.is_some();
        if confined && super::beneath::in_git_dir(&rel) {
            return Err(ToolOutput::error(format!(
                "{} is inside a .git directory, which the sandbox keeps read only to the agent; commit with git (its commits go to the agent's branch), or run the agent with --sandbox off to change git's own files.",
                resolved.display()
            )));
        }
        Ok((root, rel, confined))
    }

    /// Resolves the path in input field `field` inside the working
    /// directory (`paths::resolve_contained`). A path into the checkout a
    /// worktree agent was made from is refused with its translation.
    pub fn resolve(&self, field: &str, given: &str) -> Result<PathBuf, ToolOutput> {
        paths::resolve_contained(&self.cwd, given).map_err(|e| {
            let hint = self
                .worktree_of
                .as_ref()
                .and_then(|(checkout, tree)| paths::translate(given, checkout, tree))
                .map(|t| {
                    format!(
                        " It points into the checkout this worktree was made from; the same path in your worktree is {}.",
                        t.display()
                    )
                })
                .unwrap_or_default();
            ToolOutput::error(format!("Invalid `{field}`: {e}{hint}"))
        })
    }
}

/// The environment every process a tool starts gets (DESIGN §16).
#[derive(Debug, Clone, Default)]
pub struct ToolEnv {
    /// Variables removed: provider keys and the `[secrets]` names.
    pub secrets: Vec<String>,
    /// A variable set in every tool process (and inherited by what it
    /// starts), so processes left behind by a killed daemon can be found
    /// and reaped when it starts again (`process::reap`).
    pub marker: Option<(String, String)>,
    /// The daemon's data and socket directories: never writable by tools.
    pub protected: Vec<PathBuf>,
    /// What confined processes may not read (DESIGN §22).
    pub read_denials: agentd_sandbox::ReadDenials,
}

/// The result of one tool call, as it goes back to the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutput {
    pub content: String,
    pub is_error: bool,
    /// What the call changed in a file (Write, Edit), recorded beside the
    /// result for clients; the model gets only `content`. Boxed: most
    /// results have none.
    pub change: Option<Box<crate::domain::FileChange>>,
}

impl ToolOutput {
    /// A tool's result as the model gets it: a refusal is an answer too.
    pub fn either(ran: Result<ToolOutput, ToolOutput>) -> ToolOutput {
        ran.unwrap_or_else(|refused| refused)
    }

    pub fn ok(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            is_error: false,
            change: None,
        }
    }

    /// The result of a call that changed a file.
    pub fn with_change(self, change: crate::domain::FileChange) -> Self {
        Self {
            change: Some(Box::new(change)),
            ..self
        }
    }

    pub fn error(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            is_error: true,
            change: None,
        }
    }
}

/// A tool's declaration in the Anthropic Messages `tools` array.
#[derive(Debug, Clone)]
pub struct ToolSpec {
    pub name: &'static str,
    pub description: &'static str,
    pub input_schema: Value,
}

/// A fresh directory and a context working in it (its canonical path), for
/// tools' tests.
#[cfg(test)]
#[allow(clippy::unwrap_used)]
pub(super) fn scratch() -> (tempfile::TempDir, PathBuf, ToolContext) {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let ctx = ToolContext::new(root.clone(), CancellationToken::new());
    (dir, root, ctx)
}
