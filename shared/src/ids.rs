//! Agent ids: UUID v7 (so ids sort by creation), shown short as the first
//! eight hex digits.

/// Length of the short id shown in tables.
pub const SHORT_ID_LEN: usize = 8;

/// The first eight hex digits of an id in canonical (hyphenated) form.
pub fn short_id(id: &str) -> &str {
    id.get(..SHORT_ID_LEN).unwrap_or(id)
}

/// True when `s` could be a (prefix of a) hex id: hex digits, optionally
/// with hyphens where a hyphenated UUID has them.
pub fn looks_like_id_prefix(s: &str) -> bool {
    !s.is_empty() && s.len() <= 36 && s.chars().all(|c| c.is_ascii_hexdigit() || c == '-')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_id_is_eight_hex_digits() {
        assert_eq!(short_id("019ad1f2-3b4c-7d5e-8f60-718293a4b5c6"), "019ad1f2");
        assert_eq!(short_id("abc"), "abc");
    }

    #[test]
    fn prefixes_are_hex_only() {
        assert!(looks_like_id_prefix("019ad1f2-3b"));
        assert!(!looks_like_id_prefix("build-bot"));
        assert!(!looks_like_id_prefix(""));
    }
}
