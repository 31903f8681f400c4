//! The supervisor owns the live agents: it creates them, starts their turn
//! loops, resolves ids, cancels and waits on them, recovers after a crash
//! and stops them at shutdown.

pub mod hub;
mod resolve;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use uuid::Uuid;

use crate::agent::{StopSignals, TurnLoop, context};
use crate::config::Config;
use crate::error::AgentdError;
use crate::model::{ModelSettings, ModelSpec, Provider};
use crate::store::{AgentRecord, PermissionMode, Role, Status, Store, TranscriptEntry, now_ms};
use hub::{Hub, StatusSnapshot};

/// Prompts larger than this are refused.
pub const MAX_PROMPT_BYTES: usize = 1024 * 1024;
/// Agents that ended longer ago than this are hidden from `list` without `--all`.
const LIST_RECENT_MS: i64 = 24 * 3600 * 1000;

/// What a client asks for when it starts an agent.
#[derive(Debug, Clone, Default)]
pub struct NewAgent {
    pub prompt: String,
    pub model: String,
    pub name: String,
    pub description: String,
    pub cwd: String,
    pub background: bool,
    pub permission_mode: PermissionMode,
    pub max_turns: u32,
    pub subagent_type: String,
    pub isolation: String,
}

/// Controls of a running turn loop.
struct RunControl {
    /// Stops the agent at its next await point, as `cancelled`.
    cancel: CancellationToken,
    /// Drops the loop outright (only after the shutdown grace period).
    kill: CancellationToken,
}

/// The supervisor's view of one agent: its event hub and, while a turn loop
/// runs, that loop's controls.
pub struct AgentHandle {
    pub hub: Arc<Hub>,
    run: Mutex<Option<RunControl>>,
}

impl AgentHandle {
    fn run(&self) -> std::sync::MutexGuard<'_, Option<RunControl>> {
        self.run.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Where the daemon serves, for `status`.
#[derive(Debug, Clone)]
pub struct DaemonInfo {
    pub socket: PathBuf,
    pub data_dir: PathBuf,
}

pub struct Supervisor {
    store: Store,
    config: Config,
    models: ModelSettings,
    info: DaemonInfo,
    started: Instant,
    handles: Mutex<HashMap<Uuid, Arc<AgentHandle>>>,
    shutdown: CancellationToken,
    tasks: TaskTracker,
}

impl Supervisor {
    pub fn new(
        store: Store,
        config: Config,
        models: ModelSettings,
        info: DaemonInfo,
    ) -> Arc<Supervisor> {
        Arc::new(Supervisor {
            store,
            config,
            models,
            info,
            started: Instant::now(),
            handles: Mutex::new(HashMap::new()),
            shutdown: CancellationToken::new(),
            tasks: TaskTracker::new(),
        })
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    pub fn info(&self) -> &DaemonInfo {
        &self.info
    }

    pub fn uptime(&self) -> std::time::Duration {
        self.started.elapsed()
    }

    /// Cancelled when the daemon begins to shut down; long-lived streams end.
    pub fn shutdown_token(&self) -> CancellationToken {
        self.shutdown.clone()
    }

    /// After a crash or a stop: every agent that was live (pending, running,
    /// waiting) has no turn loop any more and becomes `interrupted`.
    /// Returns how many were marked.
    pub async fn recover(&self) -> Result<usize, AgentdError> {
        let mut marked = 0;
        for record in self.store.agents() {
            let mut record = record?;
            if record.status().is_live() {
                record.set_status(Status::Interrupted);
                record.updated_at_ms = now_ms();
                self.store.put_agent(&record)?;
                marked += 1;
            }
        }
        self.store.flush().await?;
        Ok(marked)
    }

    fn handles(&self) -> std::sync::MutexGuard<'_, HashMap<Uuid, Arc<AgentHandle>>> {
        self.handles.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The handle of `record`'s agent, created on first use.
    pub fn handle(&self, record: &AgentRecord) -> Result<Arc<AgentHandle>, AgentdError> {
        let id = record.uuid();
        if let Some(h) = self.handles().get(&id) {
            return Ok(h.clone());
        }
        // No handle means no turn loop, hence no writer: the length read
        // here cannot go stale before the handle is inserted.
        let next_seq = self.store.transcript_len(id)?;
        let handle = Arc::new(AgentHandle {
            hub: Arc::new(Hub::new(next_seq, snapshot_of(record))),
            run: Mutex::new(None),
        });
        Ok(self.handles().entry(id).or_insert(handle).clone())
    }

    /// Validates `req`, stores the new agent with its first message, and
    /// starts its turn loop. Nothing is stored when validation fails.
    pub async fn create(self: &Arc<Self>, req: NewAgent) -> Result<AgentRecord, AgentdError> {
        if self.shutdown.is_cancelled() {
            return Err(AgentdError::Unavailable("agentd is shutting down".into()));
        }
        if req.prompt.trim().is_empty() {
            return Err(AgentdError::invalid("the prompt is empty"));
        }
        if req.prompt.len() > MAX_PROMPT_BYTES {
            return Err(AgentdError::invalid(format!(
                "the prompt is {} bytes; the limit is {MAX_PROMPT_BYTES} bytes (1 MiB)",
                req.prompt.len()
            )));
        }
        match req.permission_mode {
            PermissionMode::Unspecified | PermissionMode::Bypass => {}
            other => {
                return Err(AgentdError::Unimplemented(format!(
                    "permission mode {other:?} is not implemented in agentd {} yet; only bypass is",
                    agentd_shared::VERSION
                )));
            }
        }
        if !req.isolation.is_empty() {
            return Err(AgentdError::not_yet("worktree isolation"));
        }
        if !req.subagent_type.is_empty() {
            return Err(AgentdError::not_yet("subagent types"));
        }
        let cwd = validate_cwd(&req.cwd)?;
        let model = self.model_for(&req.model)?;
        let spec = ModelSpec::parse(&model)?;
        let provider = Provider::from_spec(&spec, &cwd, &self.models)?;
        if !req.name.is_empty() {
            resolve::validate_name(&req.name)?;
            self.ensure_name_free(&req.name)?;
        }

        let id = Uuid::now_v7();
        let now = now_ms();
        let description = if req.description.trim().is_empty() {
            describe(&req.prompt)
        } else {
            req.description.trim().to_string()
        };
        let record = AgentRecord {
            id: id.as_bytes().to_vec(),
            name: req.name,
            description,
            subagent_type: String::new(),
            status: Status::Pending as i32,
            background: req.background,
            parent_id: Vec::new(),
            model,
            cwd: cwd.display().to_string(),
            created_at_ms: now,
            updated_at_ms: now,
            max_turns: if req.max_turns == 0 {
                self.config.max_turns
            } else {
                req.max_turns
            },
            permission_mode: PermissionMode::Bypass as i32,
            usage: Some(Default::default()),
            ..Default::default()
        };
        let prompt = context::render(&cwd, now);
        let first = TranscriptEntry {
            seq: 0,
            role: Role::User as i32,
            content_json: serde_json::to_vec(
                &serde_json::json!([{"type": "text", "text": req.prompt}]),
            )
            .unwrap_or_default(),
            created_at_ms: now,
            usage: None,
            stop_reason: String::new(),
        };
        // Record, frozen prompt and first message reach disk in one fsync
        // before the client hears of the agent.
        self.store.put_prompt(id, &prompt)?;
        self.store.put_agent(&record)?;
        self.store.append_durable(id, &first).await?;
        tracing::info!(agent = %id, model = %record.model, "agent created");

        self.start(record.clone(), prompt, provider)?;
        Ok(record)
    }

    fn model_for(&self, requested: &str) -> Result<String, AgentdError> {
        let requested = requested.trim();
        if !requested.is_empty() {
            return Ok(requested.to_string());
        }
        if let Some(m) = self.config.default_model.as_ref().filter(|m| !m.is_empty()) {
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

    fn ensure_name_free(&self, name: &str) -> Result<(), AgentdError> {
        for record in self.store.agents() {
            let record = record?;
            if record.name == name && !record.status().is_terminal() {
                return Err(AgentdError::AlreadyExists(format!(
                    "the name '{name}' is taken by agent {} ({}); pick another or stop that agent first",
                    agentd_shared::ids::short_id(&record.uuid().to_string()),
                    record.status().as_str()
                )));
            }
        }
        Ok(())
    }

    /// Starts the turn loop of `record` as a tracked task.
    fn start(
        self: &Arc<Self>,
        record: AgentRecord,
        prompt: crate::store::PromptContext,
        provider: Provider,
    ) -> Result<(), AgentdError> {
        let handle = self.handle(&record)?;
        let cancel = CancellationToken::new();
        let kill = CancellationToken::new();
        let turn_loop = TurnLoop::new(
            self.store.clone(),
            handle.hub.clone(),
            record,
            prompt,
            provider,
            self.config.max_output_tokens,
            StopSignals {
                cancel: cancel.clone(),
                shutdown: self.shutdown.clone(),
            },
        )?;
        *handle.run() = Some(RunControl {
            cancel,
            kill: kill.clone(),
        });
        let task_handle = handle.clone();
        self.tasks.spawn(async move {
            tokio::select! {
                _ = turn_loop.run() => {}
                _ = kill.cancelled() => {}
            }
            task_handle.run().take();
        });
        Ok(())
    }

    /// Finds the agent named by a full id, a unique id prefix, or a name.
    pub fn resolve(&self, query: &str) -> Result<AgentRecord, AgentdError> {
        resolve::resolve(&self.store, query)
    }

    /// Agents oldest first; without `all`, those that ended over a day ago
    /// are left out.
    pub fn list(&self, all: bool) -> Result<Vec<AgentRecord>, AgentdError> {
        let cutoff = now_ms() - LIST_RECENT_MS;
        let mut out = Vec::new();
        for record in self.store.agents() {
            match record {
                Ok(r) if all || !r.status().is_terminal() || r.updated_at_ms >= cutoff => {
                    out.push(r)
                }
                Ok(_) => {}
                Err(e) => tracing::error!(error = %e, "skipping a corrupt agent record in list"),
            }
        }
        Ok(out)
    }

    /// Agent counts by status.
    pub fn counts(&self) -> Result<BTreeMap<Status, u64>, AgentdError> {
        let mut counts = BTreeMap::new();
        for record in self.store.agents() {
            *counts.entry(record?.status()).or_insert(0) += 1;
        }
        Ok(counts)
    }

    /// Cancels the agent: a running loop stops at once (an in-flight model
    /// call is dropped, a running tool is killed); an idle agent is marked
    /// cancelled. Returns the agent as it ended.
    pub async fn cancel(&self, query: &str) -> Result<AgentRecord, AgentdError> {
        let record = self.resolve(query)?;
        let status = record.status();
        if status.is_terminal() {
            return Err(AgentdError::precondition(format!(
                "agent {} has already {}; there is nothing to stop",
                short(&record),
                status.as_str()
            )));
        }
        let handle = self.handle(&record)?;
        let token = handle.run().as_ref().map(|r| r.cancel.clone());
        match token {
            Some(token) => {
                token.cancel();
                self.wait_until_idle(&handle).await?;
            }
            None => {
                let mut cancelled = record.clone();
                cancelled.set_status(Status::Cancelled);
                cancelled.updated_at_ms = now_ms();
                self.store.put_agent_durable(&cancelled).await?;
                handle.hub.publish_status(snapshot_of(&cancelled));
            }
        }
        self.reload(&record)
    }

    /// Waits until the agent is no longer live, then returns it.
    pub async fn wait(&self, query: &str) -> Result<AgentRecord, AgentdError> {
        let record = self.resolve(query)?;
        let handle = self.handle(&record)?;
        self.wait_until_idle(&handle).await?;
        self.reload(&record)
    }

    async fn wait_until_idle(&self, handle: &AgentHandle) -> Result<(), AgentdError> {
        let mut status = handle.hub.watch_status();
        tokio::select! {
            r = status.wait_for(|s| !s.status.is_live()) => {
                r.map_err(|_| AgentdError::Unavailable("agentd is shutting down".into()))?;
                Ok(())
            }
            _ = self.shutdown.cancelled() => {
                Err(AgentdError::Unavailable("agentd is shutting down".into()))
            }
        }
    }

    fn reload(&self, record: &AgentRecord) -> Result<AgentRecord, AgentdError> {
        let id = record.uuid();
        self.store
            .get_agent(id)?
            .ok_or_else(|| AgentdError::NotFound(format!("agent {id} was removed")))
    }

    /// Stops every agent: running turns get `grace` to reach a safe point
    /// (they then stop as `interrupted`); loops still running after that are
    /// dropped and their agents marked `interrupted`. Flushes the store.
    pub async fn shutdown(&self) {
        self.shutdown.cancel();
        self.tasks.close();
        let grace = self.config.shutdown_grace();
        if tokio::time::timeout(grace, self.tasks.wait())
            .await
            .is_err()
        {
            let handles: Vec<_> = self.handles().values().cloned().collect();
            let mut killed = 0;
            for handle in handles {
                if let Some(run) = handle.run().as_ref() {
                    run.kill.cancel();
                    killed += 1;
                }
            }
            tracing::warn!(
                killed,
                ?grace,
                "turns did not reach a safe point in time; stopping them"
            );
            self.tasks.wait().await;
            if let Err(e) = self.recover().await {
                tracing::error!(error = %e, "could not mark stopped agents interrupted");
            }
        }
        if let Err(e) = self.store.flush().await {
            tracing::error!(error = %e, "final store flush failed");
        }
    }
}

fn snapshot_of(record: &AgentRecord) -> StatusSnapshot {
    StatusSnapshot {
        status: record.status(),
        result: record.result.clone(),
        error: record.error.clone(),
        turns: record.turns,
    }
}

fn short(record: &AgentRecord) -> String {
    agentd_shared::ids::short_id(&record.uuid().to_string()).to_string()
}

/// A one-line description from the prompt: its first non-blank line, cut at
/// 60 characters.
fn describe(prompt: &str) -> String {
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
            "cwd '{cwd}' is not an absolute path"
        )));
    }
    let canonical = path
        .canonicalize()
        .map_err(|e| AgentdError::precondition(format!("cwd '{cwd}' cannot be used: {e}")))?;
    if !canonical.is_dir() {
        return Err(AgentdError::precondition(format!(
            "cwd '{cwd}' is not a directory"
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
        assert!(matches!(
            validate_cwd(""),
            Err(AgentdError::InvalidArgument(_))
        ));
        assert!(matches!(
            validate_cwd("rel/dir"),
            Err(AgentdError::InvalidArgument(_))
        ));
        assert!(matches!(
            validate_cwd("/definitely/not/here"),
            Err(AgentdError::FailedPrecondition(_))
        ));
        assert!(validate_cwd("/").is_ok());
    }
}
