//! Transcript entries on disk, compaction boundaries included.

use prost::Message;

use super::{Corrupt, StoredUsage, stored_usage, usage_of};
use crate::domain::{CompactBoundary, CompactTrigger, Role, StopReason, TranscriptEntry};

#[derive(Clone, PartialEq, prost::Message)]
pub(super) struct StoredEntry {
    #[prost(uint64, tag = "1")]
    seq: u64,
    /// 1 user, 2 assistant, 3 system.
    #[prost(int32, tag = "2")]
    role: i32,
    #[prost(bytes = "vec", tag = "3")]
    content_json: Vec<u8>,
    #[prost(int64, tag = "4")]
    created_at_ms: i64,
    #[prost(message, optional, tag = "5")]
    usage: Option<StoredUsage>,
    /// The Anthropic spelling; empty when none.
    #[prost(string, tag = "6")]
    stop_reason: String,
    #[prost(uint32, optional, tag = "7")]
    cache_point: Option<u32>,
    #[prost(message, optional, tag = "8")]
    pub(super) compact: Option<StoredCompact>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(super) struct StoredCompact {
    /// 1 auto, 2 manual, 3 overflow.
    #[prost(int32, tag = "1")]
    pub(super) trigger: i32,
    #[prost(string, tag = "2")]
    summary: String,
    #[prost(uint64, tag = "3")]
    tokens_before: u64,
    #[prost(uint64, tag = "4")]
    tokens_after: u64,
    #[prost(uint64, tag = "5")]
    covers_through_seq: u64,
}

fn role_number(r: Role) -> i32 {
    match r {
        Role::User => 1,
        Role::Assistant => 2,
        Role::System => 3,
    }
}

pub fn encode_entry(e: &TranscriptEntry) -> Vec<u8> {
    StoredEntry {
        seq: e.seq,
        role: role_number(e.role),
        content_json: e.content_json.clone(),
        created_at_ms: e.created_at_ms,
        usage: e.usage.as_ref().map(stored_usage),
        stop_reason: e
            .stop_reason
            .as_ref()
            .map(|s| s.as_str().to_string())
            .unwrap_or_default(),
        cache_point: e.cache_point,
        compact: e.compact.as_ref().map(|c| StoredCompact {
            trigger: match c.trigger {
                CompactTrigger::Auto => 1,
                CompactTrigger::Manual => 2,
                CompactTrigger::Overflow => 3,
            },
            summary: c.summary.clone(),
            tokens_before: c.tokens_before,
            tokens_after: c.tokens_after,
            covers_through_seq: c.covers_through_seq,
        }),
    }
    .encode_to_vec()
}

pub fn decode_entry(bytes: &[u8]) -> Result<TranscriptEntry, Corrupt> {
    let s = StoredEntry::decode(bytes)?;
    let role = match s.role {
        1 => Role::User,
        2 => Role::Assistant,
        3 => Role::System,
        _ => return Err(Corrupt::Field("role")),
    };
    Ok(TranscriptEntry {
        seq: s.seq,
        role,
        content_json: s.content_json,
        created_at_ms: s.created_at_ms,
        usage: s.usage.map(|u| usage_of(Some(u))),
        stop_reason: (!s.stop_reason.is_empty()).then(|| StopReason::parse(&s.stop_reason)),
        cache_point: s.cache_point,
        compact: s.compact.map(compact_of).transpose()?,
    })
}

fn compact_of(c: StoredCompact) -> Result<CompactBoundary, Corrupt> {
    Ok(CompactBoundary {
        trigger: match c.trigger {
            1 => CompactTrigger::Auto,
            2 => CompactTrigger::Manual,
            3 => CompactTrigger::Overflow,
            _ => return Err(Corrupt::Field("compaction trigger")),
        },
        summary: c.summary,
        tokens_before: c.tokens_before,
        tokens_after: c.tokens_after,
        covers_through_seq: c.covers_through_seq,
    })
}
