//! Agent ids as people type them. The daemon issues every agent a short id
//! (a unique prefix of its id, shown by `list`); clients show the one the
//! daemon sent and never derive one themselves.

/// True when `s` could be a (prefix of a) hex id: hex digits, optionally
/// with hyphens where a hyphenated UUID has them. Names that look like this
/// are refused, so a name never shadows an id.
pub fn looks_like_id_prefix(s: &str) -> bool {
    !s.is_empty() && s.len() <= 36 && s.chars().all(|c| c.is_ascii_hexdigit() || c == '-')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_are_hex_only() {
        assert!(looks_like_id_prefix("019ad1f2-3b"));
        assert!(!looks_like_id_prefix("build-bot"));
        assert!(!looks_like_id_prefix(""));
    }
}
