//! A tool call's result, turned into the content of an Anthropic
//! `tool_result` (DESIGN §18: results keep text, images and resource links),
//! and capped like Bash's output.
//!
//! Each MCP content block becomes one block: text as text; an image (or an
//! embedded blob that is an image) as a base64 image block when the model
//! accepts its type; a resource link, an embedded text resource, audio and
//! other blobs as text that says what they are. `structuredContent` is added
//! as a text block holding its JSON unless a text block already holds the
//! same JSON (servers are asked to send it both ways; the model needs it
//! once).

use std::path::Path;

use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};
use serde_json::{Value, json};

use crate::tools::spool::{MAX_SPOOL_BYTES, SpoolWriter};
use crate::tools::{MAX_OUTPUT_CHARS, truncate_middle};

/// Image types the Anthropic API takes in an image block.
const MODEL_IMAGE_TYPES: [&str; 4] = ["image/jpeg", "image/png", "image/gif", "image/webp"];

/// Room left for `truncate_middle`'s "[... N characters omitted ...]".
const OMITTED_MARKER_CHARS: usize = 64;

/// A tool call's result as the model gets it.
#[derive(Debug, Clone, PartialEq)]
pub struct CallOutput {
    /// Anthropic `tool_result` content blocks (`text` and `image`).
    pub content: Vec<Value>,
    /// The server reported the call as failed (`isError`).
    pub is_error: bool,
}

impl CallOutput {
    /// The blocks' text, joined by blank lines (images left out).
    pub fn text(&self) -> String {
        self.content
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n\n")
    }
}

impl From<CallToolResult> for CallOutput {
    fn from(result: CallToolResult) -> CallOutput {
        let mut content: Vec<Value> = result.content.iter().map(block).collect();
        if let Some(structured) = result.structured_content
            && !content.iter().any(|b| holds_json(b, &structured))
        {
            content.push(text_block(structured.to_string()));
        }
        let is_error = result.is_error.unwrap_or(false);
        if content.is_empty() {
            content.push(text_block(if is_error {
                "(the tool failed and gave no message)"
            } else {
                "(no output)"
            }));
        }
        CallOutput { content, is_error }
    }
}

fn text_block(text: impl Into<String>) -> Value {
    json!({"type": "text", "text": text.into()})
}

fn image_block(media_type: &str, data: &str) -> Value {
    json!({
        "type": "image",
        "source": {"type": "base64", "media_type": media_type, "data": data},
    })
}

/// Whether `b` is a text block whose text is `value` as JSON.
fn holds_json(b: &Value, value: &Value) -> bool {
    b["text"]
        .as_str()
        .and_then(|t| serde_json::from_str::<Value>(t).ok())
        .is_some_and(|parsed| &parsed == value)
}

/// Bytes that `base64` characters decode to, about.
fn decoded_len(base64: &str) -> usize {
    base64.len() / 4 * 3
}

fn block(content: &ContentBlock) -> Value {
    match content {
        ContentBlock::Text(t) => text_block(t.text.clone()),
        ContentBlock::Image(image) => image_or_note(&image.mime_type, &image.data, "image"),
        ContentBlock::Audio(audio) => text_block(format!(
            "[audio ({}, about {} bytes) left out: the model cannot take audio]",
            audio.mime_type,
            decoded_len(&audio.data)
        )),
        ContentBlock::ResourceLink(link) => {
            let mut lines = vec![
                "[resource link]".to_string(),
                format!("uri: {}", link.uri),
                format!("name: {}", link.name),
            ];
            let optional = [
                ("title", link.title.clone()),
                ("mimeType", link.mime_type.clone()),
                ("description", link.description.clone()),
                ("size", link.size.map(|s| s.to_string())),
            ];
            for (key, value) in optional {
                if let Some(value) = value {
                    lines.push(format!("{key}: {value}"));
                }
            }
            text_block(lines.join("\n"))
        }
        ContentBlock::Resource(embedded) => resource_block(&embedded.resource),
        _ => text_block("[a content block of a kind agentd does not know was left out]"),
    }
}

fn resource_block(resource: &ResourceContents) -> Value {
    match resource {
        ResourceContents::TextResourceContents {
            uri,
            mime_type,
            text,
            ..
        } => {
            let kind = mime_type
                .as_deref()
                .map(|m| format!(" ({m})"))
                .unwrap_or_default();
            text_block(format!("[resource {uri}{kind}]\n{text}"))
        }
        ResourceContents::BlobResourceContents {
            uri,
            mime_type,
            blob,
            ..
        } => match mime_type.as_deref() {
            Some(m) if MODEL_IMAGE_TYPES.contains(&m) => image_block(m, blob),
            other => text_block(format!(
                "[resource {uri} ({}, about {} bytes of binary data) left out]",
                other.unwrap_or("no type given"),
                decoded_len(blob)
            )),
        },
        _ => text_block("[a resource of a kind agentd does not know was left out]"),
    }
}

fn image_or_note(media_type: &str, data: &str, what: &str) -> Value {
    if MODEL_IMAGE_TYPES.contains(&media_type) {
        image_block(media_type, data)
    } else {
        text_block(format!(
            "[{what} of type {media_type} (about {} bytes) left out: the model takes \
             only JPEG, PNG, GIF and WebP images]",
            decoded_len(data)
        ))
    }
}

/// `output` with its text shortened like Bash's output when the text blocks
/// hold more than [`MAX_OUTPUT_CHARS`] characters together: the beginning
/// and end are kept, the text blocks become one (where the first was; images
/// keep their places), and a note says where the full text was written.
/// `spool` is that file; it keeps at most the first [`MAX_SPOOL_BYTES`].
/// The model is told its path, so it must outlive the round (a
/// `Spool::path` file is removed once the round's results are recorded).
/// Images do not count toward the cap.
pub fn cap(output: CallOutput, spool: &Path) -> CallOutput {
    let text = output.text();
    let total = text.chars().count();
    if total <= MAX_OUTPUT_CHARS {
        return output;
    }
    let mut writer = SpoolWriter::create(Some(spool));
    writer.write(text.as_bytes());
    drop(writer);
    let saved = match std::fs::metadata(spool) {
        Ok(m) if m.len() as usize == text.len() => {
            format!(
                "the full text ({total} characters) is in {}",
                spool.display()
            )
        }
        Ok(m) if m.len() >= MAX_SPOOL_BYTES => format!(
            "the first {} MiB of the full text ({total} characters) are in {}",
            MAX_SPOOL_BYTES / (1024 * 1024),
            spool.display()
        ),
        _ => format!("the full text ({total} characters) could not be saved"),
    };
    let note = format!("\n\n[output shortened: {saved}]");
    // truncate_middle adds its marker of omitted characters past `room`.
    let room = MAX_OUTPUT_CHARS.saturating_sub(note.chars().count() + OMITTED_MARKER_CHARS);
    let short = format!("{}{note}", truncate_middle(&text, room, 0));
    let mut content = Vec::with_capacity(output.content.len());
    let mut short = Some(short);
    for b in output.content {
        if b["type"] == "text" {
            if let Some(text) = short.take() {
                content.push(text_block(text));
            }
        } else {
            content.push(b);
        }
    }
    CallOutput {
        content,
        is_error: output.is_error,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn convert(result: Value) -> CallOutput {
        CallOutput::from(serde_json::from_value::<CallToolResult>(result).unwrap())
    }

    #[test]
    fn text_and_images_become_anthropic_blocks() {
        let out = convert(json!({"content": [
            {"type": "text", "text": "hello"},
            {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
        ]}));
        assert!(!out.is_error);
        assert_eq!(
            out.content,
            vec![
                json!({"type": "text", "text": "hello"}),
                json!({"type": "image", "source":
                    {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}),
            ]
        );
    }

    #[test]
    fn images_the_model_cannot_take_become_a_note() {
        let out = convert(json!({"content": [
            {"type": "image", "data": "PHN2Zz4=", "mimeType": "image/svg+xml"},
        ]}));
        let text = out.text();
        assert!(
            text.contains("image/svg+xml") && text.contains("left out"),
            "{text}"
        );
        assert_eq!(out.content[0]["type"], "text");
    }

    #[test]
    fn resource_links_are_described_in_text() {
        let out = convert(json!({"content": [{
            "type": "resource_link", "uri": "file:///tmp/x.txt", "name": "x.txt",
            "mimeType": "text/plain", "description": "a file"
        }]}));
        assert_eq!(
            out.text(),
            "[resource link]\nuri: file:///tmp/x.txt\nname: x.txt\nmimeType: text/plain\n\
             description: a file"
        );
    }

    #[test]
    fn embedded_resources_keep_text_and_image_blobs() {
        let out = convert(json!({"content": [
            {"type": "resource", "resource":
                {"uri": "file:///a.md", "mimeType": "text/markdown", "text": "# A"}},
            {"type": "resource", "resource":
                {"uri": "file:///b.png", "mimeType": "image/png", "blob": "iVBORw0KGgo="}},
            {"type": "resource", "resource":
                {"uri": "file:///c.bin", "blob": "AAAAAAAA"}},
        ]}));
        assert_eq!(
            out.content[0]["text"],
            "[resource file:///a.md (text/markdown)]\n# A"
        );
        assert_eq!(out.content[1]["source"]["media_type"], "image/png");
        let note = out.content[2]["text"].as_str().unwrap();
        assert!(
            note.contains("file:///c.bin") && note.contains("6 bytes"),
            "{note}"
        );
    }

    #[test]
    fn audio_becomes_a_note() {
        let out = convert(json!({"content": [
            {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"},
        ]}));
        assert!(
            out.text().starts_with("[audio (audio/wav"),
            "{}",
            out.text()
        );
    }

    #[test]
    fn structured_content_is_given_once() {
        let both = convert(json!({
            "content": [{"type": "text", "text": "{\n  \"answer\": 42\n}"}],
            "structuredContent": {"answer": 42}
        }));
        assert_eq!(both.content.len(), 1);
        let only_structured = convert(json!({"content": [], "structuredContent": {"answer": 42}}));
        assert_eq!(only_structured.text(), r#"{"answer":42}"#);
        let prose_and_structured = convert(json!({
            "content": [{"type": "text", "text": "The answer."}],
            "structuredContent": {"answer": 42}
        }));
        assert_eq!(
            prose_and_structured.text(),
            "The answer.\n\n{\"answer\":42}"
        );
    }

    #[test]
    fn errors_and_empty_results_still_say_something() {
        let failed = convert(
            json!({"content": [{"type": "text", "text": "no such file"}], "isError": true}),
        );
        assert!(failed.is_error);
        assert_eq!(failed.text(), "no such file");
        let silent_failure = convert(json!({"content": [], "isError": true}));
        assert!(silent_failure.text().contains("gave no message"));
        assert_eq!(convert(json!({"content": []})).text(), "(no output)");
    }

    #[test]
    fn long_text_is_cut_and_spooled_in_full() {
        let dir = tempfile::tempdir().unwrap();
        let spool = dir.path().join("sub").join("call.out");
        let long = format!("BEGIN{}END", "x".repeat(50_000));
        let out = CallOutput {
            content: vec![
                text_block(long.clone()),
                image_block("image/png", "iVBORw0KGgo="),
                text_block("tail block"),
            ],
            is_error: true,
        };
        let capped = cap(out, &spool);
        assert!(capped.is_error);
        assert_eq!(capped.content.len(), 2);
        assert_eq!(capped.content[1]["type"], "image");
        let text = capped.content[0]["text"].as_str().unwrap();
        assert!(text.chars().count() <= MAX_OUTPUT_CHARS, "{}", text.len());
        assert!(text.starts_with("BEGIN") && text.contains("characters omitted"));
        let tail = &text[text.len() - 200..];
        assert!(tail.contains(&spool.display().to_string()), "{tail}");
        assert!(tail.contains("the full text (50020 characters)"), "{tail}");
        let saved = std::fs::read_to_string(&spool).unwrap();
        assert_eq!(saved, format!("{long}\n\ntail block"));
    }

    #[test]
    fn short_text_is_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let spool = dir.path().join("call.out");
        let out = CallOutput {
            content: vec![text_block("short")],
            is_error: false,
        };
        assert_eq!(cap(out.clone(), &spool), out);
        assert!(!spool.exists());
    }
}
