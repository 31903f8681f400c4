//! `anthropic:<model>`: the Messages API with SSE streaming and prompt
//! caching (DESIGN §6, §10).
//!
//! The request body is assembled from stored bytes — the system prompt as
//! rendered once, the tools array as serialized once, each message as
//! stored — so the same history always yields the same bytes. Cache
//! breakpoints are spliced in as a constant marker at the end of the last
//! system block and of the newest message's last block; every other byte of
//! turn N's body reappears unchanged in turn N+1's.

use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};

use super::http::{self, ApiKey};
use super::sse::{SseEvent, SseParser};
use super::{ModelError, ModelRequest, ModelResponse, StreamDelta};
use crate::domain::{StopReason, Usage};

/// The Messages API version this client speaks.
pub const API_VERSION: &str = "2023-06-01";
/// The public endpoint.
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";

/// How long a prompt-cache entry lives (Anthropic offers 5 minutes and 1 hour).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
pub enum CacheTtl {
    #[default]
    #[serde(rename = "5m")]
    FiveMinutes,
    #[serde(rename = "1h")]
    OneHour,
}

impl CacheTtl {
    /// The bytes spliced into a block to make it a cache breakpoint.
    pub fn marker(self) -> &'static [u8] {
        match self {
            CacheTtl::FiveMinutes => br#","cache_control":{"type":"ephemeral"}"#,
            CacheTtl::OneHour => br#","cache_control":{"type":"ephemeral","ttl":"1h"}"#,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Anthropic {
    pub http: reqwest::Client,
    pub base_url: String,
    pub api_key: ApiKey,
    pub model: String,
    pub cache_ttl: CacheTtl,
    pub idle_timeout: Duration,
}

/// Returns `blocks` (a JSON array of objects, compact) with `marker` spliced
/// in before the closing brace of its last object. Anything else is
/// returned unchanged: no breakpoint rather than a malformed body.
pub fn with_breakpoint(blocks: &[u8], marker: &[u8]) -> Vec<u8> {
    let trimmed = blocks.trim_ascii_end();
    if trimmed.len() >= 2 && trimmed.ends_with(b"}]") {
        let at = trimmed.len() - 2;
        let mut out = Vec::with_capacity(blocks.len() + marker.len());
        out.extend_from_slice(&trimmed[..at]);
        out.extend_from_slice(marker);
        out.extend_from_slice(b"}]");
        out
    } else {
        blocks.to_vec()
    }
}

/// Inner cache points honoured per request, besides the system's and the
/// last message's breakpoints.
const MAX_INNER_BREAKPOINTS: usize = 2;

/// Returns `content` with `marker` spliced in at `offset`, which must be a
/// block's closing brace; anything else leaves it unchanged.
fn with_breakpoint_at(content: &[u8], offset: usize, marker: &[u8]) -> Vec<u8> {
    if content.get(offset) != Some(&b'}') {
        return content.to_vec();
    }
    let mut out = Vec::with_capacity(content.len() + marker.len());
    out.extend_from_slice(&content[..offset]);
    out.extend_from_slice(marker);
    out.extend_from_slice(&content[offset..]);
    out
}

/// The exact request body for `req`. Breakpoints: the last system block,
/// the newest message's last block, and the two newest inner cache points
/// (a fork's last placeholder, and where its parent's newest request
/// ended): four at most, Anthropic's limit.
pub fn request_body(req: &ModelRequest, model: &str, ttl: CacheTtl) -> Vec<u8> {
    let marker = ttl.marker();
    let size = req.system_json.len()
        + req.tools_json.len()
        + req
            .messages
            .iter()
            .map(|m| m.content_json.len() + 32)
            .sum::<usize>()
        + 256;
    let mut b = Vec::with_capacity(size);
    b.extend_from_slice(br#"{"model":"#);
    b.extend_from_slice(json!(model).to_string().as_bytes());
    b.extend_from_slice(br#","max_tokens":"#);
    b.extend_from_slice(req.max_tokens.to_string().as_bytes());
    b.extend_from_slice(br#","stream":true,"system":"#);
    b.extend_from_slice(&with_breakpoint(&req.system_json, marker));
    b.extend_from_slice(br#","tools":"#);
    b.extend_from_slice(&req.tools_json);
    b.extend_from_slice(br#","messages":["#);
    let last = req.messages.len().saturating_sub(1);
    let inner: Vec<usize> = req
        .messages
        .iter()
        .enumerate()
        .rev()
        .filter(|(_, m)| m.cache_point.is_some())
        .map(|(i, _)| i)
        .take(MAX_INNER_BREAKPOINTS)
        .collect();
    for (i, m) in req.messages.iter().enumerate() {
        if i > 0 {
            b.push(b',');
        }
        b.extend_from_slice(br#"{"role":""#);
        b.extend_from_slice(m.role.as_str().as_bytes());
        b.extend_from_slice(br#"","content":"#);
        let content = match m.cache_point {
            // At the last message's last block, the usual breakpoint is it.
            Some(at) if inner.contains(&i) && !(i == last && m.content_json.len() == at + 2) => {
                std::borrow::Cow::Owned(with_breakpoint_at(&m.content_json, at, marker))
            }
            _ => std::borrow::Cow::Borrowed(&m.content_json[..]),
        };
        if i == last {
            b.extend_from_slice(&with_breakpoint(&content, marker));
        } else {
            b.extend_from_slice(&content);
        }
        b.push(b'}');
    }
    b.extend_from_slice(b"]}");
    b
}

impl Anthropic {
    /// One call: send, stream, assemble. Errors say whether a retry may help.
    pub async fn attempt(
        &self,
        req: &ModelRequest,
        on_delta: &(dyn Fn(StreamDelta) + Send + Sync),
    ) -> Result<ModelResponse, ModelError> {
        let body = request_body(req, &self.model, self.cache_ttl);
        let url = format!("{}/v1/messages", self.base_url.trim_end_matches('/'));
        let request = self
            .http
            .post(&url)
            .header("x-api-key", self.api_key.header_value()?)
            .header("anthropic-version", API_VERSION)
            .header("content-type", "application/json")
            .header("accept", "text/event-stream")
            .body(body);
        let response = http::send(request, &url, "anthropic").await?;
        let mut body = http::BodyStream::new(response, self.idle_timeout);
        let mut parser = SseParser::default();
        let mut assembly = Assembly::default();
        let mut events = Vec::new();
        loop {
            let Some(chunk) = body.next().await? else {
                return Err(ModelError::transient(
                    "the stream ended before message_stop".to_string(),
                ));
            };
            parser.feed(&chunk, &mut events);
            for event in events.drain(..) {
                if let Some(done) = assembly.apply(&event, on_delta)? {
                    return Ok(done);
                }
            }
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Event {
    MessageStart {
        message: MessageStart,
    },
    ContentBlockStart {
        index: usize,
        content_block: Value,
    },
    ContentBlockDelta {
        index: usize,
        delta: Delta,
    },
    ContentBlockStop {
        #[allow(dead_code)]
        index: usize,
    },
    MessageDelta {
        delta: MessageDeltaBody,
        #[serde(default)]
        usage: Option<UsageFields>,
    },
    MessageStop,
    Ping,
    Error {
        error: ErrorBody,
    },
    #[serde(other)]
    Unknown,
}

#[derive(Debug, Deserialize)]
struct MessageStart {
    #[serde(default)]
    usage: Option<UsageFields>,
}

#[derive(Debug, Deserialize)]
#[serde(tag = "type")]
enum Delta {
    #[serde(rename = "text_delta")]
    Text { text: String },
    #[serde(rename = "input_json_delta")]
    InputJson { partial_json: String },
    #[serde(rename = "thinking_delta")]
    Thinking { thinking: String },
    #[serde(rename = "signature_delta")]
    Signature { signature: String },
    #[serde(other)]
    Unknown,
}

#[derive(Debug, Deserialize)]
struct MessageDeltaBody {
    #[serde(default)]
    stop_reason: Option<String>,
}

/// Usage fields; each may be absent from a given event.
#[derive(Debug, Default, Deserialize)]
struct UsageFields {
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    cache_read_input_tokens: Option<u64>,
    cache_creation_input_tokens: Option<u64>,
}

#[derive(Debug, Deserialize)]
pub(super) struct ErrorBody {
    #[serde(rename = "type", default)]
    pub kind: String,
    #[serde(default)]
    pub message: String,
}

/// A content block being assembled from its deltas.
#[derive(Debug)]
enum Building {
    Text(String),
    ToolUse {
        id: String,
        name: String,
        json: String,
    },
    Thinking {
        thinking: String,
        signature: String,
    },
    /// Redacted thinking and unknown block types: kept as received.
    Verbatim(Value),
}

/// The response being assembled: blocks, usage, stop reason.
#[derive(Debug, Default)]
struct Assembly {
    blocks: Vec<Option<Building>>,
    usage: Usage,
    stop_reason: Option<String>,
    started: bool,
}

impl Assembly {
    fn merge_usage(&mut self, u: &UsageFields) {
        if let Some(v) = u.input_tokens {
            self.usage.input_tokens = v;
        }
        if let Some(v) = u.output_tokens {
            self.usage.output_tokens = v;
        }
        if let Some(v) = u.cache_read_input_tokens {
            self.usage.cache_read_input_tokens = v;
        }
        if let Some(v) = u.cache_creation_input_tokens {
            self.usage.cache_creation_input_tokens = v;
        }
    }

    fn block(&mut self, index: usize) -> Result<&mut Building, ModelError> {
        self.blocks
            .get_mut(index)
            .and_then(Option::as_mut)
            .ok_or_else(|| {
                ModelError::transient(format!("delta for unknown content block {index}"))
            })
    }

    /// Applies one event; returns the response when the message is complete.
    fn apply(
        &mut self,
        event: &SseEvent,
        on_delta: &(dyn Fn(StreamDelta) + Send + Sync),
    ) -> Result<Option<ModelResponse>, ModelError> {
        let parsed: Event = serde_json::from_str(&event.data)
            .map_err(|e| ModelError::transient(format!("unreadable {} event: {e}", event.event)))?;
        match parsed {
            Event::MessageStart { message } => {
                self.started = true;
                if let Some(u) = message.usage {
                    self.merge_usage(&u);
                }
            }
            Event::ContentBlockStart {
                index,
                content_block,
            } => {
                let building = match content_block["type"].as_str() {
                    Some("text") => {
                        let text = content_block["text"]
                            .as_str()
                            .unwrap_or_default()
                            .to_string();
                        Building::Text(text)
                    }
                    Some("tool_use") => {
                        let name = content_block["name"]
                            .as_str()
                            .unwrap_or_default()
                            .to_string();
                        on_delta(StreamDelta::ToolUseStart {
                            index: index as u32,
                            name: name.clone(),
                        });
                        Building::ToolUse {
                            id: content_block["id"].as_str().unwrap_or_default().to_string(),
                            name,
                            json: String::new(),
                        }
                    }
                    Some("thinking") => Building::Thinking {
                        thinking: content_block["thinking"]
                            .as_str()
                            .unwrap_or_default()
                            .to_string(),
                        signature: content_block["signature"]
                            .as_str()
                            .unwrap_or_default()
                            .to_string(),
                    },
                    _ => Building::Verbatim(content_block),
                };
                if self.blocks.len() <= index {
                    self.blocks.resize_with(index + 1, || None);
                }
                self.blocks[index] = Some(building);
            }
            Event::ContentBlockDelta { index, delta } => {
                let i = index as u32;
                match (self.block(index)?, delta) {
                    (Building::Text(t), Delta::Text { text }) => {
                        t.push_str(&text);
                        on_delta(StreamDelta::Text { index: i, text });
                    }
                    (Building::ToolUse { json, .. }, Delta::InputJson { partial_json }) => {
                        json.push_str(&partial_json);
                        on_delta(StreamDelta::InputJson {
                            index: i,
                            json: partial_json,
                        });
                    }
                    (Building::Thinking { thinking, .. }, Delta::Thinking { thinking: more }) => {
                        thinking.push_str(&more);
                        on_delta(StreamDelta::Thinking {
                            index: i,
                            thinking: more,
                        });
                    }
                    (Building::Thinking { signature, .. }, Delta::Signature { signature: s }) => {
                        signature.push_str(&s);
                    }
                    // Citations and future delta kinds: nothing to assemble.
                    (_, Delta::Unknown) => {}
                    (_, other) => {
                        return Err(ModelError::transient(format!(
                            "delta {other:?} does not fit content block {index}"
                        )));
                    }
                }
            }
            Event::ContentBlockStop { .. } | Event::Ping | Event::Unknown => {}
            Event::MessageDelta { delta, usage } => {
                if let Some(reason) = delta.stop_reason {
                    self.stop_reason = Some(reason);
                }
                if let Some(u) = usage {
                    self.merge_usage(&u);
                }
            }
            Event::Error { error } => {
                let message = format!("anthropic stream error {}: {}", error.kind, error.message);
                return Err(match error.kind.as_str() {
                    "overloaded_error" | "api_error" | "rate_limit_error" | "timeout_error" => {
                        ModelError::transient(message)
                    }
                    _ => ModelError::Fatal(message),
                });
            }
            Event::MessageStop => {
                if !self.started {
                    return Err(ModelError::transient(
                        "message_stop before message_start".into(),
                    ));
                }
                return self.finish().map(Some);
            }
        }
        Ok(None)
    }

    fn finish(&mut self) -> Result<ModelResponse, ModelError> {
        let stop_reason = self
            .stop_reason
            .take()
            .map_or(StopReason::EndTurn, |s| StopReason::parse(&s));
        let truncated = stop_reason == StopReason::MaxTokens;
        let mut content = Vec::with_capacity(self.blocks.len());
        for block in self.blocks.drain(..).flatten() {
            content.push(match block {
                Building::Text(text) => json!({"type": "text", "text": text}),
                Building::ToolUse { id, name, json } => {
                    let input: Value = if json.trim().is_empty() {
                        json!({})
                    } else {
                        match serde_json::from_str(&json) {
                            Ok(v) => v,
                            // Cut off by max_tokens: the call is incomplete, drop it.
                            Err(_) if truncated => continue,
                            Err(e) => {
                                return Err(ModelError::transient(format!(
                                    "tool_use {name} arrived with malformed input JSON: {e}"
                                )));
                            }
                        }
                    };
                    json!({"type": "tool_use", "id": id, "name": name, "input": input})
                }
                Building::Thinking {
                    thinking,
                    signature,
                } => json!({"type": "thinking", "thinking": thinking, "signature": signature}),
                Building::Verbatim(v) => v,
            });
        }
        Ok(ModelResponse {
            content,
            stop_reason,
            usage: self.usage,
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;
    use crate::MessageBytes;
    use crate::domain::Role;

    fn msg(role: &'static str, content: &str) -> MessageBytes {
        MessageBytes {
            role: if role == "assistant" {
                Role::Assistant
            } else {
                Role::User
            },
            content_json: Arc::from(content.as_bytes()),
            cache_point: None,
        }
    }

    fn request(messages: Vec<MessageBytes>) -> ModelRequest {
        ModelRequest {
            model: "anthropic:m".into(),
            system_json: Arc::from(&br#"[{"type":"text","text":"sys"}]"#[..]),
            tools_json: Arc::from(&br#"[{"name":"Bash"}]"#[..]),
            messages,
            max_tokens: 100,
        }
    }

    #[test]
    fn body_is_assembled_from_stored_bytes_with_two_breakpoints() {
        let req = request(vec![
            msg("user", r#"[{"type":"text","text":"hi"}]"#),
            msg("assistant", r#"[{"type":"text","text":"yo"}]"#),
            msg("user", r#"[{"type":"text","text":"more"}]"#),
        ]);
        let body =
            String::from_utf8(request_body(&req, "claude-x", CacheTtl::FiveMinutes)).unwrap();
        assert_eq!(
            body,
            r#"{"model":"claude-x","max_tokens":100,"stream":true,"system":[{"type":"text","text":"sys","cache_control":{"type":"ephemeral"}}],"tools":[{"name":"Bash"}],"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]},{"role":"assistant","content":[{"type":"text","text":"yo"}]},{"role":"user","content":[{"type":"text","text":"more","cache_control":{"type":"ephemeral"}}]}]}"#
        );
        let v: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(
            v["messages"][2]["content"][0]["cache_control"]["type"],
            "ephemeral"
        );
        let one_hour =
            String::from_utf8(request_body(&req, "claude-x", CacheTtl::OneHour)).unwrap();
        assert!(one_hour.contains(r#""cache_control":{"type":"ephemeral","ttl":"1h"}"#));
    }

    #[test]
    fn next_turn_body_keeps_the_previous_messages_byte_for_byte() {
        let marker = std::str::from_utf8(CacheTtl::FiveMinutes.marker()).unwrap();
        let mut messages = vec![msg("user", r#"[{"type":"text","text":"hi"}]"#)];
        let first = String::from_utf8(request_body(
            &request(messages.clone()),
            "m",
            CacheTtl::FiveMinutes,
        ))
        .unwrap();
        messages.push(msg(
            "assistant",
            r#"[{"type":"tool_use","id":"t1","name":"Bash","input":{}}]"#,
        ));
        messages.push(msg(
            "user",
            r#"[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]"#,
        ));
        let second =
            String::from_utf8(request_body(&request(messages), "m", CacheTtl::FiveMinutes))
                .unwrap();
        // Without the one moving marker, the first body minus its closing
        // "]}" is a prefix of the second.
        let first_plain = first.replace(marker, "");
        let prefix = &first_plain[..first_plain.len() - 2];
        assert!(second.replace(marker, "").starts_with(prefix));
        assert_eq!(second.matches(marker).count(), 2);
    }

    #[test]
    fn inner_cache_points_add_breakpoints_up_to_four_and_never_twice_on_a_block() {
        let marker = std::str::from_utf8(CacheTtl::FiveMinutes.marker()).unwrap();
        let at = |m: MessageBytes, p: usize| MessageBytes {
            cache_point: Some(p),
            ..m
        };
        let first = r#"[{"type":"text","text":"hi"}]"#;
        let calls = r#"[{"type":"tool_use","id":"t1","name":"Agent","input":{}}]"#;
        let own = r#"[{"type":"tool_result","tool_use_id":"t1","content":"P"},{"type":"text","text":"d"}]"#;
        let placeholder_end = own.find("},").unwrap();
        // An old point, the parent's boundary, and the fork's placeholder:
        // only the two newest count.
        let req = request(vec![
            at(msg("user", first), first.len() - 2),
            msg("assistant", calls),
            at(msg("user", first), first.len() - 2),
            msg("assistant", calls.replace("t1", "t2").as_str()),
            at(
                msg("user", own.replace("t1", "t2").as_str()),
                placeholder_end,
            ),
        ]);
        let body = String::from_utf8(request_body(&req, "m", CacheTtl::FiveMinutes)).unwrap();
        let v: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(body.matches(marker).count(), 4);
        assert!(
            v["messages"][0]["content"][0]
                .get("cache_control")
                .is_none()
        );
        assert!(
            v["messages"][2]["content"][0]
                .get("cache_control")
                .is_some()
        );
        assert!(
            v["messages"][4]["content"][0]
                .get("cache_control")
                .is_some()
        );
        assert!(
            v["messages"][4]["content"][1]
                .get("cache_control")
                .is_some()
        );

        // A point at the last message's last block is the usual breakpoint,
        // not a second marker on the same block.
        let req = request(vec![at(msg("user", first), first.len() - 2)]);
        let body = String::from_utf8(request_body(&req, "m", CacheTtl::FiveMinutes)).unwrap();
        serde_json::from_str::<Value>(&body).unwrap();
        assert_eq!(body.matches(marker).count(), 2);
    }

    #[test]
    fn breakpoint_is_not_spliced_into_what_is_not_an_array_of_objects() {
        assert_eq!(with_breakpoint(b"[]", b",x"), b"[]");
        assert_eq!(with_breakpoint(b"\"text\"", b",x"), b"\"text\"");
        assert_eq!(
            with_breakpoint(b"[{\"a\":1}] ", b",\"m\":1"),
            b"[{\"a\":1,\"m\":1}]"
        );
    }

    fn feed(
        events: &[(&str, Value)],
    ) -> (Result<Option<ModelResponse>, ModelError>, Vec<StreamDelta>) {
        let deltas = Mutex::new(Vec::new());
        let sink = |d: StreamDelta| deltas.lock().unwrap().push(d);
        let mut a = Assembly::default();
        let mut last = Ok(None);
        for (name, data) in events {
            last = a.apply(
                &SseEvent {
                    event: name.to_string(),
                    data: data.to_string(),
                },
                &sink,
            );
            if last.is_err() {
                break;
            }
        }
        (last, deltas.into_inner().unwrap())
    }

    #[test]
    fn a_full_stream_assembles_text_tool_input_thinking_and_usage() {
        let (result, deltas) = feed(&[
            (
                "message_start",
                json!({"type":"message_start","message":{"id":"m","usage":{"input_tokens":10,"cache_read_input_tokens":90,"cache_creation_input_tokens":5,"output_tokens":1}}}),
            ),
            ("ping", json!({"type":"ping"})),
            (
                "content_block_start",
                json!({"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}),
            ),
            (
                "content_block_delta",
                json!({"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hmm"}}),
            ),
            (
                "content_block_delta",
                json!({"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"SIG=="}}),
            ),
            (
                "content_block_stop",
                json!({"type":"content_block_stop","index":0}),
            ),
            (
                "content_block_start",
                json!({"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}),
            ),
            (
                "content_block_delta",
                json!({"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Let me "}}),
            ),
            (
                "content_block_delta",
                json!({"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"look."}}),
            ),
            (
                "content_block_start",
                json!({"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_1","name":"Read","input":{}}}),
            ),
            (
                "content_block_delta",
                json!({"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"file_"}}),
            ),
            (
                "content_block_delta",
                json!({"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"path\": \"a\\\"b.rs\"}"}}),
            ),
            (
                "content_block_stop",
                json!({"type":"content_block_stop","index":2}),
            ),
            (
                "content_block_start",
                json!({"type":"content_block_start","index":3,"content_block":{"type":"redacted_thinking","data":"opaque"}}),
            ),
            (
                "message_delta",
                json!({"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":42}}),
            ),
            ("message_stop", json!({"type":"message_stop"})),
        ]);
        let r = result.unwrap().unwrap();
        assert_eq!(r.stop_reason, StopReason::ToolUse);
        assert_eq!(
            r.content[0],
            json!({"type":"thinking","thinking":"hmm","signature":"SIG=="})
        );
        assert_eq!(r.content[1], json!({"type":"text","text":"Let me look."}));
        assert_eq!(
            r.content[2],
            json!({"type":"tool_use","id":"toolu_1","name":"Read","input":{"file_path":"a\"b.rs"}})
        );
        assert_eq!(
            r.content[3],
            json!({"type":"redacted_thinking","data":"opaque"})
        );
        assert_eq!(
            (
                r.usage.input_tokens,
                r.usage.output_tokens,
                r.usage.cache_read_input_tokens,
                r.usage.cache_creation_input_tokens
            ),
            (10, 42, 90, 5)
        );
        assert!(deltas.contains(&StreamDelta::Text {
            index: 1,
            text: "look.".into()
        }));
    }

    #[test]
    fn error_events_are_transient_or_fatal_by_type() {
        let start = (
            "message_start",
            json!({"type":"message_start","message":{"usage":{}}}),
        );
        let (r, _) = feed(&[
            start.clone(),
            (
                "error",
                json!({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}),
            ),
        ]);
        assert!(
            matches!(r, Err(ModelError::Transient { ref message, .. }) if message.contains("Overloaded"))
        );
        let (r, _) = feed(&[
            start,
            (
                "error",
                json!({"type":"error","error":{"type":"invalid_request_error","message":"bad"}}),
            ),
        ]);
        assert!(matches!(r, Err(ModelError::Fatal(ref m)) if m.contains("bad")));
    }

    #[test]
    fn max_tokens_drops_a_tool_call_whose_input_was_cut() {
        let (r, _) = feed(&[
            (
                "message_start",
                json!({"type":"message_start","message":{"usage":{}}}),
            ),
            (
                "content_block_start",
                json!({"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}),
            ),
            (
                "content_block_delta",
                json!({"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Writing"}}),
            ),
            (
                "content_block_start",
                json!({"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"t","name":"Write","input":{}}}),
            ),
            (
                "content_block_delta",
                json!({"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"content\": \"abc"}}),
            ),
            (
                "message_delta",
                json!({"type":"message_delta","delta":{"stop_reason":"max_tokens"},"usage":{"output_tokens":100}}),
            ),
            ("message_stop", json!({"type":"message_stop"})),
        ]);
        let r = r.unwrap().unwrap();
        assert_eq!(r.stop_reason, StopReason::MaxTokens);
        assert_eq!(r.content, vec![json!({"type":"text","text":"Writing"})]);
    }
}
