//! Creating an agent: validate the request, render its frozen prompt, and
//! store it with its first message in one durable write before anyone
//! hears of it. Nothing is stored when validation fails.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::json;
use tokio::sync::oneshot;

use super::{Supervisor, resolve};
use crate::agent::lifecycle::{Lifecycle, LifecycleKind};
use crate::agent::types::AgentType;
use crate::agent::{FanOutRole, Foreground, WaitEnd, context, worktree_notice};
use crate::domain::{
    AgentRecord, Isolation, PermissionMode, PromptContext, QuerySource, Role, SandboxMode,
    TranscriptEntry, json_bytes, now_ms,
};
use crate::error::{AgentdError, quote};
use crate::model::{ModelSpec, Provider};
use crate::store::Append;
use crate::worktree;

/// Prompts larger than this are refused.
pub const MAX_PROMPT_BYTES: usize = 1024 * 1024;

/// What a client (or a parent's `Agent` call) asks for when it starts an agent.
#[derive(Debug, Clone, Default)]
pub struct NewAgent {
    pub prompt: String,
    pub model: String,
    pub name: String,
    pub description: String,
    pub cwd: String,
    pub background: bool,
    /// None: the parent's mode for a child, bypass for a client's agent.
    pub permission_mode: Option<PermissionMode>,
    /// 0: the daemon's default.
    pub max_turns: u32,
    pub subagent_type: String,
    pub isolation: Isolation,
    /// With worktree isolation: what to branch from (empty: the checkout's
    /// HEAD).
    pub base: String,
    /// A registered worktree of the same repository to work in (the
    /// `Agent` tool's `working_dir`); never created or removed by agentd.
    pub working_dir: String,
    /// The parent's `Agent` call that asks for this agent.
    pub parent_tool_use_id: String,
    /// None: the config's (a child: its parent's).
    pub sandbox: Option<SandboxMode>,
    /// Deny its tools TCP (a child of such an agent is denied too).
    pub no_network: bool,
    /// Stored paused with an empty transcript, not run, until a message
    /// comes (`prompt` must be empty).
    pub idle: bool,
}

/// A validated new agent, not yet stored.
pub(super) struct Prepared {
    pub(super) record: AgentRecord,
    pub(super) prompt: PromptContext,
    pub(super) provider: Provider,
    /// What its transcript starts with: the prompt, or a fork's inherited
    /// messages and its own.
    pub(super) entries: Vec<TranscriptEntry>,
    /// A fork's place among siblings launched together (`fanout`).
    pub(super) fan_out: FanOutRole,
    /// The worktree to make before the agent is stored.
    pub(super) worktree: Option<worktree::Plan>,
}

impl Supervisor {
    /// Validates `req` and builds what a new agent needs. Stores nothing
    /// but the reservation of its short id.
    pub(super) fn prepare(
        &self,
        req: &NewAgent,
        parent: Option<&AgentRecord>,
        agent_type: Option<&AgentType>,
    ) -> Result<Prepared, AgentdError> {
        if req.idle {
            if !req.prompt.is_empty() {
                return Err(AgentdError::invalid(
                    "an idle agent has no prompt: its first message comes with SendMessage",
                ));
            }
            if req.isolation == Isolation::Worktree {
                return Err(AgentdError::not_yet("idle agents in a worktree"));
            }
            self.admit("prompt", "(idle)", &req.name)?;
        } else {
            self.admit("prompt", &req.prompt, &req.name)?;
        }
        if parent.is_none() && !req.subagent_type.is_empty() {
            return Err(AgentdError::not_yet("subagent types for top-level agents"));
        }
        let mut cwd = validate_cwd(&req.cwd)?;
        let isolation = match agent_type {
            Some(t) if req.isolation == Isolation::None => t.isolation,
            _ => req.isolation,
        };
        if !req.base.trim().is_empty() && isolation != Isolation::Worktree {
            return Err(AgentdError::invalid(
                "a base applies only to worktree isolation (--worktree)",
            ));
        }
        let pinned = if req.working_dir.trim().is_empty() {
            None
        } else {
            if isolation == Isolation::Worktree {
                return Err(AgentdError::invalid(
                    "working_dir pins an existing worktree; it cannot be combined with isolation \"worktree\"",
                ));
            }
            let (dir, wt) = worktree::pinned(req.working_dir.trim(), &cwd)?;
            cwd = dir;
            Some(wt)
        };
        let model = match parent {
            // A child without its own model uses its parent's.
            Some(p) if req.model.trim().is_empty() => p.model.clone(),
            _ => self.model_for(&req.model)?,
        };
        let spec = ModelSpec::parse(&model)?;
        let provider = Provider::from_spec(&spec, &cwd, self.settings.models())?;
        if !req.name.is_empty() {
            self.ensure_name_free(&req.name)?;
        }

        let (id, short_id) = self.store.issue_agent_id()?;
        let plan = if isolation == Isolation::Worktree {
            let base = Some(req.base.as_str()).filter(|b| !b.trim().is_empty());
            let plan = worktree::plan(&cwd, base, short_id.as_str(), self.store.instance_id())?;
            cwd = plan.cwd.clone();
            Some(plan)
        } else {
            None
        };
        let now = now_ms();
        let mut record = AgentRecord::new(id, short_id, now);
        record.worktree = plan.as_ref().map(worktree::Plan::record).or(pinned);
        record.name = req.name.clone();
        record.description = if req.description.trim().is_empty() {
            describe(&req.prompt)
        } else {
            req.description.trim().to_string()
        };
        record.subagent_type = agent_type.map(|t| t.name.clone()).unwrap_or_default();
        record.background = req.background;
        record.parent = parent.map(|p| p.id);
        record.query_source = if parent.is_some() {
            QuerySource::Subagent
        } else {
            QuerySource::Client
        };
        record.parent_tool_use_id = req.parent_tool_use_id.clone();
        record.model = model;
        record.cwd = cwd.clone();
        record.max_turns = if req.max_turns == 0 {
            self.config().max_turns
        } else {
            req.max_turns
        };
        // Children inherit their parent's mode; a client's agent gets the
        // one asked for (bypass when none).
        // A child never asks less than its parent (a type may ask more).
        record.permission_mode = match (req.permission_mode, parent) {
            (Some(mode), Some(p)) => mode.stricter(p.permission_mode),
            (Some(mode), None) => mode,
            (None, Some(p)) => p.permission_mode,
            (None, None) => PermissionMode::Bypass,
        };
        record.depth = parent.map_or(0, |p| p.depth + 1);
        // A child never gets a looser sandbox than its parent's; its type
        // may make it stricter.
        record.sandbox = match parent {
            Some(p) => {
                let inherited = p.effective_sandbox();
                agent_type
                    .and_then(|t| t.sandbox)
                    .map_or(inherited, |t| inherited.stricter(t))
            }
            None => req.sandbox.unwrap_or(self.config().sandbox),
        };
        if let Some(p) = parent {
            self.child_stays_within(p, &record)?;
        }
        record.no_network =
            req.no_network || !self.config().network || parent.is_some_and(|p| p.no_network);
        self.sandbox_admits(&record)?;
        let prompt = context::render(&cwd, now, agent_type);
        let mut content_json = json_bytes(&json!([{"type": "text", "text": req.prompt}]));
        if let Some(wt) = record.worktree.as_ref().filter(|w| w.owned) {
            content_json =
                worktree_notice::append_to(&content_json, &worktree_notice::text(wt, &cwd));
        }
        let first = TranscriptEntry {
            seq: 0,
            role: Role::User,
            content_json,
            created_at_ms: now,
            usage: None,
            stop_reason: None,
            cache_point: None,
        };
        Ok(Prepared {
            entries: if req.idle { Vec::new() } else { vec![first] },
            record,
            prompt,
            provider,
            fan_out: FanOutRole::Alone,
            worktree: plan,
        })
    }

    /// The checks every new agent passes first: the daemon takes new
    /// agents, its first message (`what`: the prompt, a fork's directive)
    /// is neither blank nor too big, and its name is valid.
    pub(super) fn admit(&self, what: &str, text: &str, name: &str) -> Result<(), AgentdError> {
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
        if !name.is_empty() {
            resolve::validate_name(name)?;
        }
        Ok(())
    }

    /// Validates `req`, stores the new agent with its first message, and
    /// starts its turn loop.
    pub async fn create(self: &Arc<Self>, req: NewAgent) -> Result<AgentRecord, AgentdError> {
        let mut prepared = self.prepare(&req, None, None)?;
        if req.idle {
            prepared.record.status = crate::domain::Status::Paused;
            return self.store_idle(prepared).await;
        }
        self.store_and_start(prepared, None).await
    }

    /// Stores an agent that waits for its first message.
    async fn store_idle(&self, prepared: Prepared) -> Result<AgentRecord, AgentdError> {
        let Prepared { record, prompt, .. } = prepared;
        self.store
            .append_durable(
                record.id,
                Append {
                    created: Some(&prompt),
                    ..Append::with_record(&[], &record)
                },
            )
            .await?;
        tracing::info!(agent = %record.id, short_id = %record.short_id, model = %record.model, "idle agent created");
        self.registry.publish(Lifecycle {
            agent: record.id,
            short_id: record.short_id.clone(),
            at_ms: now_ms(),
            kind: LifecycleKind::Created(Box::new(record.clone())),
        });
        Ok(record)
    }

    /// Stores a prepared agent (record, frozen prompt, first message and
    /// index entries in one fsync) and starts it. `waiter` is a parent's
    /// `Agent` call waiting in the foreground.
    pub(super) async fn store_and_start(
        self: &Arc<Self>,
        prepared: Prepared,
        waiter: Option<oneshot::Sender<WaitEnd>>,
    ) -> Result<AgentRecord, AgentdError> {
        let Prepared {
            mut record,
            prompt,
            provider,
            entries,
            fan_out,
            worktree,
        } = prepared;
        let id = record.id;
        record.transcript_len = entries.len() as u64;
        let tree_guard = match &worktree {
            Some(plan) => Some(self.make_worktree(plan, &record).await?),
            None => None,
        };
        let stored = self
            .store
            .append_durable(
                id,
                Append {
                    created: Some(&prompt),
                    ..Append::with_record(&entries, &record)
                },
            )
            .await;
        drop(tree_guard);
        if let Err(e) = stored {
            self.unmake_worktree(&record).await;
            return Err(e.into());
        }
        tracing::info!(agent = %id, short_id = %record.short_id, model = %record.model, parent = ?record.parent, "agent created");
        self.registry.publish(Lifecycle {
            agent: id,
            short_id: record.short_id.clone(),
            at_ms: now_ms(),
            kind: LifecycleKind::Created(Box::new(record.clone())),
        });
        let foreground = if record.background {
            Foreground::background()
        } else {
            Foreground::waited(waiter)
        };
        let in_foreground = !record.background;
        self.start(record.clone(), prompt, provider, foreground, fan_out)?;
        if in_foreground {
            self.arm_auto_background(id);
        }
        Ok(record)
    }

    fn model_for(&self, requested: &str) -> Result<String, AgentdError> {
        let requested = requested.trim();
        if !requested.is_empty() {
            return Ok(requested.to_string());
        }
        if let Some(m) = self
            .config()
            .default_model
            .as_ref()
            .filter(|m| !m.is_empty())
        {
            return Ok(m.clone());
        }
        if let Ok(m) = std::env::var("AGENTD_MODEL")
            && !m.trim().is_empty()
        {
            return Ok(m.trim().to_string());
        }
        Err(AgentdError::invalid(
            "no model given: pass --model, set AGENTD_MODEL, or set default_model in config.toml",
        ))
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
            record.no_network,
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
    fn child_stays_within(
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

    /// The sandbox agents get unless they ask for another.
    pub fn default_sandbox(&self) -> SandboxMode {
        self.config().sandbox
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

/// A one-line description from the prompt: its first non-blank line, cut at
/// 60 characters.
pub(super) fn describe(prompt: &str) -> String {
    let line = prompt
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    let mut out: String = line.chars().take(60).collect();
    if out.chars().count() < line.chars().count() {
        out.push('…');
    }
    out
}

fn validate_cwd(cwd: &str) -> Result<PathBuf, AgentdError> {
    if cwd.is_empty() {
        return Err(AgentdError::invalid(
            "cwd is required (an absolute directory)",
        ));
    }
    let path = Path::new(cwd);
    if !path.is_absolute() {
        return Err(AgentdError::invalid(format!(
            "cwd '{}' is not an absolute path",
            quote(cwd)
        )));
    }
    let canonical = path
        .canonicalize()
        .map_err(|e| AgentdError::refused(format!("cwd '{}' cannot be used: {e}", quote(cwd))))?;
    if !canonical.is_dir() {
        return Err(AgentdError::refused(format!(
            "cwd '{}' is not a directory",
            quote(cwd)
        )));
    }
    Ok(canonical)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn description_is_the_first_line_cut_short() {
        assert_eq!(describe("\n  Fix the build\nthen test"), "Fix the build");
        let long = "x".repeat(80);
        assert_eq!(describe(&long).chars().count(), 61);
    }

    #[test]
    fn cwd_must_be_an_existing_absolute_directory() {
        assert!(matches!(validate_cwd(""), Err(AgentdError::Invalid(_))));
        assert!(matches!(
            validate_cwd("rel/dir"),
            Err(AgentdError::Invalid(_))
        ));
        assert!(matches!(
            validate_cwd("/definitely/not/here"),
            Err(AgentdError::Refused(_))
        ));
        assert!(validate_cwd("/").is_ok());
        let long = format!("/{}", "a".repeat(100_000));
        let err = validate_cwd(&long).unwrap_err().to_string();
        assert!(err.len() < 300, "quotes only a prefix: {} bytes", err.len());
    }
}
