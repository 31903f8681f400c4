//! Anthropic Messages API: request checks, SSE rendering, error bodies.

use std::collections::HashSet;

use bytes::Bytes;
use serde_json::{Value, json};

use super::cache::{AnthropicUsage, tokens_of};
use super::stream::{random_id, split_json, split_text};
use super::{Block, MockMessage};

/// The `error.type` Anthropic uses for an HTTP status.
pub fn error_type(status: u16) -> &'static str {
    match status {
        400 => "invalid_request_error",
        401 => "authentication_error",
        402 => "billing_error",
        403 => "permission_error",
        404 => "not_found_error",
        413 => "request_too_large",
        429 => "rate_limit_error",
        504 => "timeout_error",
        529 => "overloaded_error",
        500..=599 => "api_error",
        _ => "invalid_request_error",
    }
}

/// `{"type":"error","error":{"type":..,"message":..},"request_id":..}`.
pub fn error_body(error_type: &str, message: &str, request_id: &str) -> Value {
    json!({
        "type": "error",
        "error": {"type": error_type, "message": message},
        "request_id": request_id,
    })
}

/// One SSE event: `event: <name>\ndata: <json>\n\n`.
pub fn sse(name: &str, data: &Value) -> Bytes {
    Bytes::from(format!("event: {name}\ndata: {data}\n\n"))
}

/// The `event: error` event sent mid-stream.
pub fn error_event(error_type: &str, message: &str) -> Bytes {
    sse(
        "error",
        &json!({"type": "error", "error": {"type": error_type, "message": message}}),
    )
}

/// Bytes of content that count as output.
fn content_len(message: &MockMessage) -> usize {
    message
        .content
        .iter()
        .map(|b| match b {
            Block::Text(t) => t.len(),
            Block::ToolUse { name, input, .. } => name.len() + input.to_string().len(),
            Block::Thinking { thinking, .. } => thinking.len(),
            Block::RedactedThinking { data } => data.len(),
        })
        .sum()
}

/// The output token count reported for a message (at least 1).
pub fn output_tokens(message: &MockMessage) -> u64 {
    tokens_of(content_len(message)).max(1)
}

/// The full event sequence of a streamed message.
pub fn render(message: &MockMessage, model: &str, usage: &AnthropicUsage) -> Vec<Bytes> {
    let mut events = Vec::new();
    let o = &usage.outcome;
    events.push(sse(
        "message_start",
        &json!({
            "type": "message_start",
            "message": {
                "id": format!("msg_01{}", random_id(22)),
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [],
                "stop_reason": null,
                "stop_sequence": null,
                "usage": {
                    "input_tokens": o.input,
                    "cache_creation_input_tokens": o.creation,
                    "cache_read_input_tokens": o.read,
                    "cache_creation": {
                        "ephemeral_5m_input_tokens": usage.creation_5m,
                        "ephemeral_1h_input_tokens": usage.creation_1h,
                    },
                    "output_tokens": 1,
                    "service_tier": "standard",
                },
            },
        }),
    ));
    let ping = || sse("ping", &json!({"type": "ping"}));
    events.push(ping());

    let n = message.content.len();
    for (index, block) in message.content.iter().enumerate() {
        let start = |content_block: Value| {
            sse(
                "content_block_start",
                &json!({"type": "content_block_start", "index": index, "content_block": content_block}),
            )
        };
        let delta = |delta: Value| {
            sse(
                "content_block_delta",
                &json!({"type": "content_block_delta", "index": index, "delta": delta}),
            )
        };
        match block {
            Block::Text(text) => {
                events.push(start(json!({"type": "text", "text": ""})));
                for piece in split_text(text) {
                    events.push(delta(json!({"type": "text_delta", "text": piece})));
                }
            }
            Block::ToolUse { id, name, input } => {
                let id = if id.is_empty() {
                    format!("toolu_01{}", random_id(22))
                } else {
                    id.clone()
                };
                events.push(start(
                    json!({"type": "tool_use", "id": id, "name": name, "input": {}}),
                ));
                // The API opens with an empty fragment.
                events.push(delta(
                    json!({"type": "input_json_delta", "partial_json": ""}),
                ));
                for piece in split_json(&input.to_string()) {
                    events.push(delta(
                        json!({"type": "input_json_delta", "partial_json": piece}),
                    ));
                }
            }
            Block::Thinking {
                thinking,
                signature,
            } => {
                events.push(start(
                    json!({"type": "thinking", "thinking": "", "signature": ""}),
                ));
                for piece in split_text(thinking) {
                    events.push(delta(json!({"type": "thinking_delta", "thinking": piece})));
                }
                events.push(delta(
                    json!({"type": "signature_delta", "signature": signature}),
                ));
            }
            Block::RedactedThinking { data } => {
                events.push(start(json!({"type": "redacted_thinking", "data": data})));
            }
        }
        events.push(sse(
            "content_block_stop",
            &json!({"type": "content_block_stop", "index": index}),
        ));
        if index % 2 == 1 && index + 1 < n {
            events.push(ping());
        }
    }
    events.push(sse(
        "message_delta",
        &json!({
            "type": "message_delta",
            "delta": {"stop_reason": message.effective_stop_reason(), "stop_sequence": null},
            "usage": {"output_tokens": output_tokens(message)},
        }),
    ));
    events.push(sse("message_stop", &json!({"type": "message_stop"})));
    events
}

fn content_blocks(message: &Value) -> Vec<&Value> {
    match message.get("content") {
        Some(Value::Array(blocks)) => blocks.iter().collect(),
        _ => Vec::new(),
    }
}

fn block_type(block: &Value) -> &str {
    block.get("type").and_then(Value::as_str).unwrap_or("")
}

/// Shape checks the real API makes; the error is an
/// `invalid_request_error` message.
pub fn validate(body: &Value) -> Result<(), String> {
    let Some(obj) = body.as_object() else {
        return Err("request body must be a JSON object".into());
    };
    match obj.get("model") {
        Some(Value::String(m)) if !m.is_empty() => {}
        _ => return Err("model: Field required".into()),
    }
    let max_tokens = match obj.get("max_tokens").and_then(Value::as_u64) {
        Some(n) if n >= 1 => n,
        _ => return Err("max_tokens: Field required (a positive integer)".into()),
    };
    if let Some(thinking) = obj.get("thinking") {
        check_thinking(thinking, max_tokens)?;
    }
    if let Some(effort) = obj.get("output_config").and_then(|c| c.get("effort"))
        && !matches!(effort.as_str(), Some("low" | "medium" | "high" | "max"))
    {
        return Err(format!(
            "output_config.effort: Input should be 'low', 'medium', 'high' or 'max' (got {effort})"
        ));
    }
    match obj.get("system") {
        None | Some(Value::String(_)) => {}
        Some(Value::Array(blocks)) => {
            for (i, b) in blocks.iter().enumerate() {
                if block_type(b) != "text" || !b.get("text").is_some_and(Value::is_string) {
                    return Err(format!("system.{i}: Input should be a text block"));
                }
            }
        }
        Some(_) => return Err("system: Input should be a string or a list of text blocks".into()),
    }
    match obj.get("tools") {
        None => {}
        Some(Value::Array(tools)) => {
            for (i, t) in tools.iter().enumerate() {
                if !t.get("name").is_some_and(Value::is_string) {
                    return Err(format!("tools.{i}.name: Field required"));
                }
                if t.get("type").is_none() && !t.get("input_schema").is_some_and(Value::is_object) {
                    return Err(format!("tools.{i}.custom.input_schema: Field required"));
                }
            }
        }
        Some(_) => return Err("tools: Input should be a valid list".into()),
    }
    let Some(messages) = obj.get("messages").and_then(Value::as_array) else {
        return Err("messages: Field required".into());
    };
    if messages.is_empty() {
        return Err("messages: at least one message is required".into());
    }
    let mut tool_use_ids = HashSet::new();
    for (m, message) in messages.iter().enumerate() {
        let role = message.get("role").and_then(Value::as_str);
        if !matches!(role, Some("user" | "assistant")) {
            return Err(format!(
                "messages.{m}.role: Input should be 'user' or 'assistant'"
            ));
        }
        match message.get("content") {
            Some(Value::String(_)) => {}
            Some(Value::Array(blocks)) => {
                for (i, b) in blocks.iter().enumerate() {
                    let t = block_type(b);
                    if t.is_empty() {
                        return Err(format!("messages.{m}.content.{i}.type: Field required"));
                    }
                    if t == "text"
                        && b.get("text")
                            .and_then(Value::as_str)
                            .is_none_or(str::is_empty)
                    {
                        return Err(format!(
                            "messages.{m}.content.{i}: text content blocks must be non-empty"
                        ));
                    }
                    if t == "tool_use" {
                        if role == Some("user") {
                            return Err(format!(
                                "messages.{m}.content.{i}: tool_use blocks may only appear in assistant messages"
                            ));
                        }
                        let id = b.get("id").and_then(Value::as_str).unwrap_or("");
                        if !b.get("input").is_some_and(Value::is_object) {
                            return Err(format!(
                                "messages.{m}.content.{i}.tool_use.input: Input should be a valid dictionary"
                            ));
                        }
                        if !tool_use_ids.insert(id.to_string()) {
                            return Err(format!(
                                "messages.{m}.content.{i}: `tool_use` ids must be unique (duplicate: {id})"
                            ));
                        }
                    }
                    if t == "tool_result" && role == Some("assistant") {
                        return Err(format!(
                            "messages.{m}.content.{i}: tool_result blocks may only appear in user messages"
                        ));
                    }
                }
            }
            _ => return Err(format!("messages.{m}.content: Field required")),
        }
    }
    // Every tool_use is answered by a tool_result in the very next message,
    // and every tool_result answers a tool_use of the message before.
    for (m, message) in messages.iter().enumerate() {
        let results: Vec<&str> = content_blocks(message)
            .into_iter()
            .filter(|b| block_type(b) == "tool_result")
            .map(|b| b.get("tool_use_id").and_then(Value::as_str).unwrap_or(""))
            .collect();
        let previous_uses: Vec<&str> = if m == 0 {
            Vec::new()
        } else {
            tool_uses(&messages[m - 1])
        };
        if let Some(stray) = results.iter().find(|r| !previous_uses.contains(r)) {
            return Err(format!(
                "messages.{m}.content: unexpected `tool_use_id` found in `tool_result` blocks: {stray}. Each `tool_result` block must have a corresponding `tool_use` block in the previous message."
            ));
        }
        let uses = tool_uses(message);
        if uses.is_empty() {
            continue;
        }
        let next_results: Vec<&str> = messages
            .get(m + 1)
            .map(|next| {
                content_blocks(next)
                    .into_iter()
                    .filter(|b| block_type(b) == "tool_result")
                    .map(|b| b.get("tool_use_id").and_then(Value::as_str).unwrap_or(""))
                    .collect()
            })
            .unwrap_or_default();
        let missing: Vec<&str> = uses
            .iter()
            .copied()
            .filter(|u| !next_results.contains(u))
            .collect();
        if !missing.is_empty() {
            return Err(format!(
                "messages.{}: `tool_use` ids were found without `tool_result` blocks immediately after: {}. Each `tool_use` block must have a corresponding `tool_result` block in the next message.",
                m + 1,
                missing.join(", ")
            ));
        }
    }
    Ok(())
}

/// `thinking`: `{"type": "enabled", "budget_tokens": N}` (at least 1024,
/// under `max_tokens`), `{"type": "disabled"}` or `{"type": "adaptive"}`
/// (the model decides; Claude Code sends it).
fn check_thinking(thinking: &Value, max_tokens: u64) -> Result<(), String> {
    match thinking.get("type").and_then(Value::as_str) {
        Some("disabled" | "adaptive") => Ok(()),
        Some("enabled") => match thinking.get("budget_tokens").and_then(Value::as_u64) {
            Some(b) if b < 1024 => Err(
                "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"
                    .into(),
            ),
            Some(b) if b >= max_tokens => {
                Err("`max_tokens` must be greater than `thinking.budget_tokens`".into())
            }
            Some(_) => Ok(()),
            None => Err("thinking.enabled.budget_tokens: Field required".into()),
        },
        _ => Err(format!(
            "thinking: Input tag {} found using 'type' does not match any of the expected tags: 'enabled', 'disabled', 'adaptive'",
            thinking.get("type").unwrap_or(&Value::Null)
        )),
    }
}

fn tool_uses(message: &Value) -> Vec<&str> {
    if message.get("role").and_then(Value::as_str) != Some("assistant") {
        return Vec::new();
    }
    content_blocks(message)
        .into_iter()
        .filter(|b| block_type(b) == "tool_use")
        .map(|b| b.get("id").and_then(Value::as_str).unwrap_or(""))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base(messages: Value) -> Value {
        json!({"model": "m", "max_tokens": 10, "stream": true, "messages": messages})
    }

    #[test]
    fn validation() {
        assert!(validate(&base(json!([{"role": "user", "content": "hi"}]))).is_ok());
        assert!(validate(&base(json!([]))).is_err());
        assert!(
            validate(&json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]}))
                .is_err()
        );
        assert!(validate(&base(json!([{"role": "system", "content": "hi"}]))).is_err());
        assert!(
            validate(&base(
                json!([{"role": "user", "content": [{"type": "text", "text": ""}]}])
            ))
            .is_err()
        );

        let tool_use = json!({"role": "assistant", "content": [
            {"type": "text", "text": "let me look"},
            {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}},
        ]});
        let result = |id: &str| {
            json!({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": id, "content": "a b c"},
            ]})
        };
        let user = json!({"role": "user", "content": "go"});
        assert!(validate(&base(json!([user, tool_use, result("toolu_1")]))).is_ok());
        let err = validate(&base(json!([user, tool_use, result("toolu_2")]))).unwrap_err();
        assert!(err.contains("toolu_1"), "{err}");
        let both = json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "a"},
            {"type": "tool_result", "tool_use_id": "toolu_2", "content": "b"},
        ]});
        let err = validate(&base(json!([user, tool_use, both]))).unwrap_err();
        assert!(
            err.contains("unexpected") && err.contains("toolu_2"),
            "{err}"
        );
        let err = validate(&base(
            json!([user, tool_use, {"role": "user", "content": "x"}]),
        ))
        .unwrap_err();
        assert!(
            err.contains("without `tool_result`") && err.contains("toolu_1"),
            "{err}"
        );
        assert!(validate(&base(json!([user, tool_use]))).is_err());
        assert!(validate(&base(json!([result("toolu_1")]))).is_err());
    }

    #[test]
    fn thinking_and_effort() {
        let with = |extra: Value| {
            let mut body = base(json!([{"role": "user", "content": "hi"}]));
            body["max_tokens"] = json!(32000);
            for (k, v) in extra.as_object().unwrap() {
                body[k] = v.clone();
            }
            validate(&body)
        };
        // Claude Code's settings.
        assert!(
            with(json!({"thinking": {"type": "adaptive"}, "output_config": {"effort": "medium"}}))
                .is_ok()
        );
        assert!(with(json!({"thinking": {"type": "disabled"}})).is_ok());
        assert!(with(json!({"thinking": {"type": "enabled", "budget_tokens": 2048}})).is_ok());
        let err = with(json!({"thinking": {"type": "enabled", "budget_tokens": 100}})).unwrap_err();
        assert!(err.contains("1024"), "{err}");
        let err = with(json!({"thinking": {"type": "enabled"}})).unwrap_err();
        assert!(err.contains("budget_tokens: Field required"), "{err}");
        let err = with(json!({"thinking": {"type": "sometimes"}})).unwrap_err();
        assert!(
            err.contains("'sometimes'") || err.contains("\"sometimes\""),
            "{err}"
        );
        assert!(err.contains("'adaptive'"), "{err}");
        assert!(with(json!({"thinking": {}})).is_err());
        let err = with(json!({"output_config": {"effort": "extreme"}})).unwrap_err();
        assert!(
            err.contains("output_config.effort") && err.contains("extreme"),
            "{err}"
        );
        for effort in ["low", "medium", "high", "max"] {
            assert!(
                with(json!({"output_config": {"effort": effort}})).is_ok(),
                "{effort}"
            );
        }
    }

    #[test]
    fn error_types() {
        assert_eq!(error_type(529), "overloaded_error");
        assert_eq!(error_type(503), "api_error");
        assert_eq!(error_type(413), "request_too_large");
        assert_eq!(error_type(418), "invalid_request_error");
    }
}
