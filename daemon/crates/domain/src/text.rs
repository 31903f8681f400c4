//! Text as requests carry it and messages quote it.

/// Characters of user input an error message quotes.
const QUOTED_CHARS: usize = 160;

/// `text` as an error message may quote it: its first 160 characters, and
/// how much more there was. Messages travel in gRPC trailers, which are
/// limited; a 100,000-character id must not turn NOT_FOUND into a
/// transport error. What was sent is anyone's, and a message is printed
/// by whatever client gets it: control characters are made visible
/// (`agentd_shared::visible::line`).
pub fn quote(text: &str) -> String {
    let mut chars = text.chars();
    let head: String = chars.by_ref().take(QUOTED_CHARS).collect();
    let rest = chars.count();
    let head = agentd_shared::visible::line(&head);
    if rest == 0 {
        head.into_owned()
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
        assert_eq!(quote("a\u{1b}]52;c;x\u{7}\nb"), "a␛]52;c;x␇␊b");
    }
}
