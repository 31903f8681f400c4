//! The turn loop (DESIGN §3): build the request from the transcript → stream
//! the model response → persist the assistant message → run its tool calls →
//! persist the results → repeat until the model ends its turn, `max_turns`
//! is reached, or the agent is stopped.
//!
//! The loop is the only writer of its agent's transcript and, while it runs,
//! of its record. Every entry is durable before it is published, before any
//! tool it requests runs, and before the next model request. A stop (pause,
//! shutdown, cancel) in the middle of a round of tool calls records a result
//! for every call of the round, so a stopped transcript is always one a
//! model can be sent; only a crash leaves calls unanswered, and those are
//! answered when the agent resumes (`interrupted`).

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::foreground::Foreground;
use super::host::{AgentHost, OrchestrationCall};
use super::hub::{Hub, StatusSnapshot, ToolEvent};
use super::interrupted;
use super::permission::{self, Answer, Gate};
use super::slot::SlotLease;
use crate::domain::{
    AgentRecord, PromptContext, Role, Status, StopReason, ToolName, TranscriptEntry, Usage,
    json_bytes, now_ms,
};
use crate::model::{MessageBytes, ModelRequest, Provider};
use crate::store::{Append, InboxKey, Store, StoreError};
use crate::tools::spool::Spool;
use crate::tools::{self, ToolContext, ToolEnv, ToolOutput};

/// Consecutive responses cut off at max_tokens that the loop asks the model
/// to continue before it gives up.
const MAX_TOKENS_RECOVERIES: u32 = 3;

/// Sent when a response was cut off at the output limit with nothing to run.
const CONTINUE_AFTER_MAX_TOKENS: &str = "Your previous response was cut off at the output token \
limit. Continue exactly where it stopped, without repeating anything. Split large outputs, such \
as big file writes, into smaller steps.";

/// How a run of the loop ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Completed(String),
    Failed(String),
    Cancelled,
    /// Stopped at a safe point because the daemon is shutting down.
    Interrupted,
    /// Stopped at a safe point on request; continuable.
    Paused,
}

impl Outcome {
    pub fn status(&self) -> Status {
        match self {
            Outcome::Completed(_) => Status::Completed,
            Outcome::Failed(_) => Status::Failed,
            Outcome::Cancelled => Status::Cancelled,
            Outcome::Interrupted => Status::Interrupted,
            Outcome::Paused => Status::Paused,
        }
    }
}

/// What can stop a turn loop from outside.
#[derive(Debug, Clone, Default)]
pub struct StopSignals {
    /// The agent is cancelled: stop at once.
    pub cancel: CancellationToken,
    /// The daemon is shutting down: stop at the next safe point.
    pub shutdown: CancellationToken,
    /// The agent is paused: stop at the next safe point, continuable.
    pub pause: CancellationToken,
}

impl StopSignals {
    /// A safe point: returns why to stop, if anything asks.
    fn requested(&self) -> Option<Outcome> {
        if self.cancel.is_cancelled() {
            Some(Outcome::Cancelled)
        } else if self.shutdown.is_cancelled() {
            Some(Outcome::Interrupted)
        } else if self.pause.is_cancelled() {
            Some(Outcome::Paused)
        } else {
            None
        }
    }

    /// Resolves when any stop is asked for.
    pub async fn any(&self) -> Outcome {
        tokio::select! {
            biased;
            _ = self.cancel.cancelled() => Outcome::Cancelled,
            _ = self.shutdown.cancelled() => Outcome::Interrupted,
            _ = self.pause.cancelled() => Outcome::Paused,
        }
    }
}

/// Why the loop's work stopped short.
enum Halt {
    /// Asked to stop (or the run cannot go on): this is how the run ends.
    Stop(Outcome),
    /// The store failed in a way waiting for space cannot fix.
    Store(StoreError),
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
    pub provider: Provider,
    pub stops: StopSignals,
    pub tool_env: Arc<ToolEnv>,
    pub spool: Spool,
    pub max_output_tokens: u32,
}

pub struct TurnLoop {
    store: Store,
    host: Arc<dyn AgentHost>,
    hub: Arc<Hub>,
    foreground: Arc<Foreground>,
    slot: Arc<SlotLease>,
    record: AgentRecord,
    system_json: Arc<[u8]>,
    tools_json: Arc<[u8]>,
    /// Tools this agent may run (its type's); others get a tool error.
    allowed_tools: Option<Vec<ToolName>>,
    provider: Provider,
    stops: StopSignals,
    tool_env: Arc<ToolEnv>,
    spool: Spool,
    /// The conversation as it is sent, with the seq of each entry.
    messages: Vec<(u64, MessageBytes)>,
    next_seq: u64,
    max_output_tokens: u32,
}

/// What a finished loop hands back to the supervisor, which records it.
pub struct Finished {
    pub record: AgentRecord,
    pub outcome: Outcome,
}

/// One tool call of an assistant message.
struct Call {
    id: String,
    name: String,
    input: Value,
}

fn calls_of(content: &[Value]) -> Vec<Call> {
    content
        .iter()
        .filter(|b| b["type"] == "tool_use")
        .map(|b| Call {
            id: b["id"].as_str().unwrap_or_default().to_string(),
            name: b["name"].as_str().unwrap_or_default().to_string(),
            input: b["input"].clone(),
        })
        .collect()
}

fn tool_result(call: &Call, output: &ToolOutput) -> Value {
    let mut result =
        json!({"type": "tool_result", "tool_use_id": call.id, "content": output.content});
    if output.is_error {
        result["is_error"] = json!(true);
    }
    result
}

impl TurnLoop {
    /// Prepares a loop, loading its transcript from the store. Called on
    /// the loop's own task, never under a lock.
    pub fn new(setup: LoopSetup) -> Result<TurnLoop, StoreError> {
        let id = setup.record.id;
        let entries = setup.store.transcript(id, 0, usize::MAX)?;
        // Corrupt entries are skipped by the store: a hole must stop the
        // agent rather than send the model a different conversation.
        // (The record counts the entries, so a hole at the end shows too.)
        let hole = (0u64..)
            .zip(&entries)
            .find(|(i, e)| e.seq != *i)
            .map(|(i, _)| i)
            .or_else(|| {
                let read = entries.len() as u64;
                (read < setup.record.transcript_len).then_some(read)
            });
        if let Some(seq) = hole {
            return Err(StoreError::TranscriptHole { id, seq });
        }
        let next_seq = entries.last().map_or(0, |e| e.seq + 1);
        let mut messages = Vec::with_capacity(entries.len());
        for e in &entries {
            apply_entry(&mut messages, e);
        }
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
            provider: setup.provider,
            stops: setup.stops,
            tool_env: setup.tool_env,
            spool: setup.spool,
            messages,
            next_seq,
            max_output_tokens: setup.max_output_tokens,
        })
    }

    /// Runs the agent until it ends, stops or pauses. The final state is
    /// returned for the supervisor to record (with any notification).
    pub async fn run(mut self) -> Finished {
        let outcome = match self.drive().await {
            Ok(outcome) | Err(Halt::Stop(outcome)) => outcome,
            Err(Halt::Store(e)) => {
                tracing::error!(agent = %self.record.id, error = %e, "store write failed; failing the agent");
                Outcome::Failed(format!("agentd could not write to its store: {e}"))
            }
        };
        if let Outcome::Failed(error) = &outcome {
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
            Outcome::Completed(text) => {
                self.record.result = text.clone();
                self.record.error.clear();
            }
            Outcome::Failed(error) => self.record.error = error.clone(),
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

    async fn drive(&mut self) -> Result<Outcome, Halt> {
        self.set_status(Status::Running).await?;
        self.answer_interrupted_calls().await?;
        // Turn boundary: messages and notifications that arrived while the
        // agent was idle (or before it started) are delivered first.
        self.deliver_inbox(Vec::new()).await?;
        let mut max_tokens_recoveries = 0;
        // Set after `pause_turn`: the assistant message goes back as is.
        let mut continuing_paused_turn = false;
        loop {
            if let Some(stop) = self.stops.requested() {
                return Ok(stop);
            }
            let awaiting_answer = self.messages.last().is_some_and(|(_, m)| m.role == "user");
            if !awaiting_answer && !std::mem::take(&mut continuing_paused_turn) {
                // Nothing new to answer (a revival with no message, or a
                // resume after the end was written but not its record):
                // the answer is the last one in the transcript.
                return Ok(Outcome::Completed(self.last_answer()));
            }
            if self.record.turns >= self.record.max_turns {
                return Ok(Outcome::Failed(format!(
                    "stopped after reaching max_turns ({}) without a final answer",
                    self.record.max_turns
                )));
            }

            let request = ModelRequest {
                model: self.record.model.clone(),
                system_json: self.system_json.clone(),
                tools_json: self.tools_json.clone(),
                messages: self.messages.iter().map(|(_, m)| m.clone()).collect(),
                max_tokens: self.max_output_tokens,
            };
            let hub = self.hub.clone();
            let on_event = move |e| hub.publish_model_event(e);
            let response = tokio::select! {
                biased;
                _ = self.stops.cancel.cancelled() => {
                    self.hub.discard_partial();
                    return Ok(Outcome::Cancelled);
                }
                r = self.provider.complete(&request, &on_event) => r,
            };
            let response = match response {
                Ok(r) => r,
                Err(e) => {
                    self.hub.discard_partial();
                    return Ok(Outcome::Failed(e.to_string()));
                }
            };

            let calls = calls_of(&response.content);
            self.record.turns += 1;
            self.record.tool_uses += calls.len() as u32;
            self.record.usage.add(&response.usage);
            let assistant_seq = self.next_seq;
            self.write_entry(
                Role::Assistant,
                json_bytes(&Value::Array(response.content.clone())),
                Some(response.usage),
                Some(response.stop_reason.clone()),
                &[],
            )
            .await?;

            if calls.is_empty() {
                match &response.stop_reason {
                    StopReason::EndTurn | StopReason::StopSequence => {
                        // A message that arrived during the turn starts the next one.
                        if self.deliver_inbox(Vec::new()).await? {
                            continue;
                        }
                        return Ok(Outcome::Completed(final_text(&response.content)));
                    }
                    // The server paused a long turn: send it back as is and
                    // the model continues it.
                    StopReason::PauseTurn => {
                        continuing_paused_turn = true;
                        continue;
                    }
                    StopReason::MaxTokens if max_tokens_recoveries < MAX_TOKENS_RECOVERIES => {
                        max_tokens_recoveries += 1;
                        let note = vec![json!({"type": "text", "text": CONTINUE_AFTER_MAX_TOKENS})];
                        self.deliver_inbox(note).await?;
                        continue;
                    }
                    StopReason::MaxTokens => {
                        return Ok(Outcome::Failed(format!(
                            "the model's response was cut off at the output limit ({} tokens) {} times in a row",
                            self.max_output_tokens,
                            MAX_TOKENS_RECOVERIES + 1
                        )));
                    }
                    StopReason::Refusal => {
                        return Ok(Outcome::Failed(
                            "the model declined to continue (stop_reason: refusal)".into(),
                        ));
                    }
                    StopReason::ContextWindowExceeded => {
                        return Ok(Outcome::Failed(
                            "the conversation no longer fits the model's context window".into(),
                        ));
                    }
                    StopReason::ToolUse | StopReason::Other(_) => {
                        tracing::warn!(
                            stop_reason = %response.stop_reason,
                            "a response without tool calls and with this stop_reason; treating the turn as ended"
                        );
                        return Ok(Outcome::Completed(final_text(&response.content)));
                    }
                }
            }
            max_tokens_recoveries = 0;
            self.run_round(assistant_seq, &calls).await?;
        }
    }

    /// Runs the tool calls of one assistant message, then delivers their
    /// results (and whatever arrived meanwhile) as one user message. A stop
    /// asked for in the middle answers the rest as not run, and ends the run.
    async fn run_round(&mut self, seq: u64, calls: &[Call]) -> Result<(), Halt> {
        let mut results = Vec::with_capacity(calls.len());
        for (index, call) in calls.iter().enumerate() {
            // Safe point: every earlier call of the round has its result.
            if let Some(stop) = self.stops.requested() {
                return Err(self.close_round(seq, calls, results, stop).await);
            }
            let summary = tools::summarize(&call.name, &call.input);
            self.hub.publish_tool(ToolEvent {
                tool_use_id: call.id.clone(),
                name: call.name.clone(),
                finished: false,
                summary: summary.clone(),
                is_error: false,
            });
            let tool = ToolName::parse(&call.name);
            let output = match tool {
                None => ToolOutput::error(format!(
                    "No such tool: {}. Available tools: {}.",
                    crate::error::quote(&call.name),
                    ToolName::ALL.map(ToolName::as_str).join(", ")
                )),
                Some(tool) => match self.permit(tool, &call.input).await? {
                    Err(stop) => {
                        let not_run = interrupted::not_run(tool, &stop, true);
                        results.push(tool_result(call, &not_run));
                        return Err(self
                            .close_round(seq, &calls[index + 1..], results, stop)
                            .await);
                    }
                    Ok(Some(refusal)) => refusal,
                    Ok(None) => {
                        let cancel = self.stops.cancel.clone();
                        let ran = tokio::select! {
                            biased;
                            _ = cancel.cancelled() => None,
                            out = self.run_tool(tool, call, self.spool.path(seq, index)) => Some(out),
                        };
                        match ran {
                            Some(out) => out,
                            None => {
                                let cut = interrupted::cancelled_while_running(tool);
                                results.push(tool_result(call, &cut));
                                let rest = &calls[index + 1..];
                                return Err(self
                                    .close_round(seq, rest, results, Outcome::Cancelled)
                                    .await);
                            }
                        }
                    }
                },
            };
            self.hub.publish_tool(ToolEvent {
                tool_use_id: call.id.clone(),
                name: call.name.clone(),
                finished: true,
                summary,
                is_error: output.is_error,
            });
            results.push(tool_result(call, &output));
        }
        // Turn boundary: results, then whatever arrived meanwhile.
        self.deliver_inbox(results).await?;
        self.spool.clear(seq);
        Ok(())
    }

    /// Records the results so far and `rest` as not run, then ends the run
    /// with `stop` (or with a store failure).
    async fn close_round(
        &mut self,
        seq: u64,
        rest: &[Call],
        mut results: Vec<Value>,
        stop: Outcome,
    ) -> Halt {
        for call in rest {
            let output = match ToolName::parse(&call.name) {
                Some(tool) => interrupted::not_run(tool, &stop, false),
                None => {
                    ToolOutput::error(format!("No such tool: {}", crate::error::quote(&call.name)))
                }
            };
            results.push(tool_result(call, &output));
        }
        let written = self
            .write_entry(
                Role::User,
                json_bytes(&Value::Array(results)),
                None,
                None,
                &[],
            )
            .await;
        match written {
            Ok(()) => {
                self.spool.clear(seq);
                Halt::Stop(stop)
            }
            // Not recorded (the disk is full and a stop came first): the
            // calls are answered as interrupted on the next run, with the
            // output kept in the spool.
            Err(halt) => halt,
        }
    }

    /// After a crash, the newest assistant message may have tool calls
    /// whose results were never recorded. Read-only calls simply run again;
    /// any other call may have changed the world, so it is answered as
    /// interrupted (with the output it had captured) and the model checks
    /// before repeating it (DESIGN §5). Re-sending the request instead
    /// would make the model repeat the side effect.
    async fn answer_interrupted_calls(&mut self) -> Result<(), Halt> {
        let Some((seq, last)) = self.messages.last() else {
            return Ok(());
        };
        if last.role != "assistant" {
            return Ok(());
        }
        let seq = *seq;
        let content: Vec<Value> = serde_json::from_slice(&last.content_json).unwrap_or_default();
        let calls = calls_of(&content);
        if calls.is_empty() {
            return Ok(());
        }
        tracing::info!(agent = %self.record.id, calls = calls.len(), "answering tool calls interrupted by a restart");
        let mut results = Vec::with_capacity(calls.len());
        for (index, call) in calls.iter().enumerate() {
            let output = match ToolName::parse(&call.name) {
                Some(tool) if tool.is_read_only() && self.may_run(tool) => {
                    self.run_tool(tool, call, self.spool.path(seq, index)).await
                }
                Some(tool) => {
                    let started = if tool == ToolName::Agent {
                        self.child_started_by(&call.id)?
                    } else {
                        None
                    };
                    interrupted::by_restart(tool, self.spool.captured(seq, index), started)
                }
                None => {
                    ToolOutput::error(format!("No such tool: {}", crate::error::quote(&call.name)))
                }
            };
            results.push(tool_result(call, &output));
        }
        self.deliver_inbox(results).await?;
        self.spool.clear(seq);
        Ok(())
    }

    /// The child an interrupted `Agent` call had started, if it got that far.
    fn child_started_by(&self, tool_use_id: &str) -> Result<Option<AgentRecord>, StoreError> {
        for id in self.store.children_of(self.record.id)? {
            if let Some(child) = self.store.get_agent(id)?
                && !tool_use_id.is_empty()
                && child.parent_tool_use_id == tool_use_id
            {
                return Ok(Some(child));
            }
        }
        Ok(None)
    }

    /// Applies the permission mode to a tool call: Ok(None) to run it,
    /// Ok(Some(error)) when refused or denied, Err(outcome) when the agent
    /// was stopped while it waited for an answer.
    async fn permit(
        &mut self,
        tool: ToolName,
        input: &Value,
    ) -> Result<Result<Option<ToolOutput>, Outcome>, Halt> {
        match permission::gate(&self.record, tool) {
            Gate::Allow => return Ok(Ok(None)),
            Gate::Refuse(why) => return Ok(Ok(Some(ToolOutput::error(why)))),
            Gate::Ask => {}
        }
        let (ask, rx) = self.host.ask(&self.record, tool, input);
        if let Err(halt) = self.set_status(Status::Waiting).await {
            self.host.withdraw_ask(&ask.request_id);
            return Err(halt);
        }
        let answer = tokio::select! {
            stop = self.stops.any() => Err(stop),
            a = rx => Ok(a),
        };
        let answer = match answer {
            Err(stop) => {
                self.host.withdraw_ask(&ask.request_id);
                return Ok(Err(stop));
            }
            Ok(a) => a,
        };
        self.set_status(Status::Running).await?;
        Ok(Ok(match answer {
            Ok(Answer::AllowOnce) => None,
            Ok(Answer::AllowAlways) => {
                if !self.record.always_allowed.contains(&tool) {
                    self.record.always_allowed.push(tool);
                }
                None
            }
            Ok(Answer::Deny(reason)) => Some(ToolOutput::error(if reason.trim().is_empty() {
                format!("The user denied this {tool} call.")
            } else {
                format!("The user denied this {tool} call: {reason}")
            })),
            Err(_) => Some(ToolOutput::error("the permission request was withdrawn")),
        }))
    }

    /// The text of the newest assistant message.
    fn last_answer(&self) -> String {
        self.messages
            .iter()
            .rev()
            .find(|(_, m)| m.role == "assistant")
            .and_then(|(_, m)| serde_json::from_slice::<Vec<Value>>(&m.content_json).ok())
            .map(|content| final_text(&content))
            .unwrap_or_else(|| self.record.result.clone())
    }

    fn may_run(&self, tool: ToolName) -> bool {
        self.allowed_tools
            .as_ref()
            .is_none_or(|allowed| allowed.contains(&tool))
    }

    async fn run_tool(&self, tool: ToolName, call: &Call, spool: PathBuf) -> ToolOutput {
        if !self.may_run(tool) {
            let allowed = self.allowed_tools.as_deref().unwrap_or_default();
            return ToolOutput::error(if allowed.is_empty() {
                format!("{tool} is not available to this agent; it may use no tools")
            } else {
                format!(
                    "{tool} is not available to this agent; it may use: {}",
                    allowed
                        .iter()
                        .map(|t| t.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            });
        }
        if tool.is_orchestration() {
            return self
                .host
                .run_orchestration(OrchestrationCall {
                    caller: &self.record,
                    tool,
                    tool_use_id: &call.id,
                    input: &call.input,
                    slot: &self.slot,
                })
                .await;
        }
        let ctx = ToolContext {
            cwd: self.record.cwd.clone(),
            cancel: self.stops.cancel.child_token(),
            spool: Some(spool),
            env: self.tool_env.clone(),
        };
        tools::run_tool(tool, &call.input, &ctx).await
    }

    /// Appends `blocks` plus every item waiting in the inbox as one user
    /// message, taking the items out of the inbox in the same transaction.
    /// Returns whether anything was appended.
    async fn deliver_inbox(&mut self, mut blocks: Vec<Value>) -> Result<bool, Halt> {
        let waiting = self.store.inbox(self.record.id)?;
        let keys: Vec<InboxKey> = waiting.iter().map(|(k, _)| *k).collect();
        for (_, item) in &waiting {
            blocks.push(json!({"type": "text", "text": item.text}));
        }
        if blocks.is_empty() {
            return Ok(false);
        }
        self.write_entry(
            Role::User,
            json_bytes(&Value::Array(blocks)),
            None,
            None,
            &keys,
        )
        .await?;
        Ok(true)
    }

    /// Appends an entry with the record (and removes `consumed` inbox
    /// items) in one durable transaction, then publishes it. Without disk
    /// space it waits for space, then writes.
    async fn write_entry(
        &mut self,
        role: Role,
        content_json: Vec<u8>,
        usage: Option<Usage>,
        stop_reason: Option<StopReason>,
        consumed: &[InboxKey],
    ) -> Result<(), Halt> {
        let entry = TranscriptEntry {
            seq: self.next_seq,
            role,
            content_json,
            created_at_ms: now_ms(),
            usage,
            stop_reason,
        };
        loop {
            self.record.updated_at_ms = entry.created_at_ms;
            self.record.background = self.foreground.is_background();
            // (The store writes the record counting this entry; the copy
            // here counts it only once it is written.)
            let append = Append {
                consumed,
                ..Append::with_record(std::slice::from_ref(&entry), &self.record)
            };
            match self.store.append_durable(self.record.id, append).await {
                Ok(()) => break,
                Err(e) if e.is_disk_full() => self.wait_for_space(&e).await?,
                Err(e) => return Err(Halt::Store(e)),
            }
        }
        self.next_seq += 1;
        self.record.transcript_len = self.next_seq;
        apply_entry(&mut self.messages, &entry);
        self.hub.publish_entry(Arc::new(entry));
        Ok(())
    }

    async fn set_status(&mut self, status: Status) -> Result<(), Halt> {
        loop {
            self.record.background = self.foreground.is_background();
            self.record.status = status;
            self.record.updated_at_ms = now_ms();
            match self.store.put_agent_durable(&self.record).await {
                Ok(()) => break,
                Err(e) if e.is_disk_full() => self.wait_for_space(&e).await?,
                Err(e) => return Err(Halt::Store(e)),
            }
        }
        self.hub.publish_status(StatusSnapshot::of(&self.record));
        Ok(())
    }

    /// The disk is full: the agent waits (and says so) until the store
    /// heals, or until it is stopped.
    async fn wait_for_space(&mut self, error: &StoreError) -> Result<(), Halt> {
        let resume_as = self.record.status;
        self.record.status = Status::Waiting;
        // Kept in memory by the store until it can be written: readers see
        // the agent waiting.
        let _ = self.store.put_agent_or_defer(&self.record);
        self.hub.publish_status(StatusSnapshot {
            waiting_for: Some(format!("disk space: {error}")),
            ..StatusSnapshot::of(&self.record)
        });
        tracing::warn!(agent = %self.record.id, "waiting for disk space");
        let mut writable = self.store.writable();
        tokio::select! {
            stop = self.stops.any() => {
                self.record.status = resume_as;
                return Err(Halt::Stop(stop));
            }
            _ = writable.wait_for(|w| *w) => {}
        }
        self.record.status = resume_as;
        self.hub.publish_status(StatusSnapshot::of(&self.record));
        tracing::info!(agent = %self.record.id, "disk space is back; continuing");
        Ok(())
    }
}

fn halt_text(h: &Halt) -> String {
    match h {
        Halt::Stop(o) => format!("stopped ({})", o.status()),
        Halt::Store(e) => e.to_string(),
    }
}

/// Applies one transcript entry to the request messages: user and assistant
/// entries are messages; a `drop_entry` note (written by agentd 0.1 for
/// calls interrupted by a crash) removes the message it names.
fn apply_entry(messages: &mut Vec<(u64, MessageBytes)>, entry: &TranscriptEntry) {
    let role = match entry.role {
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::System => {
            let note: Value = serde_json::from_slice(&entry.content_json).unwrap_or(Value::Null);
            for block in note.as_array().into_iter().flatten() {
                if block["type"] == "agentd_note"
                    && block["kind"] == "drop_entry"
                    && let Some(seq) = block["seq"].as_u64()
                {
                    messages.retain(|(s, _)| *s != seq);
                }
            }
            return;
        }
    };
    messages.push((
        entry.seq,
        MessageBytes {
            role,
            content_json: Arc::from(entry.content_json.as_slice()),
        },
    ));
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
