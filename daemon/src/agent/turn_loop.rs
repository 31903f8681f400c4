//! The turn loop (DESIGN §3): build the request from the transcript → stream
//! the model response → persist the assistant message → run its tool calls →
//! persist the results → repeat until the model ends its turn, `max_turns`
//! is reached, or the agent is stopped. A round of tool calls is in `round`,
//! how entries are written in `recording`.
//!
//! The loop is the only writer of its agent's transcript and, while it runs,
//! of its record. Every entry is durable before it is published, before any
//! tool it requests runs, and before the next model request. A stop (pause,
//! shutdown, cancel) in the middle of a round of tool calls records a result
//! for every call of the round, so a stopped transcript is always one a
//! model can be sent; only a crash leaves calls unanswered, and those are
//! answered when the agent resumes (`interrupted`).

use std::sync::Arc;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::compaction::CompactQueue;
pub use super::conversation::load_conversation;
use super::external::ExternalSetup;
use super::fanout::FanOutRole;
use super::foreground::Foreground;
use super::host::AgentHost;
use super::hub::Hub;
use super::mcp_servers::McpServers;
use super::round::{Call, calls_of};
use super::runner::Runner;
use super::slot::SlotLease;
use crate::domain::{
    AgentRecord, CompactTrigger, Outcome, PromptContext, Role, Status, StopReason, ToolAllowlist,
    json_bytes, now_ms,
};
use crate::model::window::ContextLimits;
use crate::model::{MessageBytes, ModelError, ModelRequest, ModelResponse, Provider};
use crate::store::{Store, StoreError};
use crate::tools::spool::Spool;
use crate::tools::{AgentProcesses, ToolEnv};

/// Consecutive responses cut off at max_tokens that the loop asks the model
/// to continue before it gives up.
const MAX_TOKENS_RECOVERIES: u32 = 3;

/// Sent when a response was cut off at the output limit with nothing to run.
pub(super) const CONTINUE_AFTER_MAX_TOKENS: &str = "Your previous response was cut off at the output token \
limit. Continue exactly where it stopped, without repeating anything. Split large outputs, such \
as big file writes, into smaller steps.";

/// How a run of the loop ended.
#[derive(Debug, Clone, PartialEq)]
pub enum RunEnd {
    Completed(String),
    Failed(String),
    Cancelled,
    /// Stopped at a safe point because the daemon is shutting down.
    Interrupted,
    /// Stopped at a safe point on request; continuable.
    Paused,
    /// Stopped at once on request (the model call or tool in flight
    /// aborted, what happened recorded); continuable, as `Paused`.
    Halted,
    /// A run that produced no answer — it only compacted an idle agent,
    /// or found nothing to send — and goes back to this status: its
    /// outcome stays the one an earlier run produced, nobody is notified.
    Unchanged(Status),
}

impl RunEnd {
    pub fn status(&self) -> Status {
        match self {
            RunEnd::Completed(_) => Status::Completed,
            RunEnd::Failed(_) => Status::Failed,
            RunEnd::Cancelled => Status::Cancelled,
            RunEnd::Interrupted => Status::Interrupted,
            RunEnd::Paused | RunEnd::Halted => Status::Paused,
            RunEnd::Unchanged(status) => *status,
        }
    }
}

/// What can stop a turn loop from outside.
#[derive(Debug, Clone)]
pub struct StopSignals {
    /// The agent is cancelled: stop at once.
    pub cancel: CancellationToken,
    /// Stop at once but stay continuable (an interrupt). A child of
    /// `cancel`, so it fires for both: what is in flight aborts on it, and
    /// `aborted` says which of the two it was.
    pub interrupt: CancellationToken,
    /// The daemon is shutting down: stop at the next safe point.
    pub shutdown: CancellationToken,
    /// The agent is paused: stop at the next safe point, continuable.
    pub pause: CancellationToken,
}

impl StopSignals {
    /// The signals of one run; `shutdown` is the daemon's.
    pub fn new(shutdown: CancellationToken) -> StopSignals {
        let cancel = CancellationToken::new();
        StopSignals {
            interrupt: cancel.child_token(),
            cancel,
            shutdown,
            pause: CancellationToken::new(),
        }
    }

    /// A safe point: returns why to stop, if anything asks.
    pub(super) fn requested(&self) -> Option<RunEnd> {
        if self.interrupt.is_cancelled() {
            Some(self.aborted())
        } else if self.shutdown.is_cancelled() {
            Some(RunEnd::Interrupted)
        } else if self.pause.is_cancelled() {
            Some(RunEnd::Paused)
        } else {
            None
        }
    }

    /// Once `interrupt` has fired: a cancel or an interrupt.
    pub(super) fn aborted(&self) -> RunEnd {
        if self.cancel.is_cancelled() {
            RunEnd::Cancelled
        } else {
            RunEnd::Halted
        }
    }

    /// Resolves when any stop is asked for.
    pub async fn any(&self) -> RunEnd {
        tokio::select! {
            biased;
            _ = self.interrupt.cancelled() => self.aborted(),
            _ = self.shutdown.cancelled() => RunEnd::Interrupted,
            _ = self.pause.cancelled() => RunEnd::Paused,
        }
    }
}

/// Why the loop's work stopped short.
pub(super) enum Halt {
    /// Asked to stop (or the run cannot go on): this is how the run ends.
    Stop(RunEnd),
    /// The store failed in a way waiting for space cannot fix.
    Store(StoreError),
    /// The provider refused the request as longer than the model's
    /// context window: compact and send it again.
    Overflow(String),
}

/// What an answer without tool calls leads to.
enum AfterAnswer {
    End(RunEnd),
    /// Another turn (a message came, or the answer was cut off).
    Continue,
    /// The server paused the turn: its message goes back as is.
    ContinuePaused,
}

impl From<StoreError> for Halt {
    fn from(e: StoreError) -> Halt {
        Halt::Store(e)
    }
}

/// Everything a loop is made of.
pub struct LoopSetup {
    pub store: Store,
    pub host: Arc<dyn AgentHost>,
    pub hub: Arc<Hub>,
    /// The run's foreground state (its one background flag).
    pub foreground: Arc<Foreground>,
    pub slot: Arc<SlotLease>,
    pub record: AgentRecord,
    pub prompt: PromptContext,
    /// Who answers: a model agentd calls, or another coding agent.
    pub runner: Runner,
    pub stops: StopSignals,
    pub tool_env: Arc<ToolEnv>,
    pub spool: Spool,
    pub max_output_tokens: u32,
    /// A fork's place among siblings launched together.
    pub fan_out: FanOutRole,
    /// When its conversation is compacted (DESIGN §17).
    pub limits: ContextLimits,
    /// Compactions asked for by hand while it runs.
    pub compaction: Arc<CompactQueue>,
    /// Its MCP servers' sessions, ended with the run.
    pub mcp: Arc<McpServers>,
    /// Who decides its tools' connections through the network proxy.
    pub egress: Arc<dyn crate::network::Egress>,
}

pub struct TurnLoop {
    pub(super) store: Store,
    pub(super) host: Arc<dyn AgentHost>,
    pub(super) hub: Arc<Hub>,
    pub(super) foreground: Arc<Foreground>,
    pub(super) slot: Arc<SlotLease>,
    pub(super) record: AgentRecord,
    pub(super) system_json: Arc<[u8]>,
    pub(super) tools_json: Arc<[u8]>,
    /// Tools this agent may run (its type's); others get a tool error.
    pub(super) allowed_tools: Option<ToolAllowlist>,
    /// None for an agent another coding agent runs (`external`).
    pub(super) provider: Option<Provider>,
    /// Taken when the run starts: set for an external agent.
    pub(super) external: Option<ExternalSetup>,
    pub(super) stops: StopSignals,
    pub(super) tool_env: Arc<ToolEnv>,
    /// This run's processes (its PID namespace); ended with the run.
    pub(super) processes: Arc<AgentProcesses>,
    /// Its MCP servers (DESIGN §18), started as calls need them.
    pub(super) mcp: Arc<McpServers>,
    pub(super) spool: Spool,
    /// The conversation as it is sent, with the seq of each entry.
    pub(super) messages: Vec<(u64, MessageBytes)>,
    pub(super) next_seq: u64,
    pub(super) max_output_tokens: u32,
    pub(super) fan_out: FanOutRole,
    pub(super) limits: ContextLimits,
    pub(super) compaction: Arc<CompactQueue>,
    /// The newest assistant entry's seq, and the tokens its request and
    /// answer came to (as reported): the base of the next estimate.
    pub(super) usage_at: Option<(u64, u64)>,
}

/// What a finished loop hands back to the supervisor, which records it.
pub struct Finished {
    pub record: AgentRecord,
    pub outcome: RunEnd,
}

impl TurnLoop {
    /// Prepares a loop, loading its transcript from the store. Called on
    /// the loop's own task, never under a lock.
    pub fn new(setup: LoopSetup) -> Result<TurnLoop, StoreError> {
        let (messages, next_seq) = load_conversation(&setup.store, &setup.record)?;
        let (provider, external) = match setup.runner {
            Runner::Model(p) => (Some(p), None),
            Runner::External(x) => (None, Some(*x)),
        };
        Ok(TurnLoop {
            store: setup.store,
            host: setup.host,
            hub: setup.hub,
            foreground: setup.foreground,
            slot: setup.slot,
            record: setup.record,
            system_json: setup.prompt.system_json.into(),
            tools_json: setup.prompt.tools_json.into(),
            allowed_tools: setup.prompt.allowed_tools,
            provider,
            external,
            stops: setup.stops,
            tool_env: setup.tool_env,
            processes: Arc::new(AgentProcesses::with_egress(setup.egress)),
            mcp: setup.mcp,
            spool: setup.spool,
            messages,
            next_seq,
            max_output_tokens: setup.max_output_tokens,
            fan_out: setup.fan_out,
            limits: setup.limits,
            compaction: setup.compaction,
            usage_at: None,
        })
    }

    /// Runs the agent until it ends, stops or pauses. The final state is
    /// returned for the supervisor to record (with any notification).
    pub async fn run(mut self) -> Finished {
        let outcome = match self.drive().await {
            Ok(outcome) | Err(Halt::Stop(outcome)) => outcome,
            Err(Halt::Store(e)) => {
                tracing::error!(agent = %self.record.id, error = %e, "store write failed; failing the agent");
                RunEnd::Failed(format!("agentd could not write to its store: {e}"))
            }
            // (The loop compacts on these; one never leaves it.)
            Err(Halt::Overflow(why)) => RunEnd::Failed(why),
        };
        if let RunEnd::Failed(error) = &outcome {
            // The reason stays in the transcript too, next to what led to it.
            let note = json!([{"type": "text", "text": format!("agent failed: {error}")}]);
            if let Err(e) = self
                .write_entry(Role::System, json_bytes(&note), None, None, &[])
                .await
            {
                tracing::warn!(agent = %self.record.id, "could not record the failure note: {}", halt_text(&e));
            }
        }
        match &outcome {
            RunEnd::Completed(text) => self.record.outcome = Some(Outcome::Completed(text.clone())),
            RunEnd::Failed(error) => self.record.outcome = Some(Outcome::Failed(error.clone())),
            _ => {}
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

    async fn drive(&mut self) -> Result<RunEnd, Halt> {
        if let Some(external) = self.external.take() {
            return self.drive_external(external).await;
        }
        self.set_status(Status::Running).await?;
        self.answer_interrupted_calls().await?;
        if let Some(end) = self.compact_only().await {
            return end;
        }
        // Turn boundary: messages and notifications that arrived while the
        // agent was idle (or before it started) are delivered first.
        self.deliver_inbox(Vec::new()).await?;
        let mut max_tokens_recoveries = 0;
        // max_turns bounds one run (a task, or one message's worth of
        // work after a revival), not the agent's whole life: a long-lived
        // session would otherwise run out for good.
        let turns_before = self.record.turns;
        // Set after `pause_turn`: the assistant message goes back as is.
        let mut continuing_paused_turn = false;
        loop {
            if let Some(stop) = self.stops.requested() {
                return Ok(stop);
            }
            let awaiting_answer = self
                .messages
                .last()
                .is_some_and(|(_, m)| m.role == Role::User);
            if !awaiting_answer && !std::mem::take(&mut continuing_paused_turn) {
                // Nothing new to answer (a revival with no message, or a
                // resume after the end was written but not its record):
                // the answer is the last one in the transcript.
                return Ok(RunEnd::Completed(self.last_answer()));
            }
            if self.record.turns - turns_before >= self.record.max_turns {
                return Ok(RunEnd::Failed(format!(
                    "stopped after reaching max_turns ({}) without a final answer",
                    self.record.max_turns
                )));
            }
            self.compact_if_due().await?;
            let response = match self.call_model().await {
                Err(Halt::Overflow(why)) => {
                    tracing::info!(agent = %self.record.id, reason = %why, "the provider says the request is too long");
                    // Only the request's length was refused: compact and
                    // send it again (a compacted conversation that still
                    // does not fit fails the agent).
                    self.compact(CompactTrigger::Overflow, None).await?;
                    continue;
                }
                r => r?,
            };
            let calls = calls_of(&response.content);
            let assistant_seq = self.record_answer(&response, &calls).await?;
            if calls.is_empty() {
                match self
                    .after_answer_without_calls(&response, &mut max_tokens_recoveries)
                    .await?
                {
                    AfterAnswer::End(end) => return Ok(end),
                    AfterAnswer::ContinuePaused => continuing_paused_turn = true,
                    AfterAnswer::Continue => {}
                }
                continue;
            }
            max_tokens_recoveries = 0;
            self.run_round(assistant_seq, &calls).await?;
        }
    }

    /// One model call with the conversation so far. A stop asked for while
    /// the model answers ends the run (`Halt::Stop`); so does a failed call.
    async fn call_model(&mut self) -> Result<ModelResponse, Halt> {
        let request = ModelRequest {
            model: self.record.model.clone(),
            system_json: self.system_json.clone(),
            tools_json: self.tools_json.clone(),
            messages: self.messages.iter().map(|(_, m)| m.clone()).collect(),
            max_tokens: self.max_output_tokens,
        };
        // A fork launched with siblings: followers wait until the
        // leader's response has started (the cache entry exists then).
        let leader = match std::mem::take(&mut self.fan_out) {
            FanOutRole::Alone => None,
            FanOutRole::Leader(lead) => Some(Arc::new(lead)),
            FanOutRole::Follower(group) => {
                tokio::select! {
                    stop = self.stops.any() => return Err(Halt::Stop(stop)),
                    _ = group.wait() => {}
                }
                None
            }
        };
        let hub = self.hub.clone();
        let releases = leader.clone();
        let on_event = move |e: crate::model::ModelEvent| {
            if let (Some(group), crate::model::ModelEvent::Delta(_)) = (&releases, &e) {
                group.release();
            }
            hub.publish_model_event(e)
        };
        let response = tokio::select! {
            biased;
            _ = self.stops.interrupt.cancelled() => {
                self.hub.discard_partial();
                let stop = self.stops.aborted();
                if stop == RunEnd::Halted {
                    // Nothing of the answer is kept (a partial message
                    // could not be sent back as is); the note says so.
                    let note = json!([{"type": "text", "text": "interrupted while the model was answering; its partial answer was discarded"}]);
                    self.write_entry(Role::System, json_bytes(&note), None, None, &[])
                        .await?;
                }
                return Err(Halt::Stop(stop));
            }
            r = super::runner::complete(self.provider.as_ref(), &request, &on_event) => r,
        };
        if let Some(group) = leader {
            group.release();
        }
        response.map_err(|e| {
            self.hub.discard_partial();
            match e {
                ModelError::ContextOverflow(why) => Halt::Overflow(why),
                e => Halt::Stop(RunEnd::Failed(e.to_string())),
            }
        })
    }

    /// Counts the turn and stores the model's answer; returns its sequence
    /// number.
    async fn record_answer(
        &mut self,
        response: &ModelResponse,
        calls: &[Call],
    ) -> Result<u64, Halt> {
        self.record.turns += 1;
        self.record.tool_uses += calls.len() as u32;
        self.record.usage.add(&response.usage);
        let assistant_seq = self.next_seq;
        self.note_request_size(assistant_seq, &response.usage);
        self.write_entry(
            Role::Assistant,
            json_bytes(&Value::Array(response.content.clone())),
            Some(response.usage),
            Some(response.stop_reason.clone()),
            &[],
        )
        .await?;
        Ok(assistant_seq)
    }

    /// What an answer without tool calls means, by its stop reason: the
    /// end of the run, or another turn.
    async fn after_answer_without_calls(
        &mut self,
        response: &ModelResponse,
        max_tokens_recoveries: &mut u32,
    ) -> Result<AfterAnswer, Halt> {
        Ok(match &response.stop_reason {
            StopReason::EndTurn | StopReason::StopSequence => {
                // A message that arrived during the turn starts the next one.
                if self.deliver_inbox(Vec::new()).await? {
                    AfterAnswer::Continue
                } else {
                    AfterAnswer::End(RunEnd::Completed(final_text(&response.content)))
                }
            }
            // The server paused a long turn: send it back as is and the
            // model continues it.
            StopReason::PauseTurn => AfterAnswer::ContinuePaused,
            StopReason::MaxTokens if *max_tokens_recoveries < MAX_TOKENS_RECOVERIES => {
                *max_tokens_recoveries += 1;
                let note = vec![json!({"type": "text", "text": CONTINUE_AFTER_MAX_TOKENS})];
                self.deliver_inbox(note).await?;
                AfterAnswer::Continue
            }
            StopReason::MaxTokens => AfterAnswer::End(RunEnd::Failed(format!(
                "the model's response was cut off at the output limit ({} tokens) {} times in a row",
                self.max_output_tokens,
                MAX_TOKENS_RECOVERIES + 1
            ))),
            StopReason::Refusal => AfterAnswer::End(RunEnd::Failed(
                "the model declined to continue (stop_reason: refusal)".into(),
            )),
            // The answer filled the window: compact, and the model goes on
            // from the summary.
            StopReason::ContextWindowExceeded => {
                self.compact(CompactTrigger::Overflow, None).await?;
                AfterAnswer::Continue
            }
            StopReason::ToolUse | StopReason::Other(_) => {
                tracing::warn!(
                    stop_reason = %response.stop_reason,
                    "a response without tool calls and with this stop_reason; treating the turn as ended"
                );
                AfterAnswer::End(RunEnd::Completed(final_text(&response.content)))
            }
        })
    }

    /// The text of the newest assistant message.
    fn last_answer(&self) -> String {
        self.messages
            .iter()
            .rev()
            .find(|(_, m)| m.role == Role::Assistant)
            .and_then(|(_, m)| serde_json::from_slice::<Vec<Value>>(&m.content_json).ok())
            .map(|content| final_text(&content))
            .unwrap_or_else(|| self.record.result().to_string())
    }
}

fn halt_text(h: &Halt) -> String {
    match h {
        Halt::Stop(o) => format!("stopped ({})", o.status()),
        Halt::Store(e) => e.to_string(),
        Halt::Overflow(why) => why.clone(),
    }
}

/// The text of an assistant message: its text blocks, joined.
fn final_text(content: &[Value]) -> String {
    content
        .iter()
        .filter(|b| b["type"] == "text")
        .filter_map(|b| b["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}
