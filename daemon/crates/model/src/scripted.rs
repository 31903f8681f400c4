//! `scripted:<file>`: replays a script of assistant turns, for demos, tests
//! and offline use. Turn N of the script answers the request whose history
//! holds N assistant messages, so a revived agent continues where it was.
//!
//! The file is JSON or YAML: either a list of turns or `{turns: [...]}`.
//! ```yaml
//! turns:
//!   - delay_ms: 200          # optional: hold the turn (cancellable)
//!     content:
//!       - {type: text, text: "Listing files."}
//!       - {type: tool_use, name: Bash, input: {command: ls}}
//!   - content: [{type: text, text: "Done."}]
//! ```

use std::path::Path;
use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};

use super::SpecError;
use super::{ModelError, ModelRequest, ModelResponse, StreamDelta};
use crate::domain::{Role, StopReason, Usage};

/// A loaded, validated script.
#[derive(Debug)]
pub struct Script {
    turns: Vec<Turn>,
    source: String,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum ScriptFile {
    Turns(Vec<Turn>),
    Document { turns: Vec<Turn> },
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Turn {
    #[serde(default)]
    delay_ms: u64,
    content: Vec<Block>,
    #[serde(default)]
    stop_reason: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
enum Block {
    Text {
        text: String,
    },
    ToolUse {
        #[serde(default)]
        id: Option<String>,
        name: String,
        input: Value,
    },
    Thinking {
        thinking: String,
        #[serde(default)]
        signature: String,
    },
}

impl Script {
    pub fn load(path: &Path) -> Result<Script, SpecError> {
        // The path comes from the request: quote it short in every error.
        let shown = crate::domain::text::quote(&path.display().to_string());
        let text = std::fs::read_to_string(path)
            .map_err(|e| SpecError::unusable(format!("cannot read model script {}: {e}", shown)))?;
        let is_yaml = matches!(
            path.extension().and_then(|e| e.to_str()),
            Some("yaml" | "yml")
        );
        let parsed: Result<ScriptFile, String> = if is_yaml {
            serde_norway::from_str(&text).map_err(|e| e.to_string())
        } else {
            serde_json::from_str(&text).map_err(|e| e.to_string())
        };
        let file = parsed
            .map_err(|e| SpecError::invalid(format!("malformed model script {}: {e}", shown)))?;
        let turns = match file {
            ScriptFile::Turns(t) | ScriptFile::Document { turns: t } => t,
        };
        if turns.is_empty() {
            return Err(SpecError::invalid(format!(
                "model script {} has no turns",
                shown
            )));
        }
        for (i, turn) in turns.iter().enumerate() {
            if turn.content.is_empty() {
                return Err(SpecError::invalid(format!(
                    "model script {}: turn {} has no content blocks",
                    shown,
                    i + 1
                )));
            }
            for block in &turn.content {
                if let Block::ToolUse { input, name, .. } = block
                    && !input.is_object()
                {
                    return Err(SpecError::invalid(format!(
                        "model script {}: turn {}: input of tool_use {name} must be an object",
                        shown,
                        i + 1
                    )));
                }
            }
        }
        Ok(Script {
            turns,
            source: path.display().to_string(),
        })
    }

    pub async fn complete(
        &self,
        request: &ModelRequest,
        on_delta: &(dyn Fn(StreamDelta) + Send + Sync),
    ) -> Result<ModelResponse, ModelError> {
        let turn_no = index_of(request);
        let turn = self.turns.get(turn_no).ok_or_else(|| {
            ModelError::Fatal(format!(
                "model script {} has {} turns and the agent asked for turn {}",
                self.source,
                self.turns.len(),
                turn_no + 1
            ))
        })?;
        if turn.delay_ms > 0 {
            tokio::time::sleep(Duration::from_millis(turn.delay_ms)).await;
        }
        let mut content = Vec::with_capacity(turn.content.len());
        let mut has_tool_use = false;
        for (i, block) in turn.content.iter().enumerate() {
            let index = i as u32;
            match block {
                Block::Text { text } => {
                    for piece in text.split_inclusive(' ') {
                        on_delta(StreamDelta::Text {
                            index,
                            text: piece.to_string(),
                        });
                    }
                    content.push(json!({"type": "text", "text": text}));
                }
                Block::Thinking {
                    thinking,
                    signature,
                } => {
                    on_delta(StreamDelta::Thinking {
                        index,
                        thinking: thinking.clone(),
                    });
                    content.push(
                        json!({"type": "thinking", "thinking": thinking, "signature": signature}),
                    );
                }
                Block::ToolUse { id, name, input } => {
                    has_tool_use = true;
                    // Deterministic ids keep replays (and revivals) identical.
                    let id = id
                        .clone()
                        .unwrap_or_else(|| format!("toolu_script_{turn_no:02}_{i:02}"));
                    on_delta(StreamDelta::ToolUseStart {
                        index,
                        name: name.clone(),
                    });
                    on_delta(StreamDelta::InputJson {
                        index,
                        json: input.to_string(),
                    });
                    content
                        .push(json!({"type": "tool_use", "id": id, "name": name, "input": input}));
                }
            }
        }
        let stop_reason = match &turn.stop_reason {
            Some(s) => StopReason::parse(s),
            None if has_tool_use => StopReason::ToolUse,
            None => StopReason::EndTurn,
        };
        Ok(ModelResponse {
            content,
            stop_reason,
            usage: Usage::default(),
        })
    }
}

fn index_of(request: &ModelRequest) -> usize {
    request
        .messages
        .iter()
        .filter(|m| m.role == Role::Assistant)
        .count()
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;
    use crate::MessageBytes;

    fn request(assistant_turns: usize) -> ModelRequest {
        let mut messages = vec![MessageBytes {
            role: Role::User,
            content_json: Arc::from(&b"[]"[..]),
            cache_point: None,
        }];
        for _ in 0..assistant_turns {
            messages.push(MessageBytes {
                role: Role::Assistant,
                content_json: Arc::from(&b"[]"[..]),
                cache_point: None,
            });
            messages.push(MessageBytes {
                role: Role::User,
                content_json: Arc::from(&b"[]"[..]),
                cache_point: None,
            });
        }
        ModelRequest {
            model: "scripted:t".into(),
            system_json: Arc::from(&b"[]"[..]),
            tools_json: Arc::from(&b"[]"[..]),
            messages,
            max_tokens: 1024,
        }
    }

    fn write(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    #[tokio::test]
    async fn replays_the_turn_matching_the_history() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(
            dir.path(),
            "s.yaml",
            "turns:\n  - content:\n      - {type: tool_use, name: Bash, input: {command: ls}}\n  - content:\n      - {type: text, text: all done now}\n",
        );
        let script = Script::load(&p).unwrap();
        let deltas = Mutex::new(Vec::new());
        let sink = |d: StreamDelta| deltas.lock().unwrap().push(d);
        let first = script.complete(&request(0), &sink).await.unwrap();
        assert_eq!(first.stop_reason, StopReason::ToolUse);
        assert_eq!(first.content[0]["name"], "Bash");
        assert_eq!(first.content[0]["id"], "toolu_script_00_00");
        let second = script.complete(&request(1), &sink).await.unwrap();
        assert_eq!(second.stop_reason, StopReason::EndTurn);
        assert_eq!(second.content[0]["text"], "all done now");
        let text: String = deltas
            .lock()
            .unwrap()
            .iter()
            .filter_map(|d| match d {
                StreamDelta::Text { text, .. } => Some(text.clone()),
                _ => None,
            })
            .collect();
        assert_eq!(text, "all done now");
        let err = script.complete(&request(2), &sink).await.unwrap_err();
        assert!(err.to_string().contains("has 2 turns"), "{err}");
    }

    #[test]
    fn malformed_and_missing_scripts_are_clear_errors() {
        let dir = tempfile::tempdir().unwrap();
        let missing = Script::load(&dir.path().join("nope.json")).unwrap_err();
        assert!(matches!(missing, SpecError::Unusable(_)), "{missing}");
        let bad = write(
            dir.path(),
            "bad.json",
            "{\"turns\": [{\"content\": [{\"type\": \"bogus\"}]}]}",
        );
        assert!(matches!(Script::load(&bad), Err(SpecError::Invalid(_))));
        let empty = write(dir.path(), "empty.json", "[]");
        assert!(
            matches!(Script::load(&empty), Err(SpecError::Invalid(m)) if m.contains("no turns"))
        );
        let list = write(
            dir.path(),
            "list.json",
            r#"[{"content":[{"type":"text","text":"hi"}]}]"#,
        );
        assert!(Script::load(&list).is_ok());
    }
}
