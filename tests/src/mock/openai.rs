//! OpenAI Chat Completions: request checks, chunk rendering, error bodies.

use std::collections::HashSet;

use bytes::Bytes;
use serde_json::{Value, json};

use super::stream::{random_id, split_json, split_text};
use super::{Block, MockMessage};

/// OpenAI's `finish_reason` for an Anthropic stop reason.
pub fn finish_reason(stop_reason: &str) -> String {
    match stop_reason {
        "end_turn" | "stop_sequence" | "pause_turn" => "stop",
        "tool_use" => "tool_calls",
        "max_tokens" => "length",
        "refusal" => "content_filter",
        other => other,
    }
    .to_string()
}

/// `(type, code)` of OpenAI's error object for an HTTP status.
pub fn error_kind(status: u16) -> (&'static str, Option<&'static str>) {
    match status {
        401 => ("invalid_request_error", Some("invalid_api_key")),
        403 => ("permission_error", None),
        404 => ("invalid_request_error", Some("model_not_found")),
        429 => ("requests", Some("rate_limit_exceeded")),
        500..=599 => ("server_error", None),
        _ => ("invalid_request_error", None),
    }
}

/// `{"error":{"message","type","param","code"}}`.
pub fn error_body(status: u16, message: &str) -> Value {
    let (kind, code) = error_kind(status);
    json!({"error": {"message": message, "type": kind, "param": null, "code": code}})
}

/// The error object sent as a stream chunk.
pub fn error_chunk(error_type: &str, message: &str) -> Bytes {
    data(&json!({"error": {"message": message, "type": error_type, "param": null, "code": null}}))
}

fn data(v: &Value) -> Bytes {
    Bytes::from(format!("data: {v}\n\n"))
}

/// Token figures for the usage chunk.
pub struct Usage {
    pub prompt_tokens: u64,
    pub cached_tokens: u64,
}

/// Every chunk of a streamed completion, ending with `data: [DONE]`.
pub fn render(
    message: &MockMessage,
    model: &str,
    include_usage: bool,
    usage: &Usage,
) -> Vec<Bytes> {
    let id = format!("chatcmpl-{}", random_id(29));
    let created = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let chunk = |delta: Value, finish: Option<&str>| {
        let mut v = json!({
            "id": id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "system_fingerprint": "fp_mock",
            "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}],
        });
        if include_usage {
            v["usage"] = Value::Null;
        }
        data(&v)
    };
    let mut chunks = Vec::new();
    let has_text = message.content.iter().any(|b| matches!(b, Block::Text(_)));
    chunks.push(chunk(
        json!({"role": "assistant", "content": if has_text { json!("") } else { Value::Null }, "refusal": null}),
        None,
    ));
    let mut tool_index = 0usize;
    for block in &message.content {
        match block {
            Block::Text(text) => {
                for piece in split_text(text) {
                    chunks.push(chunk(json!({"content": piece}), None));
                }
            }
            Block::ToolUse { id, name, input } => {
                let id = if id.is_empty() {
                    format!("call_{}", random_id(24))
                } else {
                    id.clone()
                };
                chunks.push(chunk(
                    json!({"tool_calls": [{
                        "index": tool_index,
                        "id": id,
                        "type": "function",
                        "function": {"name": name, "arguments": ""},
                    }]}),
                    None,
                ));
                for piece in split_json(&input.to_string()) {
                    chunks.push(chunk(
                        json!({"tool_calls": [{"index": tool_index, "function": {"arguments": piece}}]}),
                        None,
                    ));
                }
                tool_index += 1;
            }
            Block::Thinking { .. } | Block::RedactedThinking { .. } => {}
        }
    }
    chunks.push(chunk(
        json!({}),
        Some(&finish_reason(&message.effective_stop_reason())),
    ));
    if include_usage {
        let completion = message.text_and_call_tokens();
        chunks.push(data(&json!({
            "id": id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "system_fingerprint": "fp_mock",
            "choices": [],
            "usage": {
                "prompt_tokens": usage.prompt_tokens,
                "completion_tokens": completion,
                "total_tokens": usage.prompt_tokens + completion,
                "prompt_tokens_details": {"cached_tokens": usage.cached_tokens, "audio_tokens": 0},
                "completion_tokens_details": {
                    "reasoning_tokens": 0,
                    "audio_tokens": 0,
                    "accepted_prediction_tokens": 0,
                    "rejected_prediction_tokens": 0,
                },
            },
        })));
    }
    chunks.push(Bytes::from_static(b"data: [DONE]\n\n"));
    chunks
}

/// Shape checks the real API makes; the error is an
/// `invalid_request_error` message.
pub fn validate(body: &Value) -> Result<(), String> {
    let Some(obj) = body.as_object() else {
        return Err("We could not parse the JSON body of your request.".into());
    };
    if !obj.get("model").is_some_and(Value::is_string) {
        return Err("you must provide a model parameter".into());
    }
    let Some(messages) = obj.get("messages").and_then(Value::as_array) else {
        return Err("Missing required parameter: 'messages'.".into());
    };
    if messages.is_empty() {
        return Err("Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.".into());
    }
    if let Some(tools) = obj.get("tools") {
        let Some(tools) = tools.as_array() else {
            return Err("Invalid type for 'tools': expected an array.".into());
        };
        for (i, t) in tools.iter().enumerate() {
            if t.get("type").and_then(Value::as_str) != Some("function")
                || !t.pointer("/function/name").is_some_and(Value::is_string)
            {
                return Err(format!(
                    "Invalid 'tools[{i}]': expected {{\"type\": \"function\", \"function\": {{\"name\": ...}}}}."
                ));
            }
        }
    }
    // Tool calls awaiting their `tool` messages.
    let mut pending: Vec<String> = Vec::new();
    let mut answerable: HashSet<String> = HashSet::new();
    for (m, message) in messages.iter().enumerate() {
        let role = message.get("role").and_then(Value::as_str).unwrap_or("");
        if role != "tool" && !pending.is_empty() {
            return Err(format!(
                "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: {}",
                pending.join(", ")
            ));
        }
        match role {
            "system" | "developer" | "user" => {
                answerable.clear();
                if !message
                    .get("content")
                    .is_some_and(|c| c.is_string() || c.is_array())
                {
                    return Err(format!("Invalid value for 'messages[{m}].content'."));
                }
            }
            "assistant" => {
                answerable.clear();
                let calls = message.get("tool_calls").and_then(Value::as_array);
                let content = message.get("content");
                let has_content = content.is_some_and(|c| !c.is_null());
                if !has_content && calls.is_none_or(Vec::is_empty) {
                    return Err(format!(
                        "Invalid value for 'messages[{m}].content': expected a string, got null."
                    ));
                }
                for (i, call) in calls.into_iter().flatten().enumerate() {
                    let id = call.get("id").and_then(Value::as_str).unwrap_or("");
                    if id.is_empty()
                        || call.get("type").and_then(Value::as_str) != Some("function")
                        || !call.pointer("/function/name").is_some_and(Value::is_string)
                        || !call
                            .pointer("/function/arguments")
                            .is_some_and(Value::is_string)
                    {
                        return Err(format!(
                            "Invalid 'messages[{m}].tool_calls[{i}]': expected id, type 'function', function.name and function.arguments (a string)."
                        ));
                    }
                    pending.push(id.to_string());
                    answerable.insert(id.to_string());
                }
            }
            "tool" => {
                let id = message
                    .get("tool_call_id")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                if !answerable.contains(id) {
                    return Err(format!(
                        "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'. (messages[{m}], tool_call_id {id:?})"
                    ));
                }
                pending.retain(|p| p != id);
            }
            other => {
                return Err(format!(
                    "Invalid value: '{other}'. Supported values are: 'system', 'assistant', 'user', 'tool', 'function', and 'developer'."
                ));
            }
        }
    }
    if !pending.is_empty() {
        return Err(format!(
            "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: {}",
            pending.join(", ")
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validation() {
        let ok = |messages: Value| validate(&json!({"model": "gpt", "messages": messages}));
        assert!(ok(json!([{"role": "user", "content": "hi"}])).is_ok());
        let call = json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "Bash", "arguments": "{}"}},
        ]});
        let answer = |id: &str| json!({"role": "tool", "tool_call_id": id, "content": "ok"});
        let user = json!({"role": "user", "content": "go"});
        assert!(
            ok(json!([user, call, answer("call_1"), {"role": "user", "content": "next"}])).is_ok()
        );
        assert!(ok(json!([user, call])).is_err());
        assert!(ok(json!([user, call, user])).is_err());
        assert!(ok(json!([user, answer("call_1")])).is_err());
        assert!(ok(json!([user, call, answer("call_2")])).is_err());
        assert!(ok(json!([])).is_err());
        assert!(ok(json!([{"role": "wizard", "content": "x"}])).is_err());
    }

    #[test]
    fn finish_reasons() {
        assert_eq!(finish_reason("end_turn"), "stop");
        assert_eq!(finish_reason("tool_use"), "tool_calls");
        assert_eq!(finish_reason("max_tokens"), "length");
        assert_eq!(finish_reason("refusal"), "content_filter");
    }
}
