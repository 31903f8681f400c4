//! The supervisor owns the live agents: it creates them, starts and revives
//! their turn loops, records how they end (with the task notification to a
//! parent, in the same transaction), resolves ids, and recovers after a
//! crash. Control requests (send, pause, cancel, remove, background) are in
//! `control`; the tools that reach other agents in `children`.

mod children;
mod control;
pub mod hub;
mod notification;
pub mod permissions;
mod resolve;

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::{Semaphore, broadcast, oneshot};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use uuid::Uuid;

use crate::agent::types::AgentType;
use crate::agent::{Finished, StopSignals, TurnLoop, context};
use crate::config::Config;
use crate::error::AgentdError;
use crate::model::{ModelSettings, ModelSpec, Provider};
use crate::store::{
    AgentRecord, PermissionMode, PromptContext, Role, Status, Store, TranscriptEntry, now_ms,
};
use hub::{Hub, Lifecycle, LifecycleKind, StatusSnapshot};

/// Prompts larger than this are refused.
pub const MAX_PROMPT_BYTES: usize = 1024 * 1024;
/// Agents that ended longer ago than this are hidden from `list` without `--all`.
const LIST_RECENT_MS: i64 = 24 * 3600 * 1000;

/// What a client (or a parent's `Agent` call) asks for when it starts an agent.
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

/// How a foreground waiter's wait ended.
#[derive(Debug)]
pub enum WaitEnd {
    /// The agent stopped (completed, failed, cancelled, paused, interrupted).
    Finished(Box<AgentRecord>),
    /// The agent was moved to the background and keeps running.
    Released,
}

/// Controls of a running turn loop.
struct RunControl {
    /// Stops the agent at its next await point, as `cancelled`.
    cancel: CancellationToken,
    /// Stops the agent at its next safe point, as `paused`.
    pause: CancellationToken,
    /// Drops the loop outright (only after the shutdown grace period).
    kill: CancellationToken,
    /// Set when the agent is released to the background.
    backgrounded: Arc<std::sync::atomic::AtomicBool>,
}

#[derive(Default)]
struct RunState {
    control: Option<RunControl>,
    /// A parent's `Agent` call blocked on this agent (DESIGN §4).
    waiter: Option<oneshot::Sender<WaitEnd>>,
    /// Released to the background during this run.
    backgrounded: bool,
}

/// The supervisor's view of one agent: its event hub and, while a turn loop
/// runs, that loop's controls and its foreground waiter.
pub struct AgentHandle {
    pub hub: Arc<Hub>,
    run: Mutex<RunState>,
}

impl AgentHandle {
    fn run(&self) -> std::sync::MutexGuard<'_, RunState> {
        self.run.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// True while a turn loop runs (or waits for a slot) for this agent.
    pub fn is_running(&self) -> bool {
        self.run().control.is_some()
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
    /// Agents running at once; beyond it they wait as `pending`, in order.
    slots: Arc<Semaphore>,
    lifecycle: broadcast::Sender<Lifecycle>,
    asks: permissions::Asks,
}

impl Supervisor {
    pub fn new(
        store: Store,
        config: Config,
        models: ModelSettings,
        info: DaemonInfo,
    ) -> Arc<Supervisor> {
        let slots = Arc::new(Semaphore::new(config.max_running_agents.max(1) as usize));
        Arc::new(Supervisor {
            store,
            config,
            models,
            info,
            started: Instant::now(),
            handles: Mutex::new(HashMap::new()),
            shutdown: CancellationToken::new(),
            tasks: TaskTracker::new(),
            slots,
            lifecycle: broadcast::channel(4096).0,
            asks: permissions::Asks::default(),
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

    pub fn max_output_tokens(&self) -> u32 {
        self.config.max_output_tokens
    }

    /// The daemon-wide lifecycle stream (`Watch`).
    pub fn watch(&self) -> broadcast::Receiver<Lifecycle> {
        self.lifecycle.subscribe()
    }

    /// Cancelled when the daemon begins to shut down; long-lived streams end.
    pub fn shutdown_token(&self) -> CancellationToken {
        self.shutdown.clone()
    }

    /// After a crash or a stop: every agent that was live (pending, running,
    /// waiting) has no turn loop any more and becomes `interrupted`.
    /// Returns the ids marked.
    pub async fn recover(&self) -> Result<Vec<Uuid>, AgentdError> {
        let mut marked = Vec::new();
        for record in self.store.agents() {
            let mut record = record?;
            if record.status().is_live() {
                record.set_status(Status::Interrupted);
                record.updated_at_ms = now_ms();
                self.store.put_agent(&record)?;
                marked.push(record.uuid());
            }
        }
        self.store.flush().await?;
        Ok(marked)
    }

    /// At start, after `recover`: resumes the interrupted agents (config
    /// `resume_on_start`) and wakes idle agents with undelivered messages or
    /// notifications. Returns (resumed, blocked).
    pub async fn resume_after_start(
        self: &Arc<Self>,
        interrupted: &[Uuid],
    ) -> Result<(usize, usize), AgentdError> {
        let (mut resumed, mut blocked) = (0, 0);
        if self.config.resume_on_start {
            for id in interrupted {
                let Some(record) = self.store.get_agent(*id)? else {
                    continue;
                };
                match self.revive(record).await {
                    Ok(true) => resumed += 1,
                    Ok(false) => {}
                    Err(e) => {
                        blocked += 1;
                        tracing::warn!(agent = %id, error = %e, "cannot resume");
                    }
                }
            }
        }
        let mut waiting = Vec::new();
        for record in self.store.agents() {
            let record = record?;
            if matches!(record.status(), Status::Completed | Status::Paused)
                && self.store.has_inbox(record.uuid())?
            {
                waiting.push(record.uuid());
            }
        }
        for id in waiting {
            if let Err(e) = self.ensure_running(id).await {
                tracing::warn!(agent = %id, error = %e, "cannot wake an agent with undelivered messages");
            }
        }
        Ok((resumed, blocked))
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
            hub: Arc::new(Hub::new(
                id,
                next_seq,
                snapshot_of(record),
                self.lifecycle.clone(),
            )),
            run: Mutex::new(RunState::default()),
        });
        Ok(self.handles().entry(id).or_insert(handle).clone())
    }

    /// Drops the handles of agents with no loop and nobody holding them
    /// (no attacher, no waiter), so a long-lived daemon does not keep a hub
    /// for every agent it ever ran. One is made again on next use.
    fn sweep_idle_handles(&self) {
        self.handles()
            .retain(|_, h| Arc::strong_count(h) > 1 || h.run().control.is_some());
    }

    /// Validates `req` and builds what a new agent needs; stores nothing.
    fn prepare(
        &self,
        req: &NewAgent,
        parent: Option<&AgentRecord>,
        agent_type: Option<&AgentType>,
    ) -> Result<(AgentRecord, PromptContext, Provider, TranscriptEntry), AgentdError> {
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
        if !req.isolation.is_empty() {
            return Err(AgentdError::not_yet("worktree isolation"));
        }
        if parent.is_none() && !req.subagent_type.is_empty() {
            return Err(AgentdError::not_yet("subagent types for top-level agents"));
        }
        let cwd = validate_cwd(&req.cwd)?;
        let model = match parent {
            // A child without its own model uses its parent's.
            Some(p) if req.model.trim().is_empty() => p.model.clone(),
            _ => self.model_for(&req.model)?,
        };
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
            name: req.name.clone(),
            description,
            subagent_type: agent_type.map(|t| t.name.clone()).unwrap_or_default(),
            status: Status::Pending as i32,
            background: req.background,
            parent_id: parent.map(|p| p.id.clone()).unwrap_or_default(),
            model,
            cwd: cwd.display().to_string(),
            created_at_ms: now,
            updated_at_ms: now,
            started_at_ms: now,
            max_turns: if req.max_turns == 0 {
                self.config.max_turns
            } else {
                req.max_turns
            },
            // Children inherit their parent's mode; a client's agent gets
            // the one asked for (bypass when none).
            permission_mode: match (parent, req.permission_mode) {
                (Some(p), PermissionMode::Unspecified) => p.permission_mode,
                (None, PermissionMode::Unspecified) => PermissionMode::Bypass as i32,
                (_, mode) => mode as i32,
            },
            usage: Some(Default::default()),
            depth: parent.map_or(0, |p| p.depth + 1),
            ..Default::default()
        };
        let prompt = context::render(&cwd, now, agent_type);
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
        Ok((record, prompt, provider, first))
    }

    /// Validates `req`, stores the new agent with its first message, and
    /// starts its turn loop. Nothing is stored when validation fails.
    pub async fn create(self: &Arc<Self>, req: NewAgent) -> Result<AgentRecord, AgentdError> {
        let (record, prompt, provider, first) = self.prepare(&req, None, None)?;
        self.store_and_start(record, prompt, provider, first, None)
            .await
    }

    /// Stores a prepared agent (record, frozen prompt and first message in
    /// one fsync, before anyone hears of it) and starts it.
    async fn store_and_start(
        self: &Arc<Self>,
        record: AgentRecord,
        prompt: PromptContext,
        provider: Provider,
        first: TranscriptEntry,
        waiter: Option<oneshot::Sender<WaitEnd>>,
    ) -> Result<AgentRecord, AgentdError> {
        let id = record.uuid();
        self.store.put_prompt(id, &prompt)?;
        self.store.put_agent(&record)?;
        self.store.append_durable(id, &first).await?;
        tracing::info!(agent = %id, model = %record.model, parent = ?(!record.parent_id.is_empty()).then(|| record.uuid()), "agent created");
        self.sweep_idle_handles();
        let foreground = !record.background;
        let _ = self.lifecycle.send(Lifecycle {
            agent: id,
            at_ms: now_ms(),
            kind: LifecycleKind::Created(Box::new(record.clone())),
        });
        self.start(record.clone(), prompt, provider, waiter)?;
        if foreground {
            self.arm_auto_background(id);
        }
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

    /// Starts a turn loop for `record` unless one runs already (returns
    /// false then). The loop waits as `pending` for a free slot.
    fn start(
        self: &Arc<Self>,
        record: AgentRecord,
        prompt: PromptContext,
        provider: Provider,
        waiter: Option<oneshot::Sender<WaitEnd>>,
    ) -> Result<bool, AgentdError> {
        let handle = self.handle(&record)?;
        let mut run = handle.run();
        if run.control.is_some() {
            return Ok(false);
        }
        let stops = StopSignals {
            cancel: CancellationToken::new(),
            shutdown: self.shutdown.clone(),
            pause: CancellationToken::new(),
            backgrounded: Arc::default(),
        };
        let kill = CancellationToken::new();
        let turn_loop = TurnLoop::new(
            self.clone(),
            handle.hub.clone(),
            record,
            prompt,
            provider,
            stops.clone(),
        )?;
        run.control = Some(RunControl {
            cancel: stops.cancel.clone(),
            pause: stops.pause.clone(),
            kill: kill.clone(),
            backgrounded: stops.backgrounded.clone(),
        });
        run.waiter = waiter;
        run.backgrounded = false;
        handle.hub.publish_status(StatusSnapshot {
            status: Status::Pending,
            ..handle.hub.status()
        });
        drop(run);
        let sup = self.clone();
        let slots = self.slots.clone();
        self.tasks.spawn(async move {
            let finished = tokio::select! {
                biased;
                _ = kill.cancelled() => None,
                f = async {
                    // Pending until a slot frees; cancel works meanwhile.
                    let permit = tokio::select! {
                        p = slots.acquire_owned() => p.ok(),
                        _ = stops.cancel.cancelled() => None,
                    };
                    let f = turn_loop.run().await;
                    drop(permit);
                    f
                } => Some(f),
            };
            match finished {
                Some(f) => sup.finish(&handle, f).await,
                None => handle.run().control = None,
            }
        });
        Ok(true)
    }

    /// Records how a run ended. A terminal child whose parent no longer
    /// waits on it (it ran in the background or was released) puts its task
    /// notification in the parent's inbox in the same transaction; a
    /// waiting parent gets the result through its waiter instead. Exactly
    /// one of the two happens.
    async fn finish(self: &Arc<Self>, handle: &Arc<AgentHandle>, finished: Finished) {
        let Finished {
            mut record,
            outcome,
        } = finished;
        let id = record.uuid();
        let (waiter, backgrounded) = {
            let mut run = handle.run();
            (run.waiter.take(), run.backgrounded)
        };
        record.background |= backgrounded;
        let status = record.status();
        let parent = (!record.parent_id.is_empty())
            .then(|| Uuid::from_slice(&record.parent_id).ok())
            .flatten();
        let note = match parent {
            Some(p) if waiter.is_none() && status.is_terminal() => {
                Some((p, notification::task_notification(&record, &outcome)))
            }
            _ => None,
        };
        let written = self
            .store
            .finish_agent(&record, note.as_ref().map(|(p, item)| (*p, item)))
            .await;
        if let Err(e) = &written {
            tracing::error!(agent = %id, error = %e, "could not record the agent's end");
        }
        handle.hub.publish_status(snapshot_of(&record));
        if let Some(w) = waiter {
            let _ = w.send(WaitEnd::Finished(Box::new(record.clone())));
        }
        handle.run().control = None;
        if self.shutdown.is_cancelled() {
            return;
        }
        // A message that arrived while the loop was finishing wakes it again.
        if matches!(status, Status::Completed | Status::Paused)
            && self.store.has_inbox(id).unwrap_or(false)
            && let Err(e) = self.ensure_running(id).await
        {
            tracing::warn!(agent = %id, error = %e, "cannot wake the agent for its new messages");
        }
        if written.is_ok()
            && let Some((parent, item)) = &note
        {
            let _ = self.lifecycle.send(Lifecycle {
                agent: *parent,
                at_ms: now_ms(),
                kind: LifecycleKind::Notification(item.text.clone()),
            });
        }
        if written.is_ok()
            && let Some((parent, _)) = note
            && let Err(e) = self.ensure_running(parent).await
        {
            tracing::warn!(agent = %parent, error = %e, "cannot wake the parent for its notification");
        }
    }

    /// Starts a loop for an existing agent (revival, resume after restart).
    /// Ok(false) when one already runs. Errors when the agent cannot be
    /// resumed; the reason is recorded as `resume_blocked_reason`.
    async fn revive(self: &Arc<Self>, mut record: AgentRecord) -> Result<bool, AgentdError> {
        let id = record.uuid();
        let blocked = |reason: &str, detail: String| (reason.to_string(), detail);
        let check = (|| {
            let prompt = match self.store.get_prompt(id) {
                Ok(Some(p)) => p,
                _ => {
                    return Err(blocked(
                        "transcript_missing",
                        "its stored prompt context is gone".into(),
                    ));
                }
            };
            if self.store.transcript_len(id).unwrap_or(0) == 0 {
                return Err(blocked(
                    "transcript_missing",
                    "its transcript is empty".into(),
                ));
            }
            let cwd = Path::new(&record.cwd);
            if !cwd.is_dir() {
                return Err(blocked(
                    "cwd_missing",
                    format!("its working directory {} is gone", record.cwd),
                ));
            }
            let provider = ModelSpec::parse(&record.model)
                .and_then(|spec| Provider::from_spec(&spec, cwd, &self.models))
                .map_err(|e| blocked("model_unavailable", e.to_string()))?;
            Ok((prompt, provider))
        })();
        match check {
            Ok((prompt, provider)) => {
                if self.handle(&record)?.is_running() {
                    return Ok(false);
                }
                record.resume_blocked_reason.clear();
                record.started_at_ms = now_ms();
                // Pending from now on, for every reader (waiters included),
                // until the loop takes a slot and runs.
                record.set_status(Status::Pending);
                record.updated_at_ms = now_ms();
                self.store.put_agent_durable(&record).await?;
                self.start(record, prompt, provider, None)
            }
            Err((reason, detail)) => {
                record.resume_blocked_reason = reason.clone();
                record.updated_at_ms = now_ms();
                self.store.put_agent_durable(&record).await?;
                self.handle(&record)?
                    .hub
                    .publish_status(snapshot_of(&record));
                Err(AgentdError::precondition(format!(
                    "agent {} cannot be resumed ({reason}): {detail}",
                    short(&record)
                )))
            }
        }
    }

    /// Releases a foreground agent to the background after the configured
    /// time (DESIGN §4), unless it ended or was released before.
    fn arm_auto_background(self: &Arc<Self>, id: Uuid) {
        let secs = self.config.auto_background_secs();
        if secs == 0 {
            return;
        }
        let sup = self.clone();
        self.tasks.spawn(async move {
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_secs(secs)) => {
                    if let Err(e) = sup.background_by_id(id, "auto").await {
                        tracing::debug!(agent = %id, error = %e, "auto-background skipped");
                    }
                }
                _ = sup.shutdown.cancelled() => {}
            }
        });
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
                if let Some(control) = handle.run().control.as_ref() {
                    control.kill.cancel();
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
