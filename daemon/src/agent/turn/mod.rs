//! The model driver, agentd's own turn loop (DESIGN §3): build the request
//! from the transcript → stream the model response → persist the assistant
//! message → run its tool calls → persist the results → repeat until the
//! model ends its turn, `max_turns` is reached, or the agent is stopped. A
//! round of tool calls is in `round`, compaction (which only this driver
//! can be asked for) in `compaction`, the writers that keep the
//! conversation in step with the transcript in `recording`.
//!
//! Every entry is durable before it is published (the run core's writers),
//! before any tool it requests runs, and before the next model request. A
//! stop (pause, shutdown, cancel) in the middle of a round of tool calls
//! records a result for every call of the round, so a stopped transcript is
//! always one a model can be sent; only a crash leaves calls unanswered,
//! and those are answered when the agent resumes (`interrupted`).

pub mod compaction;
mod context_size;
pub mod conversation;
mod interrupted;
mod mcp_call;
mod plan;
mod recording;
mod round;

use std::sync::Arc;

use serde_json::{Value, json};

use super::events::StatusSnapshot;
use super::fanout::FanOutRole;
use super::run::{Finished, Halt, RunCore, RunEnd};
use crate::domain::{
    CompactTrigger, PromptContext, Role, Status, StopReason, ToolAllowlist, json_bytes,
};
use crate::mcp::servers::McpServers;
use crate::model::window::ContextLimits;
use crate::model::{MessageBytes, ModelError, ModelRequest, ModelResponse, Provider};
use compaction::CompactQueue;
pub use conversation::{conversation_of, load_conversation};
use round::{Call, calls_of};

/// Consecutive responses cut off at max_tokens that the loop asks the model
/// to continue before it gives up.
const MAX_TOKENS_RECOVERIES: u32 = 3;

/// Sent when a response was cut off at the output limit with nothing to run.
pub(in crate::agent) const CONTINUE_AFTER_MAX_TOKENS: &str = "Your previous response was cut off at the output token \
limit. Continue exactly where it stopped, without repeating anything. Split large outputs, such \
as big file writes, into smaller steps.";

/// What an answer without tool calls leads to.
enum AfterAnswer {
    End(RunEnd),
    /// Another turn (a message came, or the answer was cut off).
    Continue,
    /// The server paused the turn: its message goes back as is.
    ContinuePaused,
}

/// What only a run of agentd's own model loop is given.
pub struct ModelSetup {
    /// The model agentd calls.
    pub provider: Provider,
    /// The system prompt and tools its requests send, and the tools it may
    /// run (its type's).
    pub prompt: PromptContext,
    pub max_output_tokens: u32,
    /// A fork's place among siblings launched together.
    pub fan_out: FanOutRole,
    /// When its conversation is compacted (DESIGN §17).
    pub limits: ContextLimits,
    /// Compactions asked for by hand while it runs.
    pub compaction: Arc<CompactQueue>,
    /// Its MCP servers' sessions, ended with the run.
    pub mcp: Arc<McpServers>,
}

/// The model driver: a run core and the conversation it sends.
pub struct ModelDriver {
    pub(super) core: RunCore,
    provider: Provider,
    system_json: Arc<[u8]>,
    tools_json: Arc<[u8]>,
    /// Tools this agent may run (its type's); others get a tool error.
    allowed_tools: Option<ToolAllowlist>,
    /// Its MCP servers (DESIGN §18), started as calls need them.
    mcp: Arc<McpServers>,
    /// The conversation as it is sent, with the seq of each entry.
    messages: Vec<(u64, MessageBytes)>,
    max_output_tokens: u32,
    fan_out: FanOutRole,
    limits: ContextLimits,
    compaction: Arc<CompactQueue>,
    /// The newest assistant entry's seq, and the tokens its request and
    /// answer came to (as reported): the base of the next estimate.
    usage_at: Option<(u64, u64)>,
    /// The turn goes on because a Stop hook said so (its hooks are told,
    /// to keep from holding the agent for ever).
    stop_hook_active: bool,
}

impl ModelDriver {
    /// The driver of `core`, whose conversation (loaded with it) is
    /// `messages`.
    pub fn new(
        core: RunCore,
        setup: ModelSetup,
        messages: Vec<(u64, MessageBytes)>,
    ) -> ModelDriver {
        ModelDriver {
            core,
            provider: setup.provider,
            system_json: setup.prompt.system_json.into(),
            tools_json: setup.prompt.tools_json.into(),
            allowed_tools: setup.prompt.allowed_tools,
            mcp: setup.mcp,
            messages,
            max_output_tokens: setup.max_output_tokens,
            fan_out: setup.fan_out,
            limits: setup.limits,
            compaction: setup.compaction,
            usage_at: None,
            stop_hook_active: false,
        }
    }

    /// Runs the agent until it ends, stops or pauses. The final state is
    /// returned for the supervisor to record (with any notification).
    pub async fn run(mut self) -> Finished {
        let driven = self.drive().await;
        self.core.finish(driven).await
    }

    async fn drive(&mut self) -> Result<RunEnd, Halt> {
        self.core.set_status(Status::Running).await?;
        self.answer_interrupted_calls().await?;
        if let Some(end) = self.compact_only().await {
            return end;
        }
        // Turn boundary: messages and notifications that arrived while the
        // agent was idle (or before it started) are delivered first, with
        // what SessionStart (a subagent's first run: SubagentStart) hooks
        // add.
        let context = self.start_hooks().await?;
        self.deliver_inbox(context).await?;
        let mut max_tokens_recoveries = 0;
        // max_turns bounds one run (a task, or one message's worth of
        // work after a revival), not the agent's whole life: a long-lived
        // session would otherwise run out for good.
        let turns_before = self.core.record.turns;
        // Set after `pause_turn`: the assistant message goes back as is.
        let mut continuing_paused_turn = false;
        loop {
            if let Some(stop) = self.core.stops.requested() {
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
            if self.core.record.turns - turns_before >= self.core.record.max_turns {
                return Ok(RunEnd::Failed(format!(
                    "stopped after reaching max_turns ({}) without a final answer",
                    self.core.record.max_turns
                )));
            }
            self.checkpoint_if_a_turn_begins().await;
            if let Some(why) = self.core.host.budget_spent(&self.core.record) {
                return Ok(RunEnd::BudgetExhausted(why));
            }
            self.compact_if_due().await?;
            // A compaction's summary request was billed too.
            if let Some(why) = self.core.host.budget_spent(&self.core.record) {
                return Ok(RunEnd::BudgetExhausted(why));
            }
            let response = match self.call_model().await {
                Err(Halt::Overflow(why)) => {
                    tracing::info!(agent = %self.core.record.id, reason = %why, "the provider says the request is too long");
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

    /// A checkpoint before the model answers a new user turn.
    async fn checkpoint_if_a_turn_begins(&mut self) {
        if let Some((seq, m)) = self.messages.last() {
            let (seq, role, content) = (*seq, m.role, m.content_json.clone());
            self.core.checkpoint_turn(seq, role, &content).await;
        }
    }

    /// A slot of each family's `max_concurrent_requests` this agent is
    /// under; while it waits for one, `list` and `show` say so.
    async fn request_permits(&mut self) -> Result<Vec<tokio::sync::OwnedSemaphorePermit>, Halt> {
        let mut permits = self.core.host.request_permits(&self.core.record);
        if let Some(now) = futures::FutureExt::now_or_never(&mut permits) {
            return Ok(now);
        }
        self.core.hub.publish_status(StatusSnapshot {
            waiting_for: Some(
                "a model request slot of its family (max_concurrent_requests)".into(),
            ),
            ..StatusSnapshot::of(&self.core.record)
        });
        let permits = tokio::select! {
            stop = self.core.stops.any() => return Err(Halt::Stop(stop)),
            permits = permits => permits,
        };
        self.core
            .hub
            .publish_status(StatusSnapshot::of(&self.core.record));
        Ok(permits)
    }

    /// One model call with the conversation so far. A stop asked for while
    /// the model answers ends the run (`Halt::Stop`); so does a failed call.
    async fn call_model(&mut self) -> Result<ModelResponse, Halt> {
        let request = ModelRequest {
            model: self.core.record.model.clone(),
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
                    stop = self.core.stops.any() => return Err(Halt::Stop(stop)),
                    _ = group.wait() => {}
                }
                None
            }
        };
        // A family's `max_concurrent_requests`: held until the response
        // has ended (taken after the fan-out wait, so a follower never
        // holds one its leader needs).
        let _in_flight = self.request_permits().await?;
        let hub = self.core.hub.clone();
        let releases = leader.clone();
        let on_event = move |e: crate::model::ModelEvent| {
            if let (Some(group), crate::model::ModelEvent::Delta(_)) = (&releases, &e) {
                group.release();
            }
            hub.publish_model_event(e)
        };
        let response = tokio::select! {
            biased;
            _ = self.core.stops.interrupt.cancelled() => {
                self.core.hub.discard_partial();
                let stop = self.core.stops.aborted();
                if stop == RunEnd::Halted {
                    // Nothing of the answer is kept (a partial message
                    // could not be sent back as is); the note says so.
                    let note = json!([{"type": "text", "text": "interrupted while the model was answering; its partial answer was discarded"}]);
                    self.write_entry(Role::System, json_bytes(&note), None, None, &[])
                        .await?;
                }
                return Err(Halt::Stop(stop));
            }
            r = self.provider.complete(&request, &on_event) => r,
        };
        if let Some(group) = leader {
            group.release();
        }
        response.map_err(|e| {
            self.core.hub.discard_partial();
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
        self.core.record.turns += 1;
        self.core.record.tool_uses += calls.len() as u32;
        self.core.record.usage.add(&response.usage);
        let assistant_seq = self.core.next_seq;
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
                } else if let Some(go_on) = self.stop_hooks().await? {
                    // A Stop hook blocked the end: its reason is the next
                    // user text.
                    self.stop_hook_active = true;
                    self.deliver_inbox(vec![json!({"type": "text", "text": go_on})])
                        .await?;
                    AfterAnswer::Continue
                } else {
                    self.stop_hook_active = false;
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

    /// Runs the SessionStart hooks (matched against `startup` or `resume`;
    /// for a subagent's first run, SubagentStart, matched against its
    /// type): the context they add, as text blocks — only when the agent
    /// has something to answer, so a hook never makes a turn of its own.
    async fn start_hooks(&mut self) -> Result<Vec<Value>, Halt> {
        use agentd_rules::hooks::HookEvent;
        let first = self.core.record.turns == 0;
        let (event, target, fields) = if first && self.core.record.parent.is_some() {
            let t = self.core.record.subagent_type.clone();
            (HookEvent::SubagentStart, t, json!({}))
        } else {
            let source = if first { "startup" } else { "resume" };
            (
                HookEvent::SessionStart,
                source.to_string(),
                json!({"source": source}),
            )
        };
        if !self.core.has_hooks(event, &target) {
            return Ok(Vec::new());
        }
        let pending = self
            .messages
            .last()
            .is_some_and(|(_, m)| m.role == Role::User)
            || self.core.store.has_inbox(self.core.record.id)?;
        let ran = self.core.run_hooks(event, &target, fields).await?;
        if !pending {
            return Ok(Vec::new());
        }
        Ok(ran
            .into_iter()
            .filter_map(|r| r.said.context)
            .map(|c| json!({"type": "text", "text": c}))
            .collect())
    }

    /// Runs the Stop hooks (SubagentStop for an agent with a parent) as
    /// the turn ends: the reasons of those that block it, if any do.
    async fn stop_hooks(&mut self) -> Result<Option<String>, Halt> {
        use agentd_rules::hooks::HookEvent;
        let event = if self.core.record.parent.is_some() {
            HookEvent::SubagentStop
        } else {
            HookEvent::Stop
        };
        let fields = json!({"stop_hook_active": self.stop_hook_active});
        let ran = self.core.run_hooks(event, "", fields).await?;
        let reasons: Vec<String> = ran.iter().filter_map(|r| r.said.block.clone()).collect();
        Ok((!reasons.is_empty()).then(|| reasons.join("\n")))
    }

    /// The text of the newest assistant message.
    fn last_answer(&self) -> String {
        self.messages
            .iter()
            .rev()
            .find(|(_, m)| m.role == Role::Assistant)
            .and_then(|(_, m)| serde_json::from_slice::<Vec<Value>>(&m.content_json).ok())
            .map(|content| final_text(&content))
            .unwrap_or_else(|| self.core.record.result().to_string())
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
