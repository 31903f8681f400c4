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
    AgentRecord, PromptContext, Role, Status, Store, StoreError, TranscriptEntry, now_ms,
};
use crate::supervisor::hub::{Hub, StatusSnapshot, ToolEvent};
use crate::tools::{self, ToolContext};

/// Consecutive responses cut off at max_tokens that the loop asks the model
/// to continue before it gives up.
const MAX_TOKENS_RECOVERIES: u32 = 3;

/// Sent when a response was cut off at the output limit with nothing to run.
const CONTINUE_AFTER_MAX_TOKENS: &str = "Your previous response was cut off at the output token \
limit. Continue exactly where it stopped, without repeating anything. Split large outputs, such \
as big file writes, into smaller steps.";

/// How a run of the loop ended.
#[derive(Debug, Clone, PartialEq)]
enum Outcome {
    Completed(String),
    Failed(String),
    Cancelled,
    /// Stopped at a safe point because the daemon is shutting down.
    Interrupted,
}

/// What can stop a turn loop from outside.
#[derive(Debug, Clone)]
pub struct StopSignals {
    /// The agent is cancelled: stop at once.
    pub cancel: CancellationToken,
    /// The daemon is shutting down: stop at the next safe point.
    pub shutdown: CancellationToken,
}

pub struct TurnLoop {
    store: Store,
    hub: Arc<Hub>,
    record: AgentRecord,
    system_json: Arc<[u8]>,
    tools_json: Arc<[u8]>,
    provider: Provider,
    cancel: CancellationToken,
    shutdown: CancellationToken,
    /// The conversation as it is sent: one element per user/assistant entry.
    messages: Vec<MessageBytes>,
    next_seq: u64,
    max_output_tokens: u32,
}

impl TurnLoop {
    /// Prepares a loop for `record`, loading its transcript from the store.
    pub fn new(
        store: Store,
        hub: Arc<Hub>,
        record: AgentRecord,
        prompt: PromptContext,
        provider: Provider,
        max_output_tokens: u32,
        stops: StopSignals,
    ) -> Result<TurnLoop, StoreError> {
        let id = record.uuid();
        let entries = store.transcript(id, 0, usize::MAX)?;
        let next_seq = entries.last().map_or(0, |e| e.seq + 1);
        let messages = entries.iter().filter_map(message_of).collect();
        Ok(TurnLoop {
            store,
            hub,
            record,
            system_json: prompt.system_json.into(),
            tools_json: prompt.tools_json.into(),
            provider,
            cancel: stops.cancel,
            shutdown: stops.shutdown,
            messages,
            next_seq,
            max_output_tokens,
        })
    }

    /// Runs the agent until it ends, then records how it ended.
    pub async fn run(mut self) {
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
            if let Err(e) = self.append(Role::System, bytes, None, String::new()).await {
                tracing::error!(agent = %self.record.uuid(), error = %e, "could not record the failure note");
            }
        }
        let (status, result, error) = match outcome {
            Outcome::Completed(text) => (Status::Completed, text, String::new()),
            Outcome::Failed(error) => (Status::Failed, String::new(), error),
            Outcome::Cancelled => (Status::Cancelled, String::new(), String::new()),
            Outcome::Interrupted => (Status::Interrupted, String::new(), String::new()),
        };
        self.record.result = result;
        self.record.error = error;
        if let Err(e) = self.set_status(status).await {
            tracing::error!(agent = %self.record.uuid(), error = %e, "could not record the agent's end");
        }
        tracing::info!(agent = %self.record.uuid(), status = status.as_str(), turns = self.record.turns, "agent stopped");
    }

    async fn drive(&mut self) -> Result<Outcome, StoreError> {
        self.set_status(Status::Running).await?;
        let mut max_tokens_recoveries = 0;
        loop {
            if self.cancel.is_cancelled() {
                return Ok(Outcome::Cancelled);
            }
            if self.shutdown.is_cancelled() {
                return Ok(Outcome::Interrupted);
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
                messages: self.messages.clone(),
                max_tokens: self.max_output_tokens,
            };
            let hub = self.hub.clone();
            let on_event = move |e| hub.publish_model_event(e);
            let response = tokio::select! {
                biased;
                _ = self.cancel.cancelled() => {
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
            )
            .await?;

            if tool_uses.is_empty() {
                match response.stop_reason.as_str() {
                    "end_turn" | "stop_sequence" => {
                        return Ok(Outcome::Completed(final_text(&response.content)));
                    }
                    // The server paused a long turn: send it back as is and
                    // the model continues it.
                    "pause_turn" => continue,
                    "max_tokens" if max_tokens_recoveries < MAX_TOKENS_RECOVERIES => {
                        max_tokens_recoveries += 1;
                        let note = json!([{"type": "text", "text": CONTINUE_AFTER_MAX_TOKENS}]);
                        let bytes = serde_json::to_vec(&note).unwrap_or_default();
                        self.append(Role::User, bytes, None, String::new()).await?;
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
                if self.cancel.is_cancelled() {
                    return Ok(Outcome::Cancelled);
                }
                if self.shutdown.is_cancelled() {
                    return Ok(Outcome::Interrupted);
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
                let ctx = ToolContext {
                    cwd: PathBuf::from(&self.record.cwd),
                    cancel: self.cancel.child_token(),
                };
                let output = tokio::select! {
                    biased;
                    _ = self.cancel.cancelled() => return Ok(Outcome::Cancelled),
                    out = tools::run_tool(&name, input, &ctx) => out,
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
            let content_json = serde_json::to_vec(&results).unwrap_or_default();
            self.append(Role::User, content_json, None, String::new())
                .await?;
        }
    }

    /// Appends an entry (and the record, in the same fsync), then publishes it.
    async fn append(
        &mut self,
        role: Role,
        content_json: Vec<u8>,
        usage: Option<crate::store::Usage>,
        stop_reason: String,
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
        self.store.put_agent(&self.record)?;
        self.store
            .append_durable(self.record.uuid(), &entry)
            .await?;
        self.next_seq += 1;
        if let Some(message) = message_of(&entry) {
            self.messages.push(message);
        }
        self.hub.publish_entry(Arc::new(entry));
        Ok(())
    }

    async fn set_status(&mut self, status: Status) -> Result<(), StoreError> {
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
