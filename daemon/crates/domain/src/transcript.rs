//! Transcript entries: the agent's whole state, one message at a time.

use std::fmt;

use serde_json::Value;

use super::Usage;

/// Who wrote a transcript entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    User,
    Assistant,
    /// A note by the daemon; the request builder decides what it means.
    System,
}

impl Role {
    /// The role as the Messages API spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::System => "system",
        }
    }
}

/// Why the model ended a response.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StopReason {
    EndTurn,
    ToolUse,
    MaxTokens,
    StopSequence,
    /// The server paused a long turn; sending it back continues it.
    PauseTurn,
    Refusal,
    ContextWindowExceeded,
    /// A value this agentd does not know, kept as the provider sent it.
    Other(String),
}

impl StopReason {
    /// The Anthropic Messages spelling (what the transcript stores).
    pub fn parse(text: &str) -> StopReason {
        match text {
            "end_turn" => StopReason::EndTurn,
            "tool_use" => StopReason::ToolUse,
            "max_tokens" => StopReason::MaxTokens,
            "stop_sequence" => StopReason::StopSequence,
            "pause_turn" => StopReason::PauseTurn,
            "refusal" => StopReason::Refusal,
            "model_context_window_exceeded" => StopReason::ContextWindowExceeded,
            other => StopReason::Other(other.to_string()),
        }
    }

    pub fn as_str(&self) -> &str {
        match self {
            StopReason::EndTurn => "end_turn",
            StopReason::ToolUse => "tool_use",
            StopReason::MaxTokens => "max_tokens",
            StopReason::StopSequence => "stop_sequence",
            StopReason::PauseTurn => "pause_turn",
            StopReason::Refusal => "refusal",
            StopReason::ContextWindowExceeded => "model_context_window_exceeded",
            StopReason::Other(s) => s,
        }
    }
}

impl fmt::Display for StopReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One message of a transcript. `content_json` holds the content blocks as
/// the exact bytes sent to (or received from) the model, so rebuilding a
/// request from the transcript reproduces it byte for byte.
#[derive(Clone, Debug, PartialEq)]
pub struct TranscriptEntry {
    pub seq: u64,
    pub role: Role,
    pub content_json: Vec<u8>,
    pub created_at_ms: i64,
    /// Set on assistant entries.
    pub usage: Option<Usage>,
    /// Set on assistant entries.
    pub stop_reason: Option<StopReason>,
    /// A byte offset in `content_json` (the closing brace of a block) where
    /// a prompt-cache breakpoint goes: a fork's last placeholder result, so
    /// that sibling forks share the cached prefix up to it (DESIGN §6).
    pub cache_point: Option<u32>,
    /// Set on a compaction boundary (a `System` entry whose content is the
    /// user message that holds the summary, as later requests send it).
    pub compact: Option<CompactBoundary>,
    /// On a user entry of tool results: what each file tool call among
    /// them changed (the model is never sent these; clients show them).
    pub file_changes: Vec<super::ToolFileChange>,
    /// On a user entry of tool results: what permission rules decided of
    /// the calls among them (DESIGN §24). Not sent to the model.
    pub rule_decisions: Vec<super::RuleDecision>,
}

/// What led to a compaction (DESIGN §17).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompactTrigger {
    /// The next request would have passed `compact_at` of the window.
    Auto,
    /// Asked for (`agentctl compact`, `CompactAgent`).
    Manual,
    /// The provider refused a request as too long.
    Overflow,
}

impl CompactTrigger {
    pub fn as_str(self) -> &'static str {
        match self {
            CompactTrigger::Auto => "auto",
            CompactTrigger::Manual => "manual",
            CompactTrigger::Overflow => "overflow",
        }
    }
}

/// A compaction boundary: every request after it sends the frozen system
/// and tools, the summary, then only the entries after the boundary.
/// Nothing before it is deleted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompactBoundary {
    pub trigger: CompactTrigger,
    /// The summary the model wrote.
    pub summary: String,
    /// Input tokens of the conversation it replaced (as the summary
    /// request was counted).
    pub tokens_before: u64,
    /// Estimated input tokens of the next request (system, tools and
    /// summary), at four bytes a token.
    pub tokens_after: u64,
    /// The last entry the summary covers.
    pub covers_through_seq: u64,
}

/// The bytes of a JSON value. Infallible: a `Value` always serializes (its
/// map keys are strings), so no caller ever stores an empty entry instead.
pub fn json_bytes(value: &Value) -> Vec<u8> {
    value.to_string().into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stop_reasons_round_trip_and_keep_unknown_values() {
        for s in [
            "end_turn",
            "tool_use",
            "max_tokens",
            "stop_sequence",
            "pause_turn",
            "refusal",
            "model_context_window_exceeded",
            "something_new",
        ] {
            assert_eq!(StopReason::parse(s).as_str(), s);
        }
        assert_eq!(
            StopReason::parse("something_new"),
            StopReason::Other("something_new".into())
        );
    }

    #[test]
    fn json_bytes_match_serde_json() {
        let v = serde_json::json!([{"type": "text", "text": "héllo \"q\""}]);
        assert_eq!(json_bytes(&v), serde_json::to_vec(&v).unwrap());
    }
}
