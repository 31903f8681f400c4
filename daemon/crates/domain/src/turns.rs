//! An agent's user turns (DESIGN §23): a turn begins with every user entry
//! that carries a message of its own — a text block at its top level (the
//! first prompt, a message sent to it, a notification, a fork's
//! directive), not only tool results. Checkpoints and rewinds count turns
//! from 1 in transcript order.

use serde::Deserialize;
use serde_json::{Value, json};

use super::{Role, TranscriptEntry};

#[derive(Deserialize)]
struct Block {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    text: Option<String>,
}

/// The text of `entry` if it begins a user turn.
pub fn turn_text(entry: &TranscriptEntry) -> Option<String> {
    text_of_turn(entry.role, &entry.content_json)
}

/// The text of a message (`role`, `content_json`) if it begins a user turn.
pub fn text_of_turn(role: Role, content_json: &[u8]) -> Option<String> {
    if role != Role::User {
        return None;
    }
    let blocks: Vec<Block> = serde_json::from_slice(content_json).ok()?;
    let texts: Vec<String> = blocks
        .into_iter()
        .filter(|b| b.kind == "text")
        .filter_map(|b| b.text)
        .collect();
    (!texts.is_empty()).then(|| texts.join("\n"))
}

/// One user turn.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UserTurn {
    /// From 1.
    pub turn: u32,
    /// The entry that began it.
    pub seq: u64,
    pub at_ms: i64,
    pub text: String,
}

/// The user turns of `entries` (a whole transcript, in order).
pub fn user_turns(entries: &[TranscriptEntry]) -> Vec<UserTurn> {
    let mut out = Vec::new();
    for e in entries {
        if let Some(text) = turn_text(e) {
            out.push(UserTurn {
                turn: out.len() as u32 + 1,
                seq: e.seq,
                at_ms: e.created_at_ms,
                text,
            });
        }
    }
    out
}

/// The note a conversation rewind writes (a `System` entry): requests
/// after it send only what came before entry `to_seq`.
pub fn rewind_note(to_seq: u64, turn: u32) -> Value {
    json!([{"type": "agentd_note", "kind": "rewind", "to_seq": to_seq, "turn": turn}])
}

/// The entry a rewind note in `entry` goes back to, if it is one.
pub fn rewound_to(entry: &TranscriptEntry) -> Option<u64> {
    if entry.role != Role::System || entry.compact.is_some() {
        return None;
    }
    let note: Value = serde_json::from_slice(&entry.content_json).ok()?;
    note.as_array()?
        .iter()
        .find(|b| b["type"] == "agentd_note" && b["kind"] == "rewind")
        .and_then(|b| b["to_seq"].as_u64())
}

/// The entries of `entries` (a whole transcript, in order) the agent
/// still sees, ascending: a rewind note takes out what came after the
/// entry it names and before it, as the conversation is rebuilt
/// (`conversation_of`); compaction is not applied (a replay shows it).
pub fn visible(entries: &[TranscriptEntry]) -> Vec<u64> {
    let mut live = Vec::with_capacity(entries.len());
    for (i, e) in entries.iter().enumerate() {
        if let Some(to) = rewound_to(e) {
            let before = entries[..i].partition_point(|x| x.seq < to);
            live = visible(&entries[..before]);
        }
        live.push(e.seq);
    }
    live
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(seq: u64, role: Role, content: Value) -> TranscriptEntry {
        TranscriptEntry {
            seq,
            role,
            content_json: content.to_string().into_bytes(),
            created_at_ms: seq as i64,
            usage: None,
            stop_reason: None,
            cache_point: None,
            compact: None,
            file_changes: Vec::new(),
            rule_decisions: Vec::new(),
        }
    }

    #[test]
    fn a_turn_begins_with_a_message_not_with_tool_results_alone() {
        let entries = [
            entry(0, Role::User, json!([{"type": "text", "text": "fix it"}])),
            entry(1, Role::Assistant, json!([{"type": "text", "text": "ok"}])),
            entry(
                2,
                Role::User,
                json!([{"type": "tool_result", "tool_use_id": "a", "content": [{"type": "text", "text": "out"}]}]),
            ),
            entry(
                3,
                Role::User,
                json!([{"type": "tool_result", "tool_use_id": "b", "content": "x"}, {"type": "text", "text": "also this"}]),
            ),
            entry(4, Role::System, rewind_note(2, 1)),
        ];
        let turns = user_turns(&entries);
        assert_eq!(
            turns
                .iter()
                .map(|t| (t.turn, t.seq, t.text.as_str()))
                .collect::<Vec<_>>(),
            [(1, 0, "fix it"), (2, 3, "also this")]
        );
        assert_eq!(rewound_to(&entries[4]), Some(2));
        assert_eq!(rewound_to(&entries[0]), None);
        assert_eq!(visible(&entries), [0, 1, 4]);
    }

    #[test]
    fn a_rewind_to_before_an_earlier_rewind_sees_what_that_one_hid() {
        let t = |seq| entry(seq, Role::User, json!([{"type": "text", "text": "m"}]));
        // 0..=4, rewind to 2 (at 5), 6, rewind to 4 (at 7): the prefix
        // before 4 is 0..=3, whatever the later rewind hid.
        let entries = [
            t(0),
            t(1),
            t(2),
            t(3),
            t(4),
            entry(5, Role::System, rewind_note(2, 2)),
            t(6),
            entry(7, Role::System, rewind_note(4, 3)),
            t(8),
        ];
        assert_eq!(visible(&entries), [0, 1, 2, 3, 7, 8]);
    }
}
