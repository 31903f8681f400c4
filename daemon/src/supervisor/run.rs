//! Running an agent: starting its turn loop (as `pending` until a running
//! slot frees), recording how the run ended, and reviving an agent that is
//! idle (a message for it, or a restart).

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::host::SupervisorHost;
use super::registry::{AgentHandle, RunControl};
use super::{Supervisor, notification, short};
use crate::agent::events::StatusSnapshot;
use crate::agent::events::{Lifecycle, LifecycleKind};
use crate::agent::run_permit::RunPermit;
use crate::agent::turn::compaction::CompactQueue;
use crate::agent::{
    CoreSetup, EndRoute, FanOutRole, Finished, Foreground, ModelSetup, RunEnd, RunSetup, Runner,
    StopSignals, WaitEnd,
};
use crate::domain::{
    AgentRecord, Outcome, PromptContext, ResumeBlocked, ResumeBlockedReason, Status, now_ms,
};
use crate::error::AgentdError;
use crate::mcp::Setup;
use crate::mcp::servers::McpServers;
use crate::model::window::ContextLimits;
use crate::model::{ModelSpec, Provider};
use crate::tools::spool::Spool;

impl Supervisor {
    /// Starts a turn loop for `record` unless one runs already (Ok(false)
    /// then). The loop waits as `pending` for a free slot, then loads its
    /// transcript on its own task.
    pub(super) fn start(
        self: &Arc<Self>,
        record: AgentRecord,
        prompt: PromptContext,
        provider: Option<Provider>,
        foreground: Foreground,
        fan_out: FanOutRole,
    ) -> Result<bool, AgentdError> {
        self.start_with(record, prompt, provider, foreground, fan_out, None)
    }

    /// `start`, with the compactions the run is to do (a run that only
    /// compacts an idle agent): only a model's run can be given them.
    pub(super) fn start_with(
        self: &Arc<Self>,
        record: AgentRecord,
        prompt: PromptContext,
        provider: Option<Provider>,
        foreground: Foreground,
        fan_out: FanOutRole,
        compaction: Option<Arc<CompactQueue>>,
    ) -> Result<bool, AgentdError> {
        let handle = self.handle(&record)?;
        let (runner, mcp) =
            self.runner_for(&record, prompt, provider, fan_out, &compaction, &handle)?;
        // Only the model driver can be asked to compact.
        let compaction = match &runner {
            Runner::Model(m) => Some(m.compaction.clone()),
            Runner::External(_) => None,
        };
        let stops = StopSignals::new(self.runs.shutdown_token().clone());
        let kill = CancellationToken::new();
        let foreground = Arc::new(foreground);
        {
            let mut run = handle.run();
            if run.is_some() {
                return Ok(false);
            }
            *run = Some(RunControl {
                stops: stops.clone(),
                kill: kill.clone(),
                foreground: foreground.clone(),
                compaction: compaction.clone(),
                mcp: mcp.clone(),
            });
        }
        handle.hub.publish_status(StatusSnapshot {
            status: Status::Pending,
            ..handle.hub.status()
        });
        let sup = self.clone();
        self.runs.spawn(async move {
            let slot = Arc::new(RunPermit::new(sup.run_slots(&record)));
            let extra_hosts = match &runner {
                Runner::External(x) => crate::config::agent_hosts::allowed(&x.def),
                Runner::Model(_) => Vec::new(),
            };
            let egress = sup.egress_for(&record, extra_hosts, true);
            let setup = RunSetup {
                core: CoreSetup {
                    store: sup.store.clone(),
                    host: Arc::new(SupervisorHost(sup.clone())),
                    hub: handle.hub.clone(),
                    foreground,
                    slot: slot.clone(),
                    spool: Spool::new(&sup.settings.info().data_dir, record.id),
                    record: record.clone(),
                    stops: stops.clone(),
                    tool_env: sup.settings.tool_env().clone(),
                    egress,
                    git: None,
                    rules: Arc::from(Vec::new()),
                    hooks: Arc::from(Vec::new()),
                },
                runner,
            };
            let finished = tokio::select! {
                biased;
                _ = kill.cancelled() => None,
                f = async {
                    // Pending until a slot frees. A stop meanwhile ends the
                    // run before it starts: nothing runs, nothing is read.
                    let stopped = tokio::select! {
                        _ = slot.acquire() => None,
                        stop = stops.any() => Some(stop),
                    };
                    if let Some(outcome) = stopped {
                        let mut record = record;
                        record.status = outcome.status();
                        record.updated_at_ms = now_ms();
                        return Finished { record, outcome };
                    }
                    let setup = match sup.with_quarantine(setup).await {
                        Ok(setup) => setup,
                        Err(failed) => return *failed,
                    };
                    match crate::agent::runner::run(setup).await {
                        Ok(finished) => finished,
                        Err(e) => {
                            let mut record = record;
                            record.status = Status::Failed;
                            let why = format!("cannot read the transcript: {e}");
                            record.outcome = Some(Outcome::Failed(why.clone()));
                            record.updated_at_ms = now_ms();
                            tracing::error!(agent = %record.id, error = %e, "cannot start the agent's turn loop");
                            Finished {
                                outcome: RunEnd::Failed(why),
                                record,
                            }
                        }
                    }
                } => Some(f),
            };
            match finished {
                Some(f) => sup.finish(&handle, f).await,
                None => *handle.run() = None,
            }
        });
        Ok(true)
    }

    /// What drives `record`'s run: the model (with `provider`) or its
    /// external agent; and its MCP servers.
    fn runner_for(
        &self,
        record: &AgentRecord,
        prompt: PromptContext,
        provider: Option<Provider>,
        fan_out: FanOutRole,
        compaction: &Option<Arc<CompactQueue>>,
        handle: &Arc<AgentHandle>,
    ) -> Result<(Runner, Arc<McpServers>), AgentdError> {
        let mcp = Arc::new(McpServers::new(
            &Setup::from_json(&prompt.mcp_json),
            self.mcp_pool.clone(),
        ));
        let runner = match provider {
            Some(provider) => Runner::Model(Box::new(ModelSetup {
                provider,
                prompt,
                max_output_tokens: self.config().max_output_tokens,
                fan_out,
                limits: ModelSpec::parse(&record.model)
                    .map(|m| self.config().context_limits(&m))
                    .unwrap_or(ContextLimits {
                        window: None,
                        compact_at: crate::model::window::DEFAULT_COMPACT_AT,
                    }),
                compaction: compaction.clone().unwrap_or_default(),
                mcp: mcp.clone(),
            })),
            None if compaction.is_some() => return Err(Supervisor::no_compaction(record)),
            None => self.external_runner(record, &prompt, handle)?,
        };
        Ok((runner, mcp))
    }

    /// `setup` with its agent's git quarantine readied (DESIGN §23); the
    /// run's failure, saying why, when it cannot be.
    async fn with_quarantine(&self, mut setup: RunSetup) -> Result<RunSetup, Box<Finished>> {
        let readied = match self.rules_for(&setup.core.record) {
            Ok((rules, hooks)) => {
                setup.core.rules = rules.into();
                // An external agent (Claude Code) runs its own hooks from
                // the same files: agentd does not run them twice.
                if setup.core.record.external.is_none() {
                    setup.core.hooks = hooks.into();
                }
                self.ready_quarantine(&setup.core.record).await
            }
            Err(why) => Err(why),
        };
        match readied {
            Ok(git) => {
                setup.core.git = git;
                Ok(setup)
            }
            Err(why) => {
                let mut record = setup.core.record;
                record.status = Status::Failed;
                record.outcome = Some(Outcome::Failed(why.clone()));
                record.updated_at_ms = now_ms();
                Err(Box::new(Finished {
                    outcome: RunEnd::Failed(why),
                    record,
                }))
            }
        }
    }

    /// Records how a run ended. Exactly one party learns of the end of a
    /// child (`agent::foreground`): a parent still waiting in the
    /// foreground gets the record; otherwise a terminal child's task
    /// notification goes into its parent's inbox in the same transaction
    /// that records the end.
    async fn finish(self: &Arc<Self>, handle: &Arc<AgentHandle>, finished: Finished) {
        let Finished {
            mut record,
            outcome,
        } = finished;
        let id = record.id;
        // Before the end is written: the record (and the notification)
        // say what became of the tree, its commits counted.
        self.take_in_commits(&record).await;
        self.checkpoint_end(&record).await;
        self.settle_worktree(&mut record).await;
        let route = match handle.foreground() {
            Some(fg) => fg.end(),
            None => EndRoute::Notify,
        };
        let notice = match (&route, record.parent) {
            (EndRoute::Notify, Some(parent))
                if (record.status.is_terminal()
                    || matches!(outcome, RunEnd::BudgetExhausted(_)))
                    && record.reports_to_parent()
                    && !matches!(outcome, RunEnd::Unchanged(_)) =>
            {
                Some((parent, notification::task_notice(&record, &outcome)))
            }
            _ => None,
        };
        let written = self
            .store
            .finish_agent(&record, notice.as_ref().map(|(p, n)| (*p, &n.item)))
            .await;
        if let Err(e) = &written {
            tracing::error!(agent = %id, error = %e, "could not record the agent's end");
        }
        handle.hub.publish_status(StatusSnapshot::of(&record));
        if let EndRoute::Waiter(w) = route {
            let _ = w.send(WaitEnd::Finished(Box::new(record.clone())));
        }
        *handle.run() = None;
        if record.status.is_terminal() {
            Spool::new(&self.settings.info().data_dir, id).remove();
            crate::sandbox::remove_tmpdir(record.short_id.as_str());
        }
        if self.runs.shutting_down() {
            return;
        }
        // A message that arrived while the loop was finishing wakes it again
        // — not after an interrupt, whose point is that the agent stops
        // (the message waits for the next send).
        if matches!(record.status, Status::Completed | Status::Paused)
            && outcome != RunEnd::Halted
            && self.store.has_inbox(id).unwrap_or(false)
            && let Err(e) = self.ensure_running(id).await
        {
            tracing::warn!(agent = %id, error = %e, "cannot wake the agent for its new messages");
        }
        if written.is_ok()
            && let Some((parent, n)) = notice
        {
            let parent_short = self
                .store
                .get_agent(parent)
                .ok()
                .flatten()
                .map(|p| p.short_id)
                .unwrap_or_default();
            self.registry.publish(Lifecycle {
                agent: parent,
                short_id: parent_short,
                at_ms: now_ms(),
                kind: LifecycleKind::Notification(Box::new(n.notice)),
            });
            if let Err(e) = self.ensure_running(parent).await {
                tracing::warn!(agent = %parent, error = %e, "cannot wake the parent for its notification");
            }
        }
    }

    /// Why `record` cannot run again, if it cannot; else what it runs with.
    fn resumable(
        &self,
        record: &AgentRecord,
    ) -> Result<(PromptContext, Option<Provider>), ResumeBlocked> {
        let blocked = |reason, detail: String| ResumeBlocked { reason, detail };
        let prompt = match self.store.get_prompt(record.id) {
            Ok(Some(p)) => p,
            _ => {
                return Err(blocked(
                    ResumeBlockedReason::TranscriptMissing,
                    "its stored prompt context is gone".into(),
                ));
            }
        };
        // The store keeps the MCP setup as bytes; whether they can be read
        // is the MCP layer's to say.
        if !prompt.mcp_json.is_empty() && Setup::parse(&prompt.mcp_json).is_err() {
            return Err(blocked(
                ResumeBlockedReason::TranscriptMissing,
                "its stored prompt context cannot be read (its MCP servers)".into(),
            ));
        }
        // Empty is fine for an agent that never had an entry (created idle);
        // for one whose record counts entries, they are lost.
        if record.transcript_len > 0 && self.store.transcript_len(record.id).unwrap_or(0) == 0 {
            return Err(blocked(
                ResumeBlockedReason::TranscriptMissing,
                "its transcript is empty".into(),
            ));
        }
        if !record.cwd.is_dir() {
            return Err(blocked(
                ResumeBlockedReason::CwdMissing,
                format!("its working directory {} is gone", record.cwd.display()),
            ));
        }
        if let Some(why) = self.budget_spent(record) {
            return Err(blocked(ResumeBlockedReason::BudgetExhausted, why));
        }
        if let Some(ext) = &record.external {
            self.external_resumable(record, ext).map_err(|detail| {
                blocked(ResumeBlockedReason::ExternalAgentCannotResume, detail)
            })?;
            return Ok((prompt, None));
        }
        let provider = ModelSpec::parse(&record.model)
            .and_then(|spec| Provider::from_spec(&spec, &record.cwd, self.settings.models()))
            .map_err(|e| blocked(ResumeBlockedReason::ModelUnavailable, e.to_string()))?;
        Ok((prompt, Some(provider)))
    }

    /// Starts a loop for an existing agent (revival, resume after restart).
    /// Ok(false) when one already runs. Errors when the agent cannot be
    /// resumed; the reason is recorded as its resume-blocked reason.
    pub(super) async fn revive(self: &Arc<Self>, record: AgentRecord) -> Result<bool, AgentdError> {
        self.revive_for(record, None).await
    }

    /// `revive`; with `compaction`, for a run that only does the
    /// compactions queued there and ends as the agent was.
    pub(super) async fn revive_for(
        self: &Arc<Self>,
        record: AgentRecord,
        compaction: Option<Arc<CompactQueue>>,
    ) -> Result<bool, AgentdError> {
        let handle = self.handle(&record)?;
        let _transition = handle.transition.lock().await;
        // Read again under the lock: a cancel or another revival may have
        // come first, and a stale copy must not overwrite what it wrote.
        let Some(mut record) = self.store.get_agent(record.id)? else {
            return Ok(false);
        };
        if handle.is_running()
            || !matches!(
                record.status,
                Status::Completed | Status::Paused | Status::Interrupted
            )
        {
            return Ok(false);
        }
        let ready = match self.ready_worktree(&mut record).await {
            Ok(()) => self.resumable(&record),
            Err(blocked) => Err(blocked),
        };
        match ready {
            Ok((prompt, provider)) => {
                if let Some(queue) = &compaction {
                    queue.compact_only(record.status);
                }
                record.resume_blocked = None;
                record.started_at_ms = now_ms();
                // Pending from now on, for every reader (waiters included),
                // until the loop takes a slot and runs.
                record.status = Status::Pending;
                record.updated_at_ms = now_ms();
                self.store.put_agent_durable(&record).await?;
                self.start_with(
                    record,
                    prompt,
                    provider,
                    Foreground::background(),
                    FanOutRole::Alone,
                    compaction,
                )
            }
            Err(blocked) => {
                self.release_worktree(&record).await;
                let message = format!(
                    "agent {} cannot be resumed ({}): {}",
                    short(&record),
                    blocked.reason.as_str(),
                    blocked.detail
                );
                record.resume_blocked = Some(blocked);
                record.updated_at_ms = now_ms();
                self.store.put_agent_durable(&record).await?;
                handle.hub.publish_status(StatusSnapshot::of(&record));
                Err(AgentdError::refused(message))
            }
        }
    }
}
