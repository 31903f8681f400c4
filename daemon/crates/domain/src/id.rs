//! Agent ids and the short ids people see.
//!
//! A short id is what `list` shows and what worktree and branch names are
//! made from, so it must be unique per agent (DESIGN §2). New ids are random
//! (UUID v4) and the store issues one only if its first [`SHORT_ID_LEN`] hex
//! digits are no other agent's short id and no prefix of another id: the short
//! id is then that prefix, and typing it (or any unique prefix of it) resolves
//! through the same range scan as any id prefix. Agents from stores written
//! before this rule (time-ordered UUID v7 ids, whose leading digits are the
//! creation time) got the shortest unique prefix of at least that length when
//! the store was upgraded.

use std::fmt;

use uuid::Uuid;

/// Hex digits in a newly issued short id.
pub const SHORT_ID_LEN: usize = 8;

/// An agent's id.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AgentId(Uuid);

impl AgentId {
    /// A fresh random id (not yet checked for a free short id: see
    /// `Store::issue_agent_id`).
    pub fn random() -> AgentId {
        AgentId(Uuid::new_v4())
    }

    pub fn from_uuid(id: Uuid) -> AgentId {
        AgentId(id)
    }

    /// The id from its 16 stored bytes.
    pub fn from_slice(bytes: &[u8]) -> Option<AgentId> {
        Uuid::from_slice(bytes).ok().map(AgentId)
    }

    /// Parses the canonical (hyphenated or simple) text form.
    pub fn parse(text: &str) -> Option<AgentId> {
        Uuid::parse_str(text).ok().map(AgentId)
    }

    pub fn as_bytes(&self) -> &[u8; 16] {
        self.0.as_bytes()
    }

    pub fn uuid(&self) -> Uuid {
        self.0
    }

    /// The 32 lowercase hex digits, without hyphens.
    pub fn hex(&self) -> String {
        self.0.simple().to_string()
    }

    /// The first `len` hex digits, as a short id.
    pub fn short_prefix(&self, len: usize) -> ShortId {
        let mut hex = self.hex();
        hex.truncate(len.clamp(1, 32));
        ShortId(hex)
    }
}

impl fmt::Display for AgentId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0.hyphenated(), f)
    }
}

impl fmt::Debug for AgentId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "AgentId({})", self.0.hyphenated())
    }
}

/// A unique prefix of an agent's id, in lowercase hex without hyphens.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Debug, Default)]
pub struct ShortId(String);

impl ShortId {
    /// Accepts 1–32 lowercase hex digits (what the store wrote).
    pub fn from_stored(text: &str) -> Option<ShortId> {
        let ok = !text.is_empty()
            && text.len() <= 32
            && text
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        ok.then(|| ShortId(text.to_string()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ShortId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_prefix_is_hex_without_hyphens() {
        let id = AgentId::parse("019ad1f2-3b4c-7d5e-8f60-718293a4b5c6").unwrap();
        assert_eq!(id.short_prefix(8).as_str(), "019ad1f2");
        assert_eq!(id.short_prefix(10).as_str(), "019ad1f23b");
        assert_eq!(id.to_string(), "019ad1f2-3b4c-7d5e-8f60-718293a4b5c6");
        assert_eq!(AgentId::from_slice(id.as_bytes()), Some(id));
    }

    #[test]
    fn stored_short_ids_are_lowercase_hex() {
        assert!(ShortId::from_stored("019ad1f2").is_some());
        assert!(ShortId::from_stored("019AD1F2").is_none());
        assert!(ShortId::from_stored("").is_none());
        assert!(ShortId::from_stored("xyz").is_none());
    }
}
