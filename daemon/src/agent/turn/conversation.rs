//! The conversation an agent's requests send, rebuilt from its transcript:
//! user and assistant entries are messages, a compaction boundary replaces
//! what came before it, a rewind note goes back to before a turn, and a
//! note of agentd 0.1 drops a message.

use std::sync::Arc;

use serde_json::Value;

use crate::domain::{AgentRecord, Role, TranscriptEntry};
use crate::model::MessageBytes;
use crate::store::{Store, StoreError};

/// The conversation of `record` as its requests send it, with the seq of
/// each message, and the seq its next entry gets. Corrupt entries are
/// skipped by the store: a hole stops here rather than send the model a
/// different conversation (the record counts the entries, so a hole at the
/// end shows too).
pub fn load_conversation(
    store: &Store,
    record: &AgentRecord,
) -> Result<(Vec<(u64, MessageBytes)>, u64), StoreError> {
    let id = record.id;
    let entries = store.transcript(id, 0, usize::MAX)?;
    let hole = (0u64..)
        .zip(&entries)
        .find(|(i, e)| e.seq != *i)
        .map(|(i, _)| i)
        .or_else(|| {
            let read = entries.len() as u64;
            (read < record.transcript_len).then_some(read)
        });
    if let Some(seq) = hole {
        return Err(StoreError::TranscriptHole { id, seq });
    }
    let next_seq = entries.last().map_or(0, |e| e.seq + 1);
    Ok((conversation_of(&entries), next_seq))
}

/// The messages `entries` (in order, from the first) make. A rewind note
/// (DESIGN §23) makes them what the entries before the one it names made:
/// nothing is deleted, the turns after it stay in the transcript.
pub fn conversation_of(entries: &[TranscriptEntry]) -> Vec<(u64, MessageBytes)> {
    let mut messages = Vec::with_capacity(entries.len());
    for (i, e) in entries.iter().enumerate() {
        if let Some(to) = crate::domain::turns::rewound_to(e) {
            let before = entries[..i].partition_point(|x| x.seq < to);
            messages = conversation_of(&entries[..before]);
            continue;
        }
        apply_entry(&mut messages, e);
    }
    messages
}

/// Applies one transcript entry to the request messages: user and assistant
/// entries are messages; a `drop_entry` note (written by agentd 0.1 for
/// calls interrupted by a crash) removes the message it names.
pub(super) fn apply_entry(messages: &mut Vec<(u64, MessageBytes)>, entry: &TranscriptEntry) {
    let role = match entry.role {
        Role::User | Role::Assistant => entry.role,
        Role::System if entry.compact.is_some() => {
            // A compaction boundary: what came before is the summary now.
            messages.clear();
            messages.push((
                entry.seq,
                MessageBytes {
                    role: Role::User,
                    content_json: Arc::from(entry.content_json.as_slice()),
                    cache_point: None,
                },
            ));
            return;
        }
        Role::System => {
            let note: Value = serde_json::from_slice(&entry.content_json).unwrap_or(Value::Null);
            for block in note.as_array().into_iter().flatten() {
                if block["type"] == "agentd_note"
                    && block["kind"] == "drop_entry"
                    && let Some(seq) = block["seq"].as_u64()
                {
                    messages.retain(|(s, _)| *s != seq);
                }
            }
            return;
        }
    };
    messages.push((
        entry.seq,
        MessageBytes {
            role,
            content_json: Arc::from(entry.content_json.as_slice()),
            cache_point: entry.cache_point.map(|p| p as usize),
        },
    ));
}
