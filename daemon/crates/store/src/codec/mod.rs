//! The store edge: how domain values are laid out on disk. Records are
//! prost messages, so fields can be added without breaking older data
//! (unknown fields are skipped, missing ones default). Tag numbers and enum
//! numbers here are on-disk format: never reuse or renumber them.
//!
//! Decoding validates: a record whose id, status or kind cannot be read is
//! corrupt (see `Store::note_corrupt`), never mapped to a default.
//!
//! One file per record kind: `agent` (the agent record), `transcript`,
//! `prompt`, `inbox`, and the parts of a record with a shape of their own
//! (`external_run`, `mcp`, `plan`).

mod agent;
mod external_run;
mod inbox;
mod mcp;
mod plan;
mod prompt;
mod transcript;

use crate::domain::Usage;
pub use agent::{decode_agent, decode_status, encode_agent};
pub use inbox::{decode_inbox_item, encode_inbox_item};
pub use prompt::{decode_prompt, encode_prompt};
#[cfg(test)]
use transcript::StoredEntry;
pub use transcript::{decode_entry, encode_entry};

#[derive(Clone, Copy, PartialEq, Eq, prost::Message)]
pub(super) struct StoredUsage {
    #[prost(uint64, tag = "1")]
    input_tokens: u64,
    #[prost(uint64, tag = "2")]
    output_tokens: u64,
    #[prost(uint64, tag = "3")]
    cache_read_input_tokens: u64,
    #[prost(uint64, tag = "4")]
    cache_creation_input_tokens: u64,
}

/// Why stored bytes could not be read.
#[derive(Debug, thiserror::Error)]
pub enum Corrupt {
    #[error("undecodable: {0}")]
    Decode(#[from] prost::DecodeError),
    #[error("invalid {0}")]
    Field(&'static str),
}

pub(super) fn usage_of(u: Option<StoredUsage>) -> Usage {
    let u = u.unwrap_or_default();
    Usage {
        input_tokens: u.input_tokens,
        output_tokens: u.output_tokens,
        cache_read_input_tokens: u.cache_read_input_tokens,
        cache_creation_input_tokens: u.cache_creation_input_tokens,
    }
}

pub(super) fn stored_usage(u: &Usage) -> StoredUsage {
    StoredUsage {
        input_tokens: u.input_tokens,
        output_tokens: u.output_tokens,
        cache_read_input_tokens: u.cache_read_input_tokens,
        cache_creation_input_tokens: u.cache_creation_input_tokens,
    }
}
