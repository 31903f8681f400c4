//! Google's Gemini API (Generative Language API, `v1beta`), as Gemini CLI
//! calls it: `POST /v1beta/models/{model}:streamGenerateContent?alt=sse`
//! (one `GenerateContentResponse` per server-sent event) and
//! `POST /v1beta/models/{model}:generateContent` (one JSON response), keyed
//! by the `x-goog-api-key` header. Request checks, rendering, error bodies.
//!
//! A mock message renders as the API answers: text in pieces, each function
//! call whole in its own response (`functionCall {name, args}`), and the
//! last response with `finishReason` and `usageMetadata`. Thinking blocks
//! are not rendered (the API sends thoughts only when asked to).

use bytes::Bytes;
use serde_json::{Value, json};

use super::cache::tokens_of;
use super::stream::{random_id, split_text};
use super::{Block, MockMessage};

/// Which of the two methods a path calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    Stream,
    Unary,
}

/// The model and method of a `/v1beta/models/{model}:{method}` path; None
/// for any other path.
pub fn parse_path(path: &str) -> Option<(&str, Method)> {
    let rest = path
        .strip_prefix("/v1beta/models/")
        .or_else(|| path.strip_prefix("/v1/models/"))?;
    let (model, method) = rest.split_once(':')?;
    if model.is_empty() || model.contains('/') {
        return None;
    }
    match method {
        "streamGenerateContent" => Some((model, Method::Stream)),
        "generateContent" => Some((model, Method::Unary)),
        _ => None,
    }
}

/// The canonical status name of an HTTP status, as Google's errors carry it.
fn status_name(status: u16) -> &'static str {
    match status {
        400 => "INVALID_ARGUMENT",
        401 => "UNAUTHENTICATED",
        403 => "PERMISSION_DENIED",
        404 => "NOT_FOUND",
        429 => "RESOURCE_EXHAUSTED",
        503 => "UNAVAILABLE",
        504 => "DEADLINE_EXCEEDED",
        500..=599 => "INTERNAL",
        _ => "FAILED_PRECONDITION",
    }
}

/// `{"error": {"code", "message", "status"}}`.
pub fn error_body(status: u16, message: &str) -> Value {
    json!({"error": {"code": status, "message": message, "status": status_name(status)}})
}

/// An error sent as a stream event.
pub fn error_chunk(error_type: &str, message: &str) -> Bytes {
    data(&json!({"error": {"code": 500, "message": message, "status": error_type}}))
}

fn data(v: &Value) -> Bytes {
    Bytes::from(format!("data: {v}\r\n\r\n"))
}

/// Gemini's `finishReason` for an Anthropic stop reason.
pub fn finish_reason(stop_reason: &str) -> &'static str {
    match stop_reason {
        "max_tokens" => "MAX_TOKENS",
        "refusal" => "SAFETY",
        _ => "STOP",
    }
}

/// The parts of `message`, each as its own response would carry it.
fn parts(message: &MockMessage) -> Vec<Value> {
    let mut out = Vec::new();
    for block in &message.content {
        match block {
            Block::Text(text) => {
                out.extend(split_text(text).into_iter().map(|t| json!({"text": t})));
            }
            Block::ToolUse { id, name, input } => {
                let mut call = json!({"name": name, "args": input});
                if !id.is_empty() {
                    call["id"] = json!(id);
                }
                out.push(json!({"functionCall": call}));
            }
            Block::Thinking { .. } | Block::RedactedThinking { .. } => {}
        }
    }
    out
}

fn usage(prompt_tokens: u64, message: &MockMessage) -> Value {
    let out = message.text_and_call_tokens();
    json!({
        "promptTokenCount": prompt_tokens,
        "candidatesTokenCount": out,
        "totalTokenCount": prompt_tokens + out,
    })
}

fn response(parts: Vec<Value>, finish: Option<&str>, model: &str, id: &str) -> Value {
    let mut candidate = json!({"content": {"parts": parts, "role": "model"}, "index": 0});
    if let Some(f) = finish {
        candidate["finishReason"] = json!(f);
    }
    json!({"candidates": [candidate], "modelVersion": model, "responseId": id})
}

/// The events of a streamed answer.
pub fn render_stream(message: &MockMessage, model: &str, prompt_tokens: u64) -> Vec<Bytes> {
    let id = random_id(22);
    let finish = finish_reason(&message.effective_stop_reason());
    let parts = parts(message);
    let last = parts.len().saturating_sub(1);
    let mut events: Vec<Value> = parts
        .into_iter()
        .enumerate()
        .map(|(i, p)| response(vec![p], (i == last).then_some(finish), model, &id))
        .collect();
    if events.is_empty() {
        events.push(response(
            vec![json!({"text": ""})],
            Some(finish),
            model,
            &id,
        ));
    }
    if let Some(end) = events.last_mut() {
        end["usageMetadata"] = usage(prompt_tokens, message);
    }
    events.iter().map(data).collect()
}

/// The whole answer as one response.
pub fn render_unary(message: &MockMessage, model: &str, prompt_tokens: u64) -> Value {
    let mut parts = parts(message);
    // Text pieces join again into one part each run of text.
    parts.dedup_by(|b, a| match (a.get("text"), b.get("text")) {
        (Some(x), Some(y)) => {
            a["text"] = json!(format!(
                "{}{}",
                x.as_str().unwrap_or(""),
                y.as_str().unwrap_or("")
            ));
            true
        }
        _ => false,
    });
    let finish = finish_reason(&message.effective_stop_reason());
    let mut v = response(parts, Some(finish), model, &random_id(22));
    v["usageMetadata"] = usage(prompt_tokens, message);
    v
}

/// Input tokens of a request (its contents, system instruction and tools).
pub fn prompt_tokens(body: &Value) -> u64 {
    let len = ["contents", "systemInstruction", "tools"]
        .iter()
        .map(|k| body.get(*k).map_or(0, |v| v.to_string().len()))
        .sum();
    tokens_of(len).max(1)
}

/// Shape checks the real API makes; the error is an INVALID_ARGUMENT
/// message.
pub fn validate(body: &Value) -> Result<(), String> {
    let Some(contents) = body.get("contents").and_then(Value::as_array) else {
        return Err("* GenerateContentRequest.contents: contents is not specified".into());
    };
    if contents.is_empty() {
        return Err("* GenerateContentRequest.contents: contents is not specified".into());
    }
    let mut calls_open = 0usize;
    for (i, content) in contents.iter().enumerate() {
        let role = content
            .get("role")
            .and_then(Value::as_str)
            .unwrap_or("user");
        if role != "user" && role != "model" {
            return Err(format!(
                "* GenerateContentRequest.contents[{i}].role: Please use a valid role: user, model."
            ));
        }
        let Some(parts) = content.get("parts").and_then(Value::as_array) else {
            return Err(format!(
                "* GenerateContentRequest.contents[{i}].parts: contents.parts must not be empty."
            ));
        };
        if parts.is_empty() {
            return Err(format!(
                "* GenerateContentRequest.contents[{i}].parts: contents.parts must not be empty."
            ));
        }
        let has = |key: &str| parts.iter().filter(|p| p.get(key).is_some()).count();
        let (calls, answers) = (has("functionCall"), has("functionResponse"));
        if answers > 0 && (role != "user" || calls_open == 0) {
            return Err(format!(
                "Please ensure that function response turn comes immediately after a function call turn. (contents[{i}])"
            ));
        }
        if role == "model" && calls > 0 && calls_open > 0 {
            return Err(format!(
                "Please ensure that function call turn comes immediately after a user turn or after a function response turn. (contents[{i}])"
            ));
        }
        if answers > 0 && answers != calls_open {
            return Err(format!(
                "Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn. (contents[{i}])"
            ));
        }
        calls_open = if role == "model" { calls } else { 0 };
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths() {
        assert_eq!(
            parse_path("/v1beta/models/gemini-x:streamGenerateContent"),
            Some(("gemini-x", Method::Stream))
        );
        assert_eq!(
            parse_path("/v1beta/models/gemini-x:generateContent"),
            Some(("gemini-x", Method::Unary))
        );
        assert_eq!(parse_path("/v1beta/models/gemini-x:countTokens"), None);
        assert_eq!(parse_path("/v1/messages"), None);
    }

    #[test]
    fn validation() {
        let ok = |contents: Value| validate(&json!({"contents": contents}));
        let user = json!({"role": "user", "parts": [{"text": "go"}]});
        let call =
            json!({"role": "model", "parts": [{"functionCall": {"name": "ls", "args": {}}}]});
        let answer = json!({"role": "user", "parts": [{"functionResponse": {"name": "ls", "response": {}}}]});
        assert!(ok(json!([user])).is_ok());
        assert!(ok(json!([user, call, answer, user])).is_ok());
        assert!(ok(json!([user, answer])).is_err());
        assert!(ok(json!([])).is_err());
        assert!(ok(json!([{"role": "wizard", "parts": [{"text": "x"}]}])).is_err());
        assert!(ok(json!([{"role": "user", "parts": []}])).is_err());
    }

    #[test]
    fn a_call_renders_whole_and_the_last_event_ends_the_answer() {
        let m = MockMessage::new()
            .with(Block::text("looking"))
            .with(Block::tool(
                "",
                "run_shell_command",
                json!({"command": "ls"}),
            ));
        let events = render_stream(&m, "gemini-x", 10);
        let last = String::from_utf8(events.last().unwrap().to_vec()).unwrap();
        let v: Value = serde_json::from_str(last.trim().strip_prefix("data: ").unwrap()).unwrap();
        assert_eq!(
            v["candidates"][0]["content"]["parts"][0]["functionCall"]["args"]["command"],
            "ls"
        );
        assert_eq!(v["candidates"][0]["finishReason"], "STOP");
        assert_eq!(v["usageMetadata"]["promptTokenCount"], 10);
        let unary = render_unary(&MockMessage::text("hello there"), "gemini-x", 5);
        assert_eq!(
            unary["candidates"][0]["content"]["parts"],
            json!([{"text": "hello there"}])
        );
    }
}
