//! The turn loop (DESIGN §3): build the request from the transcript → stream
//! the model response → persist the assistant message → run its tool calls →
//! persist the results → repeat until the model ends its turn, `max_turns`
//! is reached, or the agent is cancelled.
//!
//! The loop is the only writer of its agent's transcript and, while it runs,
//! of its record. Every entry is durable before it is published, before any
//! tool it requests runs, and before the next model request.

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::model::{MessageBytes, ModelRequest, Provider};
use crate::store::{
    AgentRecord, InboxKey, PromptContext, Role, Status, Store, StoreError, TranscriptEntry, now_ms,
};
use crate::supervisor::Supervisor;
use crate::supervisor::hub::{Hub, StatusSnapshot, ToolEvent};
use crate::supervisor::permissions::{self, Answer, Gate};
use crate::tools::{self, ToolContext, ToolOutput};

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
#[derive(Debug, Clone)]
pub struct StopSignals {
    /// The agent is cancelled: stop at once.
    pub cancel: CancellationToken,
    /// The daemon is shutting down: stop at the next safe point.
    pub shutdown: CancellationToken,
    /// The agent is paused: stop at the next safe point, continuable.
    pub pause: CancellationToken,
    /// Not a stop: the agent was released to the background; its record
    /// says so from its next write on.
    pub backgrounded: Arc<std::sync::atomic::AtomicBool>,
}

/// The tools that act on other agents, run by the loop with the supervisor.
const ORCHESTRATION_TOOLS: [&str; 4] = ["Agent", "SendMessage", "ListAgents", "TaskStop"];

pub struct TurnLoop {
    store: Store,
    hub: Arc<Hub>,
    sup: Arc<Supervisor>,
    record: AgentRecord,
    system_json: Arc<[u8]>,
    tools_json: Arc<[u8]>,
    /// Tools this agent may run (its type's); others get a tool error.
    allowed_tools: Option<Vec<String>>,
    provider: Provider,
    stops: StopSignals,
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

impl TurnLoop {
    /// Prepares a loop for `record`, loading its transcript from the store.
    pub fn new(
        sup: Arc<Supervisor>,
        hub: Arc<Hub>,
        record: AgentRecord,
        prompt: PromptContext,
        provider: Provider,
        stops: StopSignals,
    ) -> Result<TurnLoop, StoreError> {
        let store = sup.store().clone();
        let id = record.uuid();
        let entries = store.transcript(id, 0, usize::MAX)?;
        let next_seq = entries.last().map_or(0, |e| e.seq + 1);
        let mut messages = Vec::with_capacity(entries.len());
        for e in &entries {
            apply_entry(&mut messages, e);
        }
        let allowed_tools =
            (!prompt.allowed_tools.is_empty()).then(|| prompt.allowed_tools.clone());
        let max_output_tokens = sup.max_output_tokens();
        Ok(TurnLoop {
            store,
            hub,
            sup,
            record,
            system_json: prompt.system_json.into(),
            tools_json: prompt.tools_json.into(),
            allowed_tools,
            provider,
            stops,
            messages,
            next_seq,
            max_output_tokens,
        })
    }

    /// Runs the agent until it ends, stops or pauses. The final state is
    /// returned for the supervisor to record (with any notification).
    pub async fn run(mut self) -> Finished {
        let outcome = match self.drive().await {
            Ok(outcome) => outcome,
            Err(e) => {
                tracing::error!(agent = %self.record.uuid(), error = %e, "store write failed; failing the agent");
                Outcome::Failed(format!("agentd could not write to its store: {e}"))
            }
        };
        if let Outcome::Failed(error) = &outcome {
            // The reason stays in the transcript too, next to what led to it.
            let note = json!([{"type": "text", "text": format!("agent failed: {error}")}]);
            let bytes = serde_json::to_vec(&note).unwrap_or_default();
            if let Err(e) = self
                .append(Role::System, bytes, None, String::new(), &[])
                .await
            {
                tracing::error!(agent = %self.record.uuid(), error = %e, "could not record the failure note");
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
        self.record.set_status(outcome.status());
        self.record.updated_at_ms = now_ms();
        tracing::info!(agent = %self.record.uuid(), status = outcome.status().as_str(), turns = self.record.turns, "agent stopped");
        Finished {
            record: self.record,
            outcome,
        }
    }

    /// A safe point: nothing is half done. Returns why to stop, if anything asks.
    fn stop_requested(&self) -> Option<Outcome> {
        if self.stops.cancel.is_cancelled() {
            Some(Outcome::Cancelled)
        } else if self.stops.shutdown.is_cancelled() {
            Some(Outcome::Interrupted)
        } else if self.stops.pause.is_cancelled() {
            Some(Outcome::Paused)
        } else {
            None
        }
    }

    async fn drive(&mut self) -> Result<Outcome, StoreError> {
        self.set_status(Status::Running).await?;
        self.drop_unanswered_tool_calls().await?;
        // Turn boundary: messages and notifications that arrived while the
        // agent was idle (or before it started) are delivered first.
        self.deliver_inbox(Vec::new()).await?;
        let mut max_tokens_recoveries = 0;
        // Set after `pause_turn`: the assistant message goes back as is.
        let mut continuing_paused_turn = false;
        loop {
            if let Some(stop) = self.stop_requested() {
                return Ok(stop);
            }
            let awaiting_answer = self.messages.last().is_some_and(|(_, m)| m.role == "user");
            if !awaiting_answer && !std::mem::take(&mut continuing_paused_turn) {
                // Nothing new to answer (a revival with no message).
                return Ok(Outcome::Completed(self.record.result.clone()));
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

            let tool_uses: Vec<Value> = response
                .content
                .iter()
                .filter(|b| b["type"] == "tool_use")
                .cloned()
                .collect();
            self.record.turns += 1;
            self.record.tool_uses += tool_uses.len() as u32;
            self.record
                .usage
                .get_or_insert_with(Default::default)
                .add(&response.usage);
            let content_json = serde_json::to_vec(&response.content).unwrap_or_default();
            self.append(
                Role::Assistant,
                content_json,
                Some(response.usage),
                response.stop_reason.clone(),
                &[],
            )
            .await?;

            if tool_uses.is_empty() {
                match response.stop_reason.as_str() {
                    "end_turn" | "stop_sequence" => {
                        // A message that arrived during the turn starts the next one.
                        if self.deliver_inbox(Vec::new()).await? {
                            continue;
                        }
                        return Ok(Outcome::Completed(final_text(&response.content)));
                    }
                    // The server paused a long turn: send it back as is and
                    // the model continues it.
                    "pause_turn" => {
                        continuing_paused_turn = true;
                        continue;
                    }
                    "max_tokens" if max_tokens_recoveries < MAX_TOKENS_RECOVERIES => {
                        max_tokens_recoveries += 1;
                        let note = vec![json!({"type": "text", "text": CONTINUE_AFTER_MAX_TOKENS})];
                        self.deliver_inbox(note).await?;
                        continue;
                    }
                    "max_tokens" => {
                        return Ok(Outcome::Failed(format!(
                            "the model's response was cut off at the output limit ({} tokens) {} times in a row",
                            self.max_output_tokens,
                            MAX_TOKENS_RECOVERIES + 1
                        )));
                    }
                    "refusal" => {
                        return Ok(Outcome::Failed(
                            "the model declined to continue (stop_reason: refusal)".into(),
                        ));
                    }
                    "model_context_window_exceeded" => {
                        return Ok(Outcome::Failed(
                            "the conversation no longer fits the model's context window".into(),
                        ));
                    }
                    other => {
                        tracing::warn!(
                            stop_reason = other,
                            "unknown stop_reason; treating the turn as ended"
                        );
                        return Ok(Outcome::Completed(final_text(&response.content)));
                    }
                }
            }
            max_tokens_recoveries = 0;

            let mut results = Vec::with_capacity(tool_uses.len());
            for tool_use in &tool_uses {
                // Safe point: nothing of this round has run unrecorded.
                if let Some(stop) = self.stop_requested() {
                    return Ok(stop);
                }
                let id = tool_use["id"].as_str().unwrap_or_default().to_string();
                let name = tool_use["name"].as_str().unwrap_or_default().to_string();
                let input = &tool_use["input"];
                let summary = tools::summarize(&name, input);
                self.hub.publish_tool(ToolEvent {
                    tool_use_id: id.clone(),
                    name: name.clone(),
                    finished: false,
                    summary: summary.clone(),
                    is_error: false,
                });
                let output = match self.permit(&name, input).await? {
                    Err(stop) => return Ok(stop),
                    Ok(Some(refusal)) => refusal,
                    Ok(None) => tokio::select! {
                        biased;
                        _ = self.stops.cancel.cancelled() => return Ok(Outcome::Cancelled),
                        out = self.run_tool(&name, input) => out,
                    },
                };
                self.hub.publish_tool(ToolEvent {
                    tool_use_id: id.clone(),
                    name,
                    finished: true,
                    summary,
                    is_error: output.is_error,
                });
                let mut result =
                    json!({"type": "tool_result", "tool_use_id": id, "content": output.content});
                if output.is_error {
                    result["is_error"] = json!(true);
                }
                results.push(result);
            }
            // Turn boundary: results, then whatever arrived meanwhile, as
            // one user message.
            self.deliver_inbox(results).await?;
        }
    }

    /// Applies the permission mode to a tool call: Ok(None) to run it,
    /// Ok(Some(error)) when refused or denied, Err(outcome) when the agent
    /// was stopped while it waited for an answer.
    async fn permit(
        &mut self,
        name: &str,
        input: &Value,
    ) -> Result<Result<Option<ToolOutput>, Outcome>, StoreError> {
        match permissions::gate(&self.record, name) {
            Gate::Allow => return Ok(Ok(None)),
            Gate::Refuse(why) => return Ok(Ok(Some(ToolOutput::error(why)))),
            Gate::Ask => {}
        }
        let (ask, rx) = self.sup.open_ask(&self.record, name, input);
        self.set_status(Status::Waiting).await?;
        let answer = tokio::select! {
            biased;
            _ = self.stops.cancel.cancelled() => Err(Outcome::Cancelled),
            _ = self.stops.shutdown.cancelled() => Err(Outcome::Interrupted),
            _ = self.stops.pause.cancelled() => Err(Outcome::Paused),
            a = rx => Ok(a),
        };
        let answer = match answer {
            Err(stop) => {
                self.sup.close_ask(&ask.request_id);
                return Ok(Err(stop));
            }
            Ok(a) => a,
        };
        self.set_status(Status::Running).await?;
        Ok(Ok(match answer {
            Ok(Answer::AllowOnce) => None,
            Ok(Answer::AllowAlways) => {
                self.record.always_allowed.push(name.to_string());
                None
            }
            Ok(Answer::Deny(reason)) => Some(ToolOutput::error(if reason.trim().is_empty() {
                format!("The user denied this {name} call.")
            } else {
                format!("The user denied this {name} call: {reason}")
            })),
            Err(_) => Some(ToolOutput::error("the permission request was withdrawn")),
        }))
    }

    async fn run_tool(&self, name: &str, input: &Value) -> ToolOutput {
        if let Some(allowed) = &self.allowed_tools
            && !allowed.iter().any(|t| t == name)
        {
            return ToolOutput::error(format!(
                "{name} is not available to this agent; it may use: {}",
                allowed.join(", ")
            ));
        }
        if ORCHESTRATION_TOOLS.contains(&name) {
            return self
                .sup
                .clone()
                .run_orchestration_tool(&self.record, name, input)
                .await;
        }
        let ctx = ToolContext {
            cwd: PathBuf::from(&self.record.cwd),
            cancel: self.stops.cancel.child_token(),
        };
        tools::run_tool(name, input, &ctx).await
    }

    /// After a crash, an assistant message whose tool calls never got
    /// results cannot be answered truthfully: it is dropped from requests
    /// (recorded as a note, the transcript is never rewritten) so the model
    /// decides again from the request that produced it.
    async fn drop_unanswered_tool_calls(&mut self) -> Result<(), StoreError> {
        let Some((seq, last)) = self.messages.last() else {
            return Ok(());
        };
        if last.role != "assistant" {
            return Ok(());
        }
        let blocks: Value = serde_json::from_slice(&last.content_json).unwrap_or(Value::Null);
        let calls = blocks
            .as_array()
            .map_or(0, |b| b.iter().filter(|b| b["type"] == "tool_use").count());
        if calls == 0 {
            return Ok(());
        }
        let note = json!([{
            "type": "agentd_note",
            "kind": "drop_entry",
            "seq": seq,
            "text": format!("agentd stopped before the results of {calls} tool call(s) in entry {seq} were recorded; that message is left out of requests so the model decides again"),
        }]);
        let bytes = serde_json::to_vec(&note).unwrap_or_default();
        self.append(Role::System, bytes, None, String::new(), &[])
            .await
    }

    /// Appends `blocks` plus every item waiting in the inbox as one user
    /// message, taking the items out of the inbox in the same transaction.
    /// Returns whether anything was appended.
    async fn deliver_inbox(&mut self, mut blocks: Vec<Value>) -> Result<bool, StoreError> {
        let waiting = self.store.inbox(self.record.uuid())?;
        let keys: Vec<InboxKey> = waiting.iter().map(|(k, _)| *k).collect();
        for (_, item) in &waiting {
            blocks.push(json!({"type": "text", "text": item.text}));
        }
        if blocks.is_empty() {
            return Ok(false);
        }
        let bytes = serde_json::to_vec(&blocks).unwrap_or_default();
        self.append(Role::User, bytes, None, String::new(), &keys)
            .await?;
        Ok(true)
    }

    /// Appends an entry (and the record, in the same fsync; and removes
    /// `consumed` inbox items in the same transaction), then publishes it.
    async fn append(
        &mut self,
        role: Role,
        content_json: Vec<u8>,
        usage: Option<crate::store::Usage>,
        stop_reason: String,
        consumed: &[InboxKey],
    ) -> Result<(), StoreError> {
        let entry = TranscriptEntry {
            seq: self.next_seq,
            role: role as i32,
            content_json,
            created_at_ms: now_ms(),
            usage,
            stop_reason,
        };
        self.record.updated_at_ms = entry.created_at_ms;
        self.note_background();
        self.store.put_agent(&self.record)?;
        self.store
            .append_consuming(self.record.uuid(), &entry, consumed)
            .await?;
        self.next_seq += 1;
        apply_entry(&mut self.messages, &entry);
        self.hub.publish_entry(Arc::new(entry));
        Ok(())
    }

    fn note_background(&mut self) {
        if self
            .stops
            .backgrounded
            .load(std::sync::atomic::Ordering::Relaxed)
        {
            self.record.background = true;
        }
    }

    async fn set_status(&mut self, status: Status) -> Result<(), StoreError> {
        self.note_background();
        self.record.set_status(status);
        self.record.updated_at_ms = now_ms();
        self.store.put_agent_durable(&self.record).await?;
        self.hub.publish_status(StatusSnapshot {
            status,
            result: self.record.result.clone(),
            error: self.record.error.clone(),
            turns: self.record.turns,
        });
        Ok(())
    }
}

/// Applies one transcript entry to the request messages: user and assistant
/// entries are messages; a `drop_entry` note removes the message it names.
fn apply_entry(messages: &mut Vec<(u64, MessageBytes)>, entry: &TranscriptEntry) {
    match entry.role() {
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
        }
        _ => {
            if let Some(m) = message_of(entry) {
                messages.push((entry.seq, m));
            }
        }
    }
}

/// The message a transcript entry contributes to requests; daemon notes
/// contribute none.
fn message_of(entry: &TranscriptEntry) -> Option<MessageBytes> {
    let role = match entry.role() {
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::System | Role::Unspecified => return None,
    };
    Some(MessageBytes {
        role,
        content_json: Arc::from(entry.content_json.as_slice()),
    })
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
