//! Compaction (DESIGN §17): when an agent's conversation is about to
//! outgrow its model's context window (or the provider says it has), the
//! turn loop asks the model for a continuation summary with the agent's own
//! request — same system, tools and message bytes, so the prompt cache
//! serves it — plus one text block, and stores the answer as one durable
//! `compact_boundary` entry. Later requests send the frozen system and
//! tools, the summary as one user message, then only what came after it.
//! Nothing is deleted, and a crash before the entry is written leaves no
//! trace: the next run compacts again.

use std::sync::Mutex;

use serde_json::{Value, json};
use tokio::sync::oneshot;

use super::ModelDriver;
use super::context_size::estimate;
use crate::agent::run::{Halt, RunEnd};
use crate::domain::{
    CompactBoundary, CompactTrigger, Role, Status, TranscriptEntry, json_bytes, now_ms,
};
use crate::model::{MessageBytes, ModelError, ModelRequest, ModelResponse};
use agentd_shared::sync::Unpoisoned as _;

/// What later requests say before the summary: the model reads it as the
/// start of the conversation. Forks recognise a summary by it.
pub const SUMMARY_PREAMBLE: &str = "This session continues an earlier conversation that \
outgrew the context window; agentd replaced it with the summary below (the full history stays \
in agentd's transcript). Continue the work from where it stopped, without asking the user \
anything and without repeating steps the summary says are done.";

/// The block added to the agent's own request to ask for the summary.
pub const SUMMARY_REQUEST: &str = "agentd: the conversation above must be compacted to fit \
the context window. Write a continuation summary from which you can carry on the work without \
the conversation. Include, under these headings: 1. Task: what the user asked for, with every \
requirement. 2. Decisions: what was decided and why. 3. Files: the files read, changed or \
created, with what matters about each. 4. Done: the steps completed, with their results (the \
most recent ones in detail, including what the latest tool results showed). 5. Remaining: what \
is left, and the exact next step. 6. Pending instructions: any instructions from the user or \
other agents not yet carried out, quoted verbatim. Reply with the summary only, in plain text; \
do not call any tool.";

/// Tool result bodies cleared to make a summary request fit say this.
const CLEARED: &str = "[output cleared by agentd to fit the context window]";

/// Attempts at a summary request that the provider refuses as too long,
/// each with a smaller conversation, before compaction fails.
const MAX_SHRINKS: u32 = 12;

/// A compaction asked for by hand (`CompactAgent`), answered once its
/// boundary is on disk (or with why it could not be made).
pub struct CompactRequest {
    pub instructions: Option<String>,
    pub done: oneshot::Sender<Result<CompactBoundary, String>>,
}

/// The compactions asked of one run, done at its next turn boundary.
#[derive(Default)]
pub struct CompactQueue {
    pending: Mutex<Vec<CompactRequest>>,
    /// A run started only to compact an idle agent: the status it goes
    /// back to afterwards.
    only: std::sync::OnceLock<Status>,
}

impl CompactQueue {
    /// The run this queue is given to only compacts an idle agent that is
    /// `status` now.
    pub fn compact_only(&self, status: Status) {
        let _ = self.only.set(status);
    }

    pub fn push(&self, request: CompactRequest) {
        self.lock().push(request);
    }

    /// The requests not yet taken by a run.
    pub fn take(&self) -> Vec<CompactRequest> {
        std::mem::take(&mut *self.lock())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<CompactRequest>> {
        self.pending.locked()
    }
}

impl ModelDriver {
    /// At a turn boundary, before a request: compactions asked for by
    /// hand, then one if the request would pass `compact_at` of the window.
    pub(super) async fn compact_if_due(&mut self) -> Result<(), Halt> {
        for request in self.compaction.take() {
            if !self.compactable() {
                // Already compacted (by a call just before, say): the
                // conversation is its summary and nothing after it.
                let _ = request.done.send(Err(
                    "its conversation is already compacted: it holds only a summary, with \
                     nothing after it to compact"
                        .into(),
                ));
                continue;
            }
            let result = self
                .compact(CompactTrigger::Manual, request.instructions.as_deref())
                .await;
            match result {
                Ok(boundary) => {
                    let _ = request.done.send(Ok(boundary));
                }
                // A compaction asked for by hand that failed (the summary
                // call, an empty summary) is reported to who asked; the
                // agent goes on as it was.
                Err(Halt::Stop(RunEnd::Failed(why))) => {
                    tracing::warn!(agent = %self.core.record.id, reason = %why, "a compaction asked for by hand failed");
                    let _ = request.done.send(Err(why));
                }
                Err(halt) => {
                    let _ = request.done.send(Err(halt_reason(&halt)));
                    return Err(halt);
                }
            }
        }
        let due = self
            .limits
            .threshold()
            .is_some_and(|t| self.next_request_tokens() > t);
        if due && self.compactable() {
            self.compact(CompactTrigger::Auto, None).await?;
        }
        Ok(())
    }

    /// A run started only to compact an idle agent: compacts, then ends
    /// as the agent was. None for an ordinary run.
    pub(super) async fn compact_only(&mut self) -> Option<Result<RunEnd, Halt>> {
        let restore = *self.compaction.only.get()?;
        Some(self.compact_if_due().await.map(|()| match restore {
            Status::Completed => RunEnd::Unchanged(Status::Completed),
            _ => RunEnd::Unchanged(Status::Paused),
        }))
    }

    /// Whether there is anything to compact: more than a summary.
    fn compactable(&self) -> bool {
        match self.messages.as_slice() {
            [] => false,
            [(_, only)] => !is_summary(only),
            _ => true,
        }
    }

    /// Compacts now: asks for the summary, writes the boundary (durably,
    /// with the record), and continues from it.
    pub(super) async fn compact(
        &mut self,
        trigger: CompactTrigger,
        instructions: Option<&str>,
    ) -> Result<CompactBoundary, Halt> {
        if !self.compactable() {
            return Err(Halt::Stop(RunEnd::Failed(
                "the conversation does not fit the model's context window even after compaction"
                    .into(),
            )));
        }
        let covers_through_seq = self.messages.last().map_or(0, |(s, _)| *s);
        // PreCompact hooks are told; they cannot stop a compaction.
        let what = match trigger {
            CompactTrigger::Manual => "manual",
            CompactTrigger::Auto | CompactTrigger::Overflow => "auto",
        };
        let fields =
            serde_json::json!({"trigger": what, "custom_instructions": instructions.unwrap_or("")});
        self.core
            .run_hooks(agentd_rules::hooks::HookEvent::PreCompact, what, fields)
            .await?;
        tracing::info!(agent = %self.core.record.id, trigger = trigger.as_str(), covers_through_seq, "compacting the conversation");
        let mut messages: Vec<MessageBytes> =
            self.messages.iter().map(|(_, m)| m.clone()).collect();
        let mut shrinks = 0;
        let response = loop {
            let request = self.summary_request(&messages, instructions);
            // Known to be over what a request may fill: shrunk before it
            // is sent, not after the provider refuses it.
            if let Some(limit) = self.limits.threshold()
                && shrinks < MAX_SHRINKS
                && self.request_tokens(&request) > limit
                && shrink(&mut messages)
            {
                shrinks += 1;
                tracing::info!(agent = %self.core.record.id, shrinks, limit, "the summary request would not fit; shrinking it before sending");
                continue;
            }
            match self.call_for_summary(&request).await? {
                Ok(response) => break response,
                Err(ModelError::ContextOverflow(why)) if shrinks < MAX_SHRINKS => {
                    shrinks += 1;
                    tracing::info!(agent = %self.core.record.id, shrinks, "the summary request is too long; shrinking it");
                    if !shrink(&mut messages) {
                        return Err(Halt::Stop(RunEnd::Failed(format!(
                            "compaction failed: even the shortest summary request is too long ({why})"
                        ))));
                    }
                }
                Err(e) => {
                    return Err(Halt::Stop(RunEnd::Failed(format!(
                        "compaction failed: {e}"
                    ))));
                }
            }
        };
        let summary = summary_text(&response);
        if summary.trim().is_empty() {
            return Err(Halt::Stop(RunEnd::Failed(
                "compaction failed: the model's summary was empty".into(),
            )));
        }
        let content = json_bytes(&json!([{
            "type": "text",
            "text": format!("{SUMMARY_PREAMBLE}\n\n<summary>\n{summary}\n</summary>"),
        }]));
        let u = &response.usage;
        let boundary = CompactBoundary {
            trigger,
            tokens_after: estimate(content.len() + self.system_json.len() + self.tools_json.len()),
            tokens_before: u.input_tokens
                + u.cache_read_input_tokens
                + u.cache_creation_input_tokens,
            summary,
            covers_through_seq,
        };
        self.core.record.usage.add(&response.usage);
        self.core.record.compactions += 1;
        let seq = self.core.next_seq;
        self.append_entry(
            TranscriptEntry {
                seq,
                role: Role::System,
                content_json: content,
                created_at_ms: now_ms(),
                usage: Some(response.usage),
                stop_reason: Some(response.stop_reason.clone()),
                cache_point: None,
                compact: Some(boundary.clone()),
                file_changes: Vec::new(),
                rule_decisions: Vec::new(),
            },
            &[],
        )
        .await?;
        self.usage_at = None;
        Ok(boundary)
    }

    /// The agent's own request, with the summary request added as one
    /// more user text block.
    fn summary_request(
        &self,
        messages: &[MessageBytes],
        instructions: Option<&str>,
    ) -> ModelRequest {
        let mut text = SUMMARY_REQUEST.to_string();
        if let Some(extra) = instructions.filter(|i| !i.trim().is_empty()) {
            text.push_str("\n\nAlso follow these instructions for the summary: ");
            text.push_str(extra);
        }
        let ask = json!({"type": "text", "text": text});
        let mut messages = messages.to_vec();
        match messages.last_mut() {
            // The newest message is the user's (results, a message): the
            // block joins it, so roles keep alternating.
            Some(last) if last.role == Role::User => {
                let mut blocks: Vec<Value> =
                    serde_json::from_slice(&last.content_json).unwrap_or_default();
                blocks.push(ask);
                last.content_json = json_bytes(&Value::Array(blocks)).into();
            }
            _ => messages.push(MessageBytes {
                role: Role::User,
                content_json: json_bytes(&json!([ask])).into(),
                cache_point: None,
            }),
        }
        ModelRequest {
            model: self.core.record.model.clone(),
            system_json: self.system_json.clone(),
            tools_json: self.tools_json.clone(),
            messages,
            max_tokens: self.max_output_tokens,
        }
    }

    /// One summary request; a stop asked for meanwhile ends the run (no
    /// boundary is written).
    async fn call_for_summary(
        &mut self,
        request: &ModelRequest,
    ) -> Result<Result<ModelResponse, ModelError>, Halt> {
        // The summary is not streamed to attachers: it is not the agent's
        // answer. They see the boundary once it is written.
        let on_event = |_e: crate::model::ModelEvent| {};
        tokio::select! {
            biased;
            _ = self.core.stops.interrupt.cancelled() => Err(Halt::Stop(self.core.stops.aborted())),
            r = self.provider.complete(request, &on_event) => Ok(r),
        }
    }

    /// Records the input the newest response was sent with (for the next
    /// estimate).
    pub(super) fn note_request_size(&mut self, assistant_seq: u64, usage: &crate::domain::Usage) {
        let input =
            usage.input_tokens + usage.cache_read_input_tokens + usage.cache_creation_input_tokens;
        self.usage_at = Some((assistant_seq, input + usage.output_tokens));
    }
}

/// Why a manual compaction did not happen, for the person who asked.
fn halt_reason(halt: &Halt) -> String {
    match halt {
        Halt::Stop(RunEnd::Failed(why)) => why.clone(),
        Halt::Stop(end) => format!("the agent stopped ({}) before compacting", end.status()),
        Halt::Store(e) => e.to_string(),
        Halt::Overflow(why) => why.clone(),
    }
}

/// The summary: the answer's text blocks (a tool call it made anyway is
/// not run).
fn summary_text(response: &ModelResponse) -> String {
    response
        .content
        .iter()
        .filter(|b| b["type"] == "text")
        .filter_map(|b| b["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Makes a summary request's conversation smaller: first the oldest half
/// of the tool results still holding output are cleared; when none is
/// left, the oldest exchanges after the first message (the task) are
/// dropped, half of them at a time. False when nothing is left to take.
pub fn shrink(messages: &mut Vec<MessageBytes>) -> bool {
    let with_output: Vec<usize> = messages
        .iter()
        .enumerate()
        .filter(|(_, m)| m.role == Role::User && has_uncleared_result(m))
        .map(|(i, _)| i)
        .collect();
    if !with_output.is_empty() {
        for &i in &with_output[..with_output.len().div_ceil(2)] {
            clear_results(&mut messages[i]);
        }
        return true;
    }
    // Drop whole exchanges (an assistant message and the user message
    // after it) following the first message, so roles still alternate
    // and every result keeps its call.
    let droppable = messages.len().saturating_sub(1) / 2;
    if droppable == 0 {
        return false;
    }
    let drop = droppable.div_ceil(2) * 2;
    messages.drain(1..1 + drop);
    true
}

fn has_uncleared_result(m: &MessageBytes) -> bool {
    serde_json::from_slice::<Vec<Value>>(&m.content_json)
        .unwrap_or_default()
        .iter()
        .any(|b| b["type"] == "tool_result" && b["content"] != json!(CLEARED))
}

fn clear_results(m: &mut MessageBytes) {
    let mut blocks: Vec<Value> = serde_json::from_slice(&m.content_json).unwrap_or_default();
    for b in &mut blocks {
        if b["type"] == "tool_result" {
            b["content"] = json!(CLEARED);
        }
    }
    m.content_json = json_bytes(&Value::Array(blocks)).into();
    m.cache_point = None;
}

/// Whether a user message is a compaction summary (forks keep it first
/// whatever `fork_turns` says).
pub fn is_summary(m: &MessageBytes) -> bool {
    m.role == Role::User
        && serde_json::from_slice::<Vec<Value>>(&m.content_json)
            .ok()
            .and_then(|b| {
                b.first()
                    .and_then(|b| b["text"].as_str())
                    .map(|t| t.starts_with(SUMMARY_PREAMBLE))
            })
            .unwrap_or(false)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn msg(role: Role, v: Value) -> MessageBytes {
        MessageBytes {
            role,
            content_json: json_bytes(&v).into(),
            cache_point: None,
        }
    }

    fn exchange(n: usize) -> Vec<MessageBytes> {
        let mut out = vec![msg(
            Role::User,
            json!([{"type": "text", "text": "the task"}]),
        )];
        for i in 0..n {
            out.push(msg(
                Role::Assistant,
                json!([{"type": "tool_use", "id": format!("t{i}"), "name": "Bash", "input": {}}]),
            ));
            out.push(msg(
                Role::User,
                json!([{"type": "tool_result", "tool_use_id": format!("t{i}"), "content": "x".repeat(1000)}]),
            ));
        }
        out
    }

    #[test]
    fn shrinking_clears_the_oldest_results_first_then_drops_exchanges() {
        let mut m = exchange(4);
        let before: usize = m.iter().map(|m| m.content_json.len()).sum();
        assert!(shrink(&mut m));
        assert_eq!(m.len(), 9, "nothing dropped yet");
        assert!(!has_uncleared_result(&m[2]) && !has_uncleared_result(&m[4]));
        assert!(has_uncleared_result(&m[6]) && has_uncleared_result(&m[8]));
        assert!(m.iter().map(|m| m.content_json.len()).sum::<usize>() < before);
        assert!(shrink(&mut m));
        assert!(has_uncleared_result(&m[8]), "2 cleared, then 1, then 1");
        assert!(shrink(&mut m));
        assert!(m.iter().all(|m| !has_uncleared_result(m)));
        assert_eq!(m.len(), 9);
        // Then whole exchanges go, the task stays, roles alternate.
        assert!(shrink(&mut m));
        assert_eq!(m.len(), 5);
        assert_eq!(m[0].role, Role::User);
        assert_eq!(m[1].role, Role::Assistant);
        assert!(shrink(&mut m));
        assert_eq!(m.len(), 3);
        assert!(shrink(&mut m));
        assert_eq!(m.len(), 1);
        assert!(!shrink(&mut m), "the task alone cannot shrink");
    }

    #[test]
    fn summaries_are_recognised_by_their_preamble() {
        let s = msg(
            Role::User,
            json!([{"type": "text", "text": format!("{SUMMARY_PREAMBLE}\n\n<summary>\nx\n</summary>")}]),
        );
        assert!(is_summary(&s));
        assert!(!is_summary(&exchange(0)[0]));
    }
}
