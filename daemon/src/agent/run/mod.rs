//! The run core: what every run of an agent has, whoever answers for it —
//! the store, the hub it publishes to, its record, the sequence of its next
//! entry, what can stop it, its supervisor host, its processes, and the
//! writers that make an entry durable before it is published
//! (`recording`). The two drivers beside it, `agent::turn` (agentd's own
//! model loop) and `agent::external` (an ACP agent), each own a core and
//! add what only they need; `agent::runner` picks one.
//!
//! The core is the only writer of its agent's transcript and, while the
//! run lasts, of its record.

pub(in crate::agent) mod hooks;
mod permit;
pub(in crate::agent) mod recording;
pub mod stops;

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::json;

use super::foreground::Foreground;
use super::host::AgentHost;
use super::hub::Hub;
use super::run_permit::RunPermit;
use crate::domain::{AgentRecord, Outcome, Role, json_bytes, now_ms};
use crate::store::Store;
use crate::tools::spool::Spool;
use crate::tools::{AgentProcesses, ToolContext, ToolEnv};
pub use stops::{Halt, RunEnd, StopSignals};

/// What every run is made of, whoever answers for it.
pub struct CoreSetup {
    pub store: Store,
    pub host: Arc<dyn AgentHost>,
    pub hub: Arc<Hub>,
    /// The run's foreground state (its one background flag).
    pub foreground: Arc<Foreground>,
    pub slot: Arc<RunPermit>,
    pub record: AgentRecord,
    pub stops: StopSignals,
    pub tool_env: Arc<ToolEnv>,
    pub spool: Spool,
    /// Who decides its tools' connections through the network proxy.
    pub egress: Arc<dyn crate::network::Egress>,
    /// Its git quarantine (DESIGN §23), when it commits through one.
    pub git: Option<crate::sandbox::GitQuarantine>,
    /// The permission rules its calls are put to (DESIGN §24).
    pub rules: Arc<[agentd_rules::Rule]>,
    /// The hooks its events run (DESIGN §24).
    pub hooks: Arc<[agentd_rules::hooks::Hook]>,
}

/// One run's shared state; see the module header.
pub struct RunCore {
    pub(in crate::agent) store: Store,
    pub(in crate::agent) host: Arc<dyn AgentHost>,
    pub(in crate::agent) hub: Arc<Hub>,
    pub(in crate::agent) foreground: Arc<Foreground>,
    pub(in crate::agent) slot: Arc<RunPermit>,
    pub(in crate::agent) record: AgentRecord,
    pub(in crate::agent) stops: StopSignals,
    pub(in crate::agent) tool_env: Arc<ToolEnv>,
    /// This run's processes (its PID namespace); ended with the run.
    pub(in crate::agent) processes: Arc<AgentProcesses>,
    pub(in crate::agent) spool: Spool,
    /// The seq the next transcript entry gets.
    pub(in crate::agent) next_seq: u64,
    /// The entry whose turn this run last checkpointed.
    checkpointed: Option<u64>,
    /// The permission rules its calls are put to before its mode.
    pub(in crate::agent) rules: Arc<[agentd_rules::Rule]>,
    pub(in crate::agent) hooks: Arc<[agentd_rules::hooks::Hook]>,
    /// What rules decided of calls whose results are not written yet: the
    /// next entry of results carries them.
    decisions: Vec<crate::domain::RuleDecision>,
}

/// What a finished run hands back to the supervisor, which records it.
pub struct Finished {
    pub record: AgentRecord,
    pub outcome: RunEnd,
}

impl RunCore {
    /// The core of a run whose transcript's next entry is `next_seq`.
    pub fn new(setup: CoreSetup, next_seq: u64) -> RunCore {
        RunCore {
            store: setup.store,
            host: setup.host,
            hub: setup.hub,
            foreground: setup.foreground,
            slot: setup.slot,
            record: setup.record,
            stops: setup.stops,
            tool_env: setup.tool_env,
            processes: Arc::new(AgentProcesses::new(setup.egress, setup.git)),
            spool: setup.spool,
            next_seq,
            checkpointed: None,
            rules: setup.rules,
            hooks: setup.hooks,
            decisions: Vec::new(),
        }
    }

    /// How a driver's work ended, made the run's end: a store failure
    /// fails the agent; a failure's reason is written to the transcript
    /// beside what led to it; the outcome and status go into the record
    /// the supervisor writes.
    pub async fn finish(mut self, driven: Result<RunEnd, Halt>) -> Finished {
        let outcome = match driven {
            Ok(outcome) | Err(Halt::Stop(outcome)) => outcome,
            Err(Halt::Store(e)) => {
                tracing::error!(agent = %self.record.id, error = %e, "store write failed; failing the agent");
                RunEnd::Failed(format!("agentd could not write to its store: {e}"))
            }
            // (The model loop compacts on these; one never leaves it.)
            Err(Halt::Overflow(why)) => RunEnd::Failed(why),
        };
        if let RunEnd::Failed(error) = &outcome {
            let note = json!([{"type": "text", "text": format!("agent failed: {error}")}]);
            if let Err(e) = self
                .write_entry(Role::System, json_bytes(&note), None, None, &[])
                .await
            {
                tracing::warn!(agent = %self.record.id, "could not record the failure note: {}", stops::halt_text(&e));
            }
        }
        match &outcome {
            RunEnd::Completed(text) => self.record.outcome = Some(Outcome::Completed(text.clone())),
            RunEnd::Failed(error) => self.record.outcome = Some(Outcome::Failed(error.clone())),
            // Resumable once the budget is raised (`Supervisor::set_budget`
            // clears it; `resumable` checks the budget again).
            RunEnd::BudgetExhausted(why) => {
                tracing::info!(agent = %self.record.id, reason = %why, "paused: its family's budget is spent");
                self.record.resume_blocked = Some(crate::domain::ResumeBlocked {
                    reason: crate::domain::ResumeBlockedReason::BudgetExhausted,
                    detail: why.clone(),
                });
            }
            _ => {}
        }
        // SessionEnd hooks are told how the run ended (at a shutdown they
        // are cut short: `run_hooks`).
        let reason = outcome.status().to_string();
        let fields = json!({"reason": reason});
        if let Err(e) = self
            .run_hooks(agentd_rules::hooks::HookEvent::SessionEnd, &reason, fields)
            .await
        {
            tracing::warn!(agent = %self.record.id, "could not note a SessionEnd hook: {}", stops::halt_text(&e));
        }
        self.record.status = outcome.status();
        self.record.updated_at_ms = now_ms();
        self.record.background = self.foreground.is_background();
        tracing::info!(agent = %self.record.id, status = %outcome.status(), turns = self.record.turns, "agent stopped");
        Finished {
            record: self.record,
            outcome,
        }
    }

    /// Checkpoints the workspace (DESIGN §23) if the message `content_json`
    /// of entry `seq` begins a user turn this run has not checkpointed:
    /// called before anything of the turn runs.
    pub(in crate::agent) async fn checkpoint_turn(
        &mut self,
        seq: u64,
        role: crate::domain::Role,
        content_json: &[u8],
    ) {
        if self.checkpointed == Some(seq)
            || crate::domain::turns::text_of_turn(role, content_json).is_none()
        {
            return;
        }
        self.host.turn_begins(&self.record, seq).await;
        self.checkpointed = Some(seq);
    }

    /// What a tool the agent runs gets from it; `spool` is where the call
    /// keeps what it captures.
    pub(in crate::agent) fn tool_context(&self, spool: PathBuf) -> ToolContext {
        ToolContext {
            cwd: self.record.cwd.clone(),
            cancel: self.stops.interrupt.child_token(),
            spool: Some(spool),
            env: self.tool_env.clone(),
            processes: self.processes.clone(),
            worktree_of: self
                .record
                .worktree
                .as_ref()
                .filter(|w| w.owned)
                .map(|w| (w.checkout.clone(), w.path.clone())),
            sandbox: crate::sandbox::Policy::for_agent(&self.record),
        }
    }
}
