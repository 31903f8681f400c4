//! Text as requests carry it and messages quote it.

/// Characters of user input an error message quotes.
const QUOTED_CHARS: usize = 160;

/// `text` as an error message may quote it: its first 160 characters, and
/// how much more there was. Messages travel in gRPC trailers, which are
/// limited; a 100,000-character id must not turn NOT_FOUND into a
/// transport error.
pub fn quote(text: &str) -> String {
    let mut chars = text.chars();
    let head: String = chars.by_ref().take(QUOTED_CHARS).collect();
    let rest = chars.count();
    if rest == 0 {
        head
    } else {
        format!("{head}… ({rest} more characters)")
    }
}

/// Text that says something, trimmed; blank text is none (proto3 sends
/// an absent string as empty).
pub fn non_blank(text: &str) -> Option<String> {
    Some(text.trim())
        .filter(|t| !t.is_empty())
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_are_short_prefixes() {
        assert_eq!(quote("abc"), "abc");
        let long = "x".repeat(100_000);
        let q = quote(&long);
        assert!(q.len() < 220, "{q}");
        assert!(q.ends_with("(99840 more characters)"), "{q}");
        assert_eq!(quote(&"é".repeat(160)), "é".repeat(160));
    }
}
