//! Helpers for tests of forks: the `Agent` call that forks, and how a
//! fork's requests are recognised among those the mock received.

use serde_json::{Value, json};

use crate::mock::{Block, RecordedRequest, last_text, text_of};

/// The constant result every fork sees for its parent's tool calls.
pub const PLACEHOLDER: &str = "Fork started — processing in background";
/// What a fork's own message begins with.
pub const TAG: &str = "<fork-boilerplate>";
/// The breakpoint marker the daemon splices in (5-minute TTL).
pub const MARKER: &str = r#","cache_control":{"type":"ephemeral"}"#;

/// An `Agent` call forking with `directive` (also its description), with
/// `extra` arguments merged in.
pub fn fork_call_with(directive: &str, extra: Value) -> Block {
    let mut input = json!({"description": directive, "prompt": directive, "subagent_type": "fork"});
    if let (Some(map), Value::Object(more)) = (input.as_object_mut(), extra) {
        map.extend(more);
    }
    Block::agent("", input)
}

pub fn fork_call(directive: &str) -> Block {
    fork_call_with(directive, json!({}))
}

/// A fork's first request, whose own message carries `directive`.
pub fn is_fork_of(r: &RecordedRequest, directive: &str) -> bool {
    let last = last_text(r);
    last.contains(TAG) && last.contains(directive)
}

/// Any request of the fork whose directive is `directive`: its own message
/// is the first one with the tag.
pub fn is_request_of_fork(r: &RecordedRequest, directive: &str) -> bool {
    r.json["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|m| text_of(&m["content"]))
        .find(|t| t.contains(TAG))
        .is_some_and(|t| t.contains(directive))
}

/// The body with every cache breakpoint taken out.
pub fn stripped(r: &RecordedRequest) -> String {
    r.body_text().replace(MARKER, "")
}
