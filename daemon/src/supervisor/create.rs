//! Creating an agent: validate the request, render its frozen prompt, and
//! store it with its first message in one durable write before anyone
//! hears of it. Nothing is stored when validation fails.

use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::json;
use tokio::sync::oneshot;

use super::Supervisor;
use super::mcp::McpPending;
use super::mcp_sources::TypeServers;
use crate::agent::events::{Lifecycle, LifecycleKind};
use crate::agent::instructions::{self, Instructions};
use crate::agent::{FanOutRole, Foreground, WaitEnd, context, worktree_notice};
use crate::config::agent_types::{AgentType, TypeOrigin};
use crate::domain::{
    AgentName, AgentRecord, AgentWorktree, HostPattern, InstructionsLoaded, Isolation, NetworkMode,
    PermissionMode, PromptContext, QuerySource, Role, SandboxMode, TranscriptEntry, json_bytes,
    now_ms,
};
use crate::error::{AgentdError, quote};
use crate::mcp::ServerDef;
use crate::model::{ModelSpec, Provider};
use crate::store::Append;
use crate::worktree;

/// What a client (or a parent's `Agent` call) asks for when it starts an
/// agent, parsed and checked at the edge that received it.
#[derive(Debug, Clone, Default)]
pub struct NewAgent {
    pub prompt: String,
    /// None: the parent's model for a child, else the configured default.
    pub model: Option<ModelSpec>,
    pub name: Option<AgentName>,
    /// None: the prompt's first line.
    pub description: Option<String>,
    /// An absolute directory (resolved and checked when the agent is made).
    pub cwd: PathBuf,
    pub background: bool,
    /// None: the parent's mode for a child, bypass for a client's agent.
    pub permission_mode: Option<PermissionMode>,
    /// None: the daemon's default.
    pub max_turns: Option<NonZeroU32>,
    pub isolation: Isolation,
    /// With worktree isolation: what to branch from (None: the checkout's
    /// HEAD).
    pub base: Option<String>,
    /// A registered worktree of the same repository to work in (the
    /// `Agent` tool's `working_dir`); never created or removed by agentd.
    pub working_dir: Option<String>,
    /// The parent's `Agent` call that asks for this agent.
    pub parent_tool_use_id: String,
    /// None: the config's (a child: its parent's).
    pub sandbox: Option<SandboxMode>,
    /// How its tools reach the network; None: the config's (a child: its
    /// parent's, or its type's if that is stricter).
    pub network: Option<NetworkMode>,
    /// Hosts its proxy allows besides the daemon's list (`--allow-host`).
    pub allow_hosts: Vec<HostPattern>,
    /// Stored paused with an empty transcript, not run, until a message
    /// comes (`prompt` is empty).
    pub idle: bool,
    /// Leave the project instructions (AGENTS.md, CLAUDE.md) out of its
    /// system prompt (a child of such an agent leaves them out too).
    pub no_instructions: bool,
    /// MCP servers besides config.toml's, checked, names unique: a client's
    /// (an editor's `mcpServers`), or for a subagent those its parent was
    /// given. Listed after config's; one replaces a config server of its
    /// name (`mcp::setup::chosen`).
    pub mcp_servers: Vec<ServerDef>,
    /// Run by this external agent over ACP (DESIGN §19), not a model.
    pub executor: Option<crate::domain::ExternalAgentName>,
    /// A cap on what it and its descendants spend (DESIGN §24); None: the
    /// config's default for a client's agent, none of its own for a child.
    pub budget: Option<crate::domain::Budget>,
}

/// A validated new agent, not yet stored.
pub(super) struct Prepared {
    pub(super) record: AgentRecord,
    pub(super) prompt: PromptContext,
    /// None for an agent an external agent runs.
    pub(super) provider: Option<Provider>,
    /// What its transcript starts with: the prompt, or a fork's inherited
    /// messages and its own.
    pub(super) entries: Vec<TranscriptEntry>,
    /// A fork's place among siblings launched together (`fanout`).
    pub(super) fan_out: FanOutRole,
    /// The worktree to make before the agent is stored.
    pub(super) worktree: Option<worktree::Plan>,
    /// Its MCP servers are still to be listed into its tools: config's and
    /// these. None: a fork, which has its parent's.
    pub(super) mcp_pending: Option<McpPending>,
    /// The files its new tree gets once made: a checkpoint's (fork `--at`).
    pub(super) tree_files: Option<super::checkpoints::TreeFiles>,
    /// Its own budget, kept before it is stored (`budgets`).
    pub(super) budget: Option<crate::domain::Budget>,
    /// The limits its agent type sets on its family (`family_limits`),
    /// kept before it is stored.
    pub(super) limits: crate::domain::FamilyLimits,
}

/// Where a new agent works, before its worktree (if any) is planned.
struct Place {
    cwd: PathBuf,
    isolation: Isolation,
    /// A registered worktree it was pinned to (`working_dir`).
    pinned: Option<AgentWorktree>,
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
        self.admit("prompt", if req.idle { "(idle)" } else { &req.prompt })?;
        let place = place(req, agent_type)?;
        let (model, provider) = match &req.executor {
            Some(name) => {
                self.external_def(name).map_err(AgentdError::refused)?;
                (
                    crate::domain::ExternalRun::new(name.clone()).model_label(),
                    None,
                )
            }
            None => {
                let model = self.model_for(req.model.as_ref(), parent)?;
                let provider = Provider::from_spec(&model, &place.cwd, self.settings.models())?;
                (model.to_string(), Some(provider))
            }
        };
        if let Some(name) = &req.name {
            self.ensure_name_free(name.as_str())?;
        }

        let (id, short_id) = self.store.issue_agent_id()?;
        let plan = self.plan_tree(place.isolation, &place.cwd, req.base.as_deref(), &short_id)?;
        // Read where the person asked the agent to work: a worktree to be
        // made from it holds the same files (it does not exist yet).
        // An external agent reads its own project instructions.
        let instructions = req
            .executor
            .is_none()
            .then(|| self.instructions_for(req, parent, &place.cwd))
            .flatten();
        let now = now_ms();
        let mut record = AgentRecord::new(id, short_id, now);
        record.cwd = plan.as_ref().map_or(place.cwd, |p| p.cwd.clone());
        record.worktree = plan.as_ref().map(worktree::Plan::record).or(place.pinned);
        record.model = model;
        record.external = req.executor.clone().map(crate::domain::ExternalRun::new);
        self.describe_new(&mut record, req, parent, agent_type);
        if let Some(p) = parent {
            self.child_stays_within(p, &record)?;
        }
        self.sandbox_admits(&record)?;
        let mut prompt = context::render(
            &record.cwd,
            now,
            agent_type,
            instructions
                .as_ref()
                .and_then(|i| i.prompt_text())
                .as_deref(),
        );
        prompt.tools_json =
            context::mention_external_agents(&prompt.tools_json, &self.external_agents());
        record.instructions = instructions.map_or_else(
            || InstructionsLoaded {
                skipped: true,
                ..InstructionsLoaded::default()
            },
            |i| i.loaded(),
        );
        let entries = if req.idle {
            Vec::new()
        } else {
            vec![first_message(&req.prompt, &record, now)]
        };
        Ok(Prepared {
            entries,
            record,
            prompt,
            provider,
            fan_out: FanOutRole::Alone,
            worktree: plan,
            tree_files: None,
            // Its own; else its type's; else, for a client's agent,
            // config.toml's default.
            budget: req
                .budget
                .or(agent_type.and_then(|t| t.budget))
                .or_else(|| {
                    parent
                        .is_none()
                        .then(|| self.config().default_budget())
                        .flatten()
                }),
            limits: agent_type.map(|t| t.limits).unwrap_or_default(),
            mcp_pending: Some(McpPending {
                requested: req.mcp_servers.clone(),
                of_type: agent_type.and_then(TypeServers::of),
            }),
        })
    }

    /// The project instructions for an agent working in `cwd`; None when
    /// it is to be made without them (asked, configured, or its parent
    /// was).
    fn instructions_for(
        &self,
        req: &NewAgent,
        parent: Option<&AgentRecord>,
        cwd: &Path,
    ) -> Option<Instructions> {
        let skip = req.no_instructions
            || !self.config().instructions
            || parent.is_some_and(|p| p.instructions.skipped);
        if skip {
            return None;
        }
        let config_dir = self
            .info()
            .config_path
            .parent()
            .map_or_else(agentd_shared::paths::config_dir, Path::to_path_buf);
        Some(instructions::load(cwd, &config_dir))
    }

    /// Fills in who a new agent is and what it may do: its name and
    /// description, its family, its limits and its sandbox (a child never
    /// asks less of either than its parent; its type may ask more).
    fn describe_new(
        &self,
        record: &mut AgentRecord,
        req: &NewAgent,
        parent: Option<&AgentRecord>,
        agent_type: Option<&AgentType>,
    ) {
        record.name = req.name.clone().map(String::from).unwrap_or_default();
        record.description = req
            .description
            .clone()
            .unwrap_or_else(|| describe(&req.prompt));
        record.subagent_type = agent_type
            .map(|t| t.name.clone())
            .or_else(|| req.executor.as_ref().map(ToString::to_string))
            .unwrap_or_default();
        record.background = req.background;
        record.parent = parent.map(|p| p.id);
        record.query_source = if parent.is_some() {
            QuerySource::Subagent
        } else {
            QuerySource::Client
        };
        record.parent_tool_use_id = req.parent_tool_use_id.clone();
        record.max_turns = req
            .max_turns
            .map_or_else(|| self.config().max_turns, NonZeroU32::get);
        record.permission_mode = match (req.permission_mode, parent) {
            (Some(mode), Some(p)) => mode.stricter(p.permission_mode),
            (Some(mode), None) => mode,
            (None, Some(p)) => p.permission_mode,
            // The settings files' defaultMode (DESIGN §24); a malformed
            // one fails the run at its start with the rules' error.
            (None, None) => self
                .rules_at(&record.cwd)
                .ok()
                .and_then(|set| set.default_mode)
                .map_or(PermissionMode::Bypass, |(mode, _)| mode),
        };
        record.depth = parent.map_or(0, |p| p.depth + 1);
        record.sandbox = match parent {
            Some(p) => {
                let inherited = p.effective_sandbox();
                agent_type
                    .and_then(|t| t.sandbox)
                    .map_or(inherited, |t| inherited.stricter(t))
            }
            None => req.sandbox.unwrap_or(self.config().sandbox.mode),
        };
        self.choose_network(record, req, parent, agent_type);
    }

    /// A child's network is its parent's, or stricter; its allow list its
    /// parent's and its type's (a type of the person's own: a
    /// repository's type file never widens the network). A client's
    /// agent gets what it asked for, else the config's mode — or the full
    /// network when its sandbox is off, since nothing would confine it.
    fn choose_network(
        &self,
        record: &mut AgentRecord,
        req: &NewAgent,
        parent: Option<&AgentRecord>,
        agent_type: Option<&AgentType>,
    ) {
        let mut allow = req.allow_hosts.clone();
        record.network = match parent {
            Some(p) => {
                allow.extend(p.network_allow.iter().cloned());
                let inherited = p.effective_network();
                req.network.map_or(inherited, |n| inherited.stricter(n))
            }
            None => match req.network {
                Some(n) => n,
                None if record.effective_sandbox() == SandboxMode::Off => NetworkMode::Full,
                None => self.config().network.mode,
            },
        };
        if let Some(t) = agent_type.filter(|t| matches!(t.origin, TypeOrigin::User(_))) {
            allow.extend(t.network_allow.iter().cloned());
        }
        allow.sort();
        allow.dedup();
        record.network_allow = allow;
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

    /// Keeps a new agent's budget and family limits, if it has any, before
    /// the agent itself is stored (an agent is never seen without them).
    async fn keep_caps(
        &self,
        id: crate::domain::AgentId,
        budget: Option<crate::domain::Budget>,
        limits: crate::domain::FamilyLimits,
    ) -> Result<(), AgentdError> {
        if budget.is_some() {
            self.store.set_budget_durable(id, budget).await?;
        }
        if !limits.is_empty() {
            self.store.set_family_limits_durable(id, limits).await?;
        }
        Ok(())
    }

    /// Stores an agent that waits for its first message.
    async fn store_idle(&self, prepared: Prepared) -> Result<AgentRecord, AgentdError> {
        let Prepared {
            mut record,
            mut prompt,
            mcp_pending,
            budget,
            limits,
            ..
        } = prepared;
        if let Some(pending) = mcp_pending {
            self.freeze_mcp(&mut record, &mut prompt, &pending).await;
        }
        self.keep_caps(record.id, budget, limits).await?;
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
            mut prompt,
            provider,
            entries,
            fan_out,
            worktree,
            mcp_pending,
            tree_files,
            budget,
            limits,
        } = prepared;
        let id = record.id;
        // On disk before its first request can be sent.
        self.keep_caps(id, budget, limits).await?;
        record.transcript_len = entries.len() as u64;
        let tree_guard = match &worktree {
            Some(plan) => Some(self.make_worktree(plan, &record).await?),
            None => None,
        };
        if let (Some(files), Some(plan)) = (tree_files, &worktree)
            && let Err(e) = self.fill_tree(files, &plan.path, &record).await
        {
            drop(tree_guard);
            self.unmake_worktree(&record).await;
            return Err(e);
        }
        // Listed where it works: a worktree of its own exists by now.
        if let Some(pending) = mcp_pending {
            self.freeze_mcp(&mut record, &mut prompt, &pending).await;
        }
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

    /// The model asked for; else a child's parent's; else the configured
    /// default (config.toml, then `AGENTD_MODEL`).
    fn model_for(
        &self,
        requested: Option<&ModelSpec>,
        parent: Option<&AgentRecord>,
    ) -> Result<ModelSpec, AgentdError> {
        if let Some(spec) = requested {
            return Ok(spec.clone());
        }
        if let Some(p) = parent {
            return Ok(ModelSpec::parse(&p.model)?);
        }
        let configured = self.config().default_model.clone();
        let default = configured
            .filter(|m| !m.trim().is_empty())
            .or_else(|| std::env::var("AGENTD_MODEL").ok())
            .filter(|m| !m.trim().is_empty())
            .ok_or_else(|| {
                AgentdError::invalid(
                    "no model given: pass --model, set AGENTD_MODEL, or set default_model in config.toml",
                )
            })?;
        Ok(ModelSpec::parse(default.trim())?)
    }

    /// The sandbox agents get unless they ask for another.
    pub fn default_sandbox(&self) -> SandboxMode {
        self.config().sandbox.mode
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

/// Where the agent works: its directory as the kernel resolves it, the
/// isolation in force (the request's, else its type's), and the worktree
/// it is pinned to, if any.
fn place(req: &NewAgent, agent_type: Option<&AgentType>) -> Result<Place, AgentdError> {
    let cwd = usable_dir(&req.cwd)?;
    let isolation = match agent_type {
        Some(t) if req.isolation == Isolation::None => t.isolation,
        _ => req.isolation,
    };
    let Some(working_dir) = req.working_dir.as_deref() else {
        return Ok(Place {
            cwd,
            isolation,
            pinned: None,
        });
    };
    if isolation == Isolation::Worktree {
        return Err(AgentdError::invalid(
            "working_dir pins an existing worktree; it cannot be combined with isolation \"worktree\"",
        ));
    }
    let (dir, wt) = worktree::pinned(working_dir, &cwd)?;
    Ok(Place {
        cwd: dir,
        isolation,
        pinned: Some(wt),
    })
}

/// The first message: the prompt, and the worktree notice when the agent
/// works in a tree of its own.
fn first_message(prompt: &str, record: &AgentRecord, now: i64) -> TranscriptEntry {
    let mut content_json = json_bytes(&json!([{"type": "text", "text": prompt}]));
    if let Some(wt) = record.worktree.as_ref().filter(|w| w.owned) {
        content_json =
            worktree_notice::append_to(&content_json, &worktree_notice::text(wt, &record.cwd));
    }
    TranscriptEntry {
        seq: 0,
        role: Role::User,
        content_json,
        created_at_ms: now,
        usage: None,
        stop_reason: None,
        cache_point: None,
        compact: None,
        file_changes: Vec::new(),
        rule_decisions: Vec::new(),
    }
}

/// An absolute directory as the kernel resolves it, or why it cannot be
/// worked in.
fn usable_dir(cwd: &Path) -> Result<PathBuf, AgentdError> {
    let shown = || quote(&cwd.to_string_lossy()).to_string();
    let canonical = cwd
        .canonicalize()
        .map_err(|e| AgentdError::refused(format!("cwd '{}' cannot be used: {e}", shown())))?;
    if !canonical.is_dir() {
        return Err(AgentdError::refused(format!(
            "cwd '{}' is not a directory",
            shown()
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
    fn cwd_must_be_an_existing_directory() {
        assert!(matches!(
            usable_dir(Path::new("/definitely/not/here")),
            Err(AgentdError::Refused(_))
        ));
        assert!(usable_dir(Path::new("/")).is_ok());
        let long = PathBuf::from(format!("/{}", "a".repeat(100_000)));
        let err = usable_dir(&long).unwrap_err().to_string();
        assert!(err.len() < 300, "quotes only a prefix: {} bytes", err.len());
    }
}
