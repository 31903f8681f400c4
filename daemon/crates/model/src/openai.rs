//! `openai:<model>`: Chat Completions with streaming and tool calls. Works
//! with OpenAI and with local servers that speak the same API (vLLM,
//! llama.cpp server, Ollama).
//!
//! The transcript stays in the canonical Anthropic-shaped blocks; this
//! module maps them to chat messages for each request (deterministically,
//! so the same history yields the same bytes and the provider's automatic
//! prefix cache keeps matching) and maps the streamed answer back.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::http::{self, ApiKey};
use super::sse::SseParser;
use super::{ModelError, ModelRequest, ModelResponse, StreamDelta};
use crate::domain::{Role, StopReason, Usage};

pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

#[derive(Debug, Clone)]
pub struct OpenAi {
    pub http: reqwest::Client,
    pub base_url: String,
    /// Optional: local servers usually need none.
    pub api_key: Option<ApiKey>,
    pub model: String,
    pub idle_timeout: Duration,
}

fn text_of(blocks: &Value) -> String {
    match blocks {
        Value::String(s) => s.clone(),
        Value::Array(items) => items
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// Canonical messages → chat messages.
fn chat_messages(req: &ModelRequest) -> Vec<Value> {
    let mut out = Vec::with_capacity(req.messages.len() + 1);
    let system: Value = serde_json::from_slice(&req.system_json).unwrap_or(Value::Null);
    let system = text_of(&system);
    if !system.is_empty() {
        out.push(json!({"role": "system", "content": system}));
    }
    for m in &req.messages {
        let blocks: Value = serde_json::from_slice(&m.content_json).unwrap_or(Value::Null);
        let blocks = blocks.as_array().cloned().unwrap_or_default();
        if m.role == Role::Assistant {
            let text: Vec<&str> = blocks
                .iter()
                .filter(|b| b["type"] == "text")
                .filter_map(|b| b["text"].as_str())
                .collect();
            let calls: Vec<Value> = blocks
                .iter()
                .filter(|b| b["type"] == "tool_use")
                .map(|b| {
                    json!({
                        "id": b["id"],
                        "type": "function",
                        "function": {"name": b["name"], "arguments": b["input"].to_string()},
                    })
                })
                .collect();
            let mut msg = Map::new();
            msg.insert("role".into(), json!("assistant"));
            msg.insert(
                "content".into(),
                if text.is_empty() {
                    Value::Null
                } else {
                    json!(text.join("\n"))
                },
            );
            if !calls.is_empty() {
                msg.insert("tool_calls".into(), Value::Array(calls));
            }
            out.push(Value::Object(msg));
        } else {
            // Tool results first: they must follow the assistant's calls.
            let mut text = Vec::new();
            for b in &blocks {
                match b["type"].as_str() {
                    Some("tool_result") => {
                        let mut content = text_of(&b["content"]);
                        if b["is_error"] == true {
                            content = format!("[tool error] {content}");
                        }
                        out.push(json!({
                            "role": "tool",
                            "tool_call_id": b["tool_use_id"],
                            "content": content,
                        }));
                    }
                    Some("text") => text.push(b["text"].as_str().unwrap_or_default().to_string()),
                    _ => {}
                }
            }
            if !text.is_empty() {
                out.push(json!({"role": "user", "content": text.join("\n")}));
            }
        }
    }
    out
}

/// Anthropic-shaped tool declarations → functions.
fn chat_tools(tools_json: &[u8]) -> Vec<Value> {
    let tools: Value = serde_json::from_slice(tools_json).unwrap_or(Value::Null);
    tools
        .as_array()
        .map(|ts| {
            ts.iter()
                .map(|t| {
                    json!({
                        "type": "function",
                        "function": {
                            "name": t["name"],
                            "description": t["description"],
                            "parameters": t["input_schema"],
                        },
                    })
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The exact request body for `req`.
pub fn request_body(req: &ModelRequest, model: &str) -> Vec<u8> {
    let mut body = Map::new();
    body.insert("model".into(), json!(model));
    body.insert("messages".into(), Value::Array(chat_messages(req)));
    let tools = chat_tools(&req.tools_json);
    if !tools.is_empty() {
        body.insert("tools".into(), Value::Array(tools));
    }
    body.insert("stream".into(), json!(true));
    body.insert("stream_options".into(), json!({"include_usage": true}));
    crate::domain::json_bytes(&Value::Object(body))
}

#[derive(Debug, Deserialize)]
struct Chunk {
    #[serde(default)]
    choices: Vec<Choice>,
    #[serde(default)]
    usage: Option<ChunkUsage>,
    #[serde(default)]
    error: Option<ChunkError>,
}

#[derive(Debug, Deserialize)]
struct Choice {
    #[serde(default)]
    delta: ChoiceDelta,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
struct ChoiceDelta {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    tool_calls: Vec<ToolCallDelta>,
}

#[derive(Debug, Deserialize)]
struct ToolCallDelta {
    #[serde(default)]
    index: usize,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<FunctionDelta>,
}

#[derive(Debug, Deserialize)]
struct FunctionDelta {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
}

#[derive(Debug, Deserialize)]
struct ChunkUsage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
    #[serde(default)]
    prompt_tokens_details: Option<PromptDetails>,
}

#[derive(Debug, Deserialize)]
struct PromptDetails {
    #[serde(default)]
    cached_tokens: u64,
}

#[derive(Debug, Deserialize)]
struct ChunkError {
    #[serde(default)]
    message: String,
    #[serde(rename = "type", default)]
    kind: Option<String>,
}

#[derive(Debug, Default)]
struct Call {
    id: String,
    name: String,
    arguments: String,
}

#[derive(Debug, Default)]
struct Assembly {
    text: String,
    calls: BTreeMap<usize, Call>,
    finish_reason: Option<String>,
    usage: Usage,
}

impl Assembly {
    fn apply(
        &mut self,
        data: &str,
        on_delta: &(dyn Fn(StreamDelta) + Send + Sync),
    ) -> Result<(), ModelError> {
        let chunk: Chunk = serde_json::from_str(data)
            .map_err(|e| ModelError::transient(format!("unreadable stream chunk: {e}")))?;
        if let Some(err) = chunk.error {
            let kind = err.kind.unwrap_or_default();
            let message = format!("openai stream error {kind}: {}", err.message);
            return Err(if kind == "invalid_request_error" {
                ModelError::Fatal(message)
            } else {
                ModelError::transient(message)
            });
        }
        for choice in chunk.choices {
            if let Some(text) = choice.delta.content.filter(|t| !t.is_empty()) {
                self.text.push_str(&text);
                on_delta(StreamDelta::Text { index: 0, text });
            }
            for tc in choice.delta.tool_calls {
                let call = self.calls.entry(tc.index).or_default();
                if let Some(id) = tc.id {
                    call.id = id;
                }
                if let Some(f) = tc.function {
                    if let Some(name) = f.name.filter(|n| !n.is_empty()) {
                        call.name.push_str(&name);
                        on_delta(StreamDelta::ToolUseStart {
                            index: 1 + tc.index as u32,
                            name,
                        });
                    }
                    if let Some(args) = f.arguments.filter(|a| !a.is_empty()) {
                        call.arguments.push_str(&args);
                        on_delta(StreamDelta::InputJson {
                            index: 1 + tc.index as u32,
                            json: args,
                        });
                    }
                }
            }
            if let Some(reason) = choice.finish_reason {
                self.finish_reason = Some(reason);
            }
        }
        if let Some(u) = chunk.usage {
            let cached = u.prompt_tokens_details.map_or(0, |d| d.cached_tokens);
            self.usage = Usage {
                input_tokens: u.prompt_tokens.saturating_sub(cached),
                output_tokens: u.completion_tokens,
                cache_read_input_tokens: cached,
                cache_creation_input_tokens: 0,
            };
        }
        Ok(())
    }

    fn finish(self) -> ModelResponse {
        let stop_reason = match self.finish_reason.as_deref() {
            Some("stop") => StopReason::EndTurn,
            Some("tool_calls" | "function_call") => StopReason::ToolUse,
            Some("length") => StopReason::MaxTokens,
            Some("content_filter") => StopReason::Refusal,
            _ if !self.calls.is_empty() => StopReason::ToolUse,
            _ => StopReason::EndTurn,
        };
        let truncated = stop_reason == StopReason::MaxTokens;
        let mut content = Vec::new();
        if !self.text.is_empty() {
            content.push(json!({"type": "text", "text": self.text}));
        }
        for (i, call) in self.calls {
            let input = if call.arguments.trim().is_empty() {
                json!({})
            } else {
                match serde_json::from_str::<Value>(&call.arguments) {
                    Ok(v) if v.is_object() => v,
                    _ if truncated => continue,
                    // Kept, so the model sees its own mistake in the tool error.
                    _ => json!({"_unparsed_arguments": call.arguments}),
                }
            };
            let id = if call.id.is_empty() {
                format!("call_{i}")
            } else {
                call.id
            };
            content.push(json!({"type": "tool_use", "id": id, "name": call.name, "input": input}));
        }
        ModelResponse {
            content,
            stop_reason,
            usage: self.usage,
        }
    }
}

impl OpenAi {
    pub async fn attempt(
        &self,
        req: &ModelRequest,
        on_delta: &(dyn Fn(StreamDelta) + Send + Sync),
    ) -> Result<ModelResponse, ModelError> {
        let url = format!("{}/chat/completions", self.base_url.trim_end_matches('/'));
        let mut request = self
            .http
            .post(&url)
            .header("content-type", "application/json")
            .header("accept", "text/event-stream")
            .body(request_body(req, &self.model));
        if let Some(key) = &self.api_key {
            request = request.header("authorization", key.prefixed_header_value("Bearer ")?);
        }
        let response = http::send(request, &url, "openai").await?;
        let mut body = http::BodyStream::new(response, self.idle_timeout);
        let mut parser = SseParser::default();
        let mut assembly = Assembly::default();
        let mut events = Vec::new();
        loop {
            let Some(chunk) = body.next().await? else {
                // Some servers end without [DONE] once the reason is given.
                if assembly.finish_reason.is_some() {
                    return Ok(assembly.finish());
                }
                return Err(ModelError::transient(
                    "the stream ended before [DONE]".to_string(),
                ));
            };
            parser.feed(&chunk, &mut events);
            for event in std::mem::take(&mut events) {
                if event.data.trim() == "[DONE]" {
                    return Ok(assembly.finish());
                }
                assembly.apply(&event.data, on_delta)?;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::MessageBytes;
    use crate::domain::Role;

    fn request() -> ModelRequest {
        let m = |role: &'static str, c: &str| MessageBytes {
            role: if role == "assistant" {
                Role::Assistant
            } else {
                Role::User
            },
            content_json: Arc::from(c.as_bytes()),
            cache_point: None,
        };
        ModelRequest {
            model: "openai:gpt".into(),
            system_json: Arc::from(&br#"[{"type":"text","text":"be brief"}]"#[..]),
            tools_json: Arc::from(
                &br#"[{"name":"Bash","description":"run","input_schema":{"type":"object"}}]"#[..],
            ),
            messages: vec![
                m("user", r#"[{"type":"text","text":"list"}]"#),
                m(
                    "assistant",
                    r#"[{"type":"text","text":"ok"},{"type":"tool_use","id":"call_1","name":"Bash","input":{"command":"ls"}}]"#,
                ),
                m(
                    "user",
                    r#"[{"type":"tool_result","tool_use_id":"call_1","content":"a.txt","is_error":true}]"#,
                ),
            ],
            max_tokens: 100,
        }
    }

    #[test]
    fn canonical_history_maps_to_chat_messages() {
        let body: Value = serde_json::from_slice(&request_body(&request(), "gpt-x")).unwrap();
        assert_eq!(body["model"], "gpt-x");
        assert_eq!(body["stream_options"]["include_usage"], true);
        assert_eq!(
            body["messages"][0],
            json!({"role":"system","content":"be brief"})
        );
        assert_eq!(body["messages"][1], json!({"role":"user","content":"list"}));
        assert_eq!(
            body["messages"][2],
            json!({"role":"assistant","content":"ok","tool_calls":[{"id":"call_1","type":"function","function":{"name":"Bash","arguments":"{\"command\":\"ls\"}"}}]})
        );
        assert_eq!(
            body["messages"][3],
            json!({"role":"tool","tool_call_id":"call_1","content":"[tool error] a.txt"})
        );
        assert_eq!(body["tools"][0]["function"]["name"], "Bash");
        assert_eq!(
            body["tools"][0]["function"]["parameters"],
            json!({"type":"object"})
        );
        // Deterministic: the same history, the same bytes.
        assert_eq!(
            request_body(&request(), "gpt-x"),
            request_body(&request(), "gpt-x")
        );
    }

    #[test]
    fn streamed_tool_calls_are_assembled_by_index_and_round_trip() {
        let sink = |_d: StreamDelta| {};
        let mut a = Assembly::default();
        for chunk in [
            json!({"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}),
            json!({"choices":[{"index":0,"delta":{"content":"Run"},"finish_reason":null}]}),
            json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"Bash","arguments":""}}]}}]}),
            json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"Read","arguments":"{\"file_"}}]}}]}),
            json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"command\":"}}]}}]}),
            json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"ls\"}"}}]}}]}),
            json!({"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"path\":\"x\"}"}}]}}]}),
            json!({"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}),
            json!({"choices":[],"usage":{"prompt_tokens":1000,"completion_tokens":20,"total_tokens":1020,"prompt_tokens_details":{"cached_tokens":768}}}),
        ] {
            a.apply(&chunk.to_string(), &sink).unwrap();
        }
        let r = a.finish();
        assert_eq!(r.stop_reason, StopReason::parse("tool_use"));
        assert_eq!(r.content[0], json!({"type":"text","text":"Run"}));
        assert_eq!(
            r.content[1],
            json!({"type":"tool_use","id":"call_a","name":"Bash","input":{"command":"ls"}})
        );
        assert_eq!(
            r.content[2],
            json!({"type":"tool_use","id":"call_b","name":"Read","input":{"file_path":"x"}})
        );
        assert_eq!(
            (
                r.usage.input_tokens,
                r.usage.cache_read_input_tokens,
                r.usage.output_tokens
            ),
            (232, 768, 20)
        );

        // And back: the assistant message maps to the same tool calls.
        let mut req = request();
        req.messages.truncate(1);
        req.messages.push(MessageBytes {
            role: Role::Assistant,
            content_json: Arc::from(serde_json::to_vec(&r.content).unwrap().as_slice()),
            cache_point: None,
        });
        let body: Value = serde_json::from_slice(&request_body(&req, "m")).unwrap();
        let calls = &body["messages"][2]["tool_calls"];
        assert_eq!(calls[0]["id"], "call_a");
        assert_eq!(calls[0]["function"]["arguments"], "{\"command\":\"ls\"}");
        assert_eq!(calls[1]["function"]["arguments"], "{\"file_path\":\"x\"}");
        assert_eq!(body["messages"][2]["content"], "Run");
    }
}
