//! Reply scripts for the `mock-model` binary: a JSON list, one entry per
//! request, served in order.
//!
//! ```json
//! [
//!   {"text": "hi"},
//!   {"tool_use": {"name": "Bash", "input": {"command": "ls"}}},
//!   {"text": "Let me look.", "tool_use": [{"id": "toolu_1", "name": "Read", "input": {"path": "README.md"}}]},
//!   {"content": [{"type": "thinking", "thinking": "hmm", "signature": "sig"},
//!                {"type": "text", "text": "ok"}],
//!    "stop_reason": "end_turn", "event_delay_ms": 20, "start_delay_ms": 500},
//!   {"status": 529, "message": "Overloaded"},
//!   {"status": 429, "message": "slow down", "retry_after": 2},
//!   {"reset": true},
//!   {"text": "this stream breaks", "cut_after": 4},
//!   {"text": "this one errors", "error_after": 4, "error_type": "overloaded_error", "error_message": "Overloaded"}
//! ]
//! ```
//!
//! A message entry has any of `text` (a text block), `tool_use` (an object
//! or a list of `{"id"?, "name", "input"}`; text comes first), `content` (a
//! list of blocks in Anthropic's format: text, tool_use, thinking,
//! redacted_thinking; used instead of text/tool_use), plus `stop_reason`,
//! `event_delay_ms`, `start_delay_ms`, and at most one of `cut_after` or
//! `error_after` (with `error_type`, default `overloaded_error`, and
//! `error_message`, default `Overloaded`). `status` (with `message`,
//! `retry_after`) and `reset` make the other kinds of replies.

use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

use super::{Block, MockMessage, Reply};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    text: Option<String>,
    tool_use: Option<Value>,
    content: Option<Vec<Value>>,
    stop_reason: Option<String>,
    event_delay_ms: Option<u64>,
    start_delay_ms: Option<u64>,
    cut_after: Option<usize>,
    error_after: Option<usize>,
    error_type: Option<String>,
    error_message: Option<String>,
    status: Option<u16>,
    message: Option<String>,
    retry_after: Option<u64>,
    #[serde(default)]
    reset: bool,
}

/// Parses a script (see the module docs).
pub fn parse_script(text: &str) -> Result<Vec<Reply>, String> {
    let entries: Vec<Entry> = serde_json::from_str(text).map_err(|e| format!("script: {e}"))?;
    entries
        .into_iter()
        .enumerate()
        .map(|(i, e)| entry_reply(e).map_err(|m| format!("script entry {i}: {m}")))
        .collect()
}

fn entry_reply(e: Entry) -> Result<Reply, String> {
    if e.reset {
        return Ok(Reply::Reset);
    }
    if let Some(code) = e.status {
        return Ok(Reply::Status {
            code,
            message: e.message.unwrap_or_else(|| format!("mock status {code}")),
            retry_after: e.retry_after,
        });
    }
    let mut message = MockMessage::new();
    if let Some(content) = e.content {
        for block in content {
            message.content.push(parse_block(&block)?);
        }
    } else {
        if let Some(text) = e.text {
            message.content.push(Block::Text(text));
        }
        match e.tool_use {
            None => {}
            Some(Value::Array(uses)) => {
                for u in uses {
                    message.content.push(parse_tool_use(&u)?);
                }
            }
            Some(u) => message.content.push(parse_tool_use(&u)?),
        }
    }
    if message.content.is_empty() {
        return Err("a message needs text, tool_use or content".into());
    }
    message.stop_reason = e.stop_reason;
    message.event_delay = Duration::from_millis(e.event_delay_ms.unwrap_or(0));
    message.start_delay = Duration::from_millis(e.start_delay_ms.unwrap_or(0));
    match (e.cut_after, e.error_after) {
        (Some(_), Some(_)) => Err("cut_after and error_after exclude each other".into()),
        (Some(after_events), None) => Ok(Reply::Cut {
            message,
            after_events,
        }),
        (None, Some(after_events)) => Ok(Reply::ErrorEvent {
            message,
            after_events,
            error_type: e.error_type.unwrap_or_else(|| "overloaded_error".into()),
            error_message: e.error_message.unwrap_or_else(|| "Overloaded".into()),
        }),
        (None, None) => Ok(Reply::Message(message)),
    }
}

fn str_field(v: &Value, key: &str) -> Result<String, String> {
    v.get(key)
        .and_then(Value::as_str)
        .map(str::to_string)
        .ok_or_else(|| format!("missing string field {key:?} in {v}"))
}

fn parse_tool_use(v: &Value) -> Result<Block, String> {
    Ok(Block::ToolUse {
        id: v
            .get("id")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        name: str_field(v, "name")?,
        input: v
            .get("input")
            .cloned()
            .unwrap_or_else(|| Value::Object(Default::default())),
    })
}

fn parse_block(v: &Value) -> Result<Block, String> {
    match v.get("type").and_then(Value::as_str) {
        Some("text") => Ok(Block::Text(str_field(v, "text")?)),
        Some("tool_use") => parse_tool_use(v),
        Some("thinking") => Ok(Block::Thinking {
            thinking: str_field(v, "thinking")?,
            signature: str_field(v, "signature")?,
        }),
        Some("redacted_thinking") => Ok(Block::RedactedThinking {
            data: str_field(v, "data")?,
        }),
        _ => Err(format!("unknown block {v}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_every_kind() {
        let replies = parse_script(
            r#"[
              {"text": "hi"},
              {"tool_use": {"name": "Bash", "input": {"command": "ls"}}},
              {"text": "look", "tool_use": [{"id": "t1", "name": "Read", "input": {"path": "a"}}]},
              {"content": [{"type": "thinking", "thinking": "hmm", "signature": "s"}, {"type": "text", "text": "ok"}],
               "stop_reason": "max_tokens", "event_delay_ms": 5},
              {"status": 429, "message": "slow", "retry_after": 3},
              {"reset": true},
              {"text": "x", "cut_after": 3},
              {"text": "y", "error_after": 2}
            ]"#,
        )
        .unwrap();
        assert_eq!(replies.len(), 8);
        assert!(matches!(&replies[0], Reply::Message(m) if m.content == vec![Block::text("hi")]));
        assert!(matches!(&replies[1], Reply::Message(m)
            if m.content == vec![Block::tool("", "Bash", json!({"command": "ls"}))]));
        assert!(matches!(&replies[2], Reply::Message(m) if m.content.len() == 2));
        assert!(matches!(&replies[3], Reply::Message(m)
            if m.stop_reason.as_deref() == Some("max_tokens") && m.event_delay == Duration::from_millis(5)));
        assert!(matches!(
            &replies[4],
            Reply::Status {
                code: 429,
                retry_after: Some(3),
                ..
            }
        ));
        assert!(matches!(&replies[5], Reply::Reset));
        assert!(matches!(
            &replies[6],
            Reply::Cut {
                after_events: 3,
                ..
            }
        ));
        assert!(
            matches!(&replies[7], Reply::ErrorEvent { after_events: 2, error_type, .. } if error_type == "overloaded_error")
        );
        assert!(parse_script(r#"[{"txt": "typo"}]"#).is_err());
        assert!(parse_script(r#"[{}]"#).is_err());
    }
}
