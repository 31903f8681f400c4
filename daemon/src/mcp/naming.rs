//! The names the model sees for MCP tools: `mcp__<server>__<tool>`, as Claude
//! Code names them (models are trained on it, and fork allowlists such as
//! `mcp__github__*` match it).
//!
//! The Anthropic API allows tool names of 1 to 64 of `[A-Za-z0-9_-]`, so the
//! tool part is sanitised (any other character becomes `_`) and a longer name
//! is cut, ending in a hash of the full server and tool names so that
//! different long names stay apart. Sanitising can still make two names equal
//! (`a.b` and `a_b`): [`dedup`] makes a list unique by suffix, in order, so
//! the first keeps its plain name. The caller keeps the map from wire name to
//! (server, tool): a wire name is never parsed back.

use std::collections::HashSet;

use sha2::{Digest, Sha256};

use super::def::ServerName;

/// The longest tool name the Anthropic API accepts.
pub const MAX_WIRE_NAME: usize = 64;
/// Hex digits of the hash that ends a name cut to [`MAX_WIRE_NAME`].
const HASH_DIGITS: usize = 8;

/// `mcp__<server>__<tool>`, at most [`MAX_WIRE_NAME`] characters of
/// `[A-Za-z0-9_-]`.
pub fn wire_name(server: &ServerName, tool: &str) -> String {
    let tool_part: String = tool
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let full = format!("mcp__{server}__{tool_part}");
    if full.len() <= MAX_WIRE_NAME {
        return full;
    }
    let digest = Sha256::digest(format!("{server}\0{tool}").as_bytes());
    let hash: String = digest[..HASH_DIGITS / 2]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    // All ASCII by now, so cutting at a byte index cuts at a character.
    let keep = MAX_WIRE_NAME - HASH_DIGITS - 1;
    format!("{}_{hash}", &full[..keep])
}

/// `names` made unique, in order: a name seen before gets `_2`, `_3`… (its
/// end cut so the result stays within [`MAX_WIRE_NAME`]). A name that is
/// already unique is unchanged, so adding a tool at the end of a list never
/// renames the ones before it.
pub fn dedup(names: Vec<String>) -> Vec<String> {
    let mut taken: HashSet<String> = HashSet::with_capacity(names.len());
    let mut out = Vec::with_capacity(names.len());
    for name in names {
        let mut unique = name.clone();
        let mut n = 2;
        while taken.contains(&unique) {
            let suffix = format!("_{n}");
            let mut end = name.len().min(MAX_WIRE_NAME - suffix.len());
            while !name.is_char_boundary(end) {
                end -= 1;
            }
            unique = format!("{}{suffix}", &name[..end]);
            n += 1;
        }
        taken.insert(unique.clone());
        out.push(unique);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(name: &str) -> ServerName {
        ServerName::parse(name).unwrap()
    }

    fn is_wire_name(name: &str) -> bool {
        (1..=MAX_WIRE_NAME).contains(&name.len())
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    }

    #[test]
    fn wire_names_follow_claude_code() {
        assert_eq!(
            wire_name(&server("github"), "create_issue"),
            "mcp__github__create_issue"
        );
        assert_eq!(wire_name(&server("fs"), "read-file"), "mcp__fs__read-file");
    }

    #[test]
    fn tool_part_is_sanitised_to_the_api_alphabet() {
        assert_eq!(
            wire_name(&server("s"), "files.read/all"),
            "mcp__s__files_read_all"
        );
        assert_eq!(wire_name(&server("s"), "café"), "mcp__s__caf_");
        assert_eq!(wire_name(&server("s"), "a b"), "mcp__s__a_b");
    }

    #[test]
    fn long_names_are_cut_to_64_and_stay_distinct() {
        let s = server("a-server-with-a-rather-long-name");
        let one = wire_name(&s, &format!("{}_one", "x".repeat(60)));
        let two = wire_name(&s, &format!("{}_two", "x".repeat(60)));
        assert_eq!(one.len(), MAX_WIRE_NAME);
        assert!(is_wire_name(&one) && is_wire_name(&two), "{one} {two}");
        assert_ne!(one, two);
        assert!(one.starts_with("mcp__a-server-with-a-rather-long-name__xxx"));
        assert_eq!(one, wire_name(&s, &format!("{}_one", "x".repeat(60))));

        let longest = wire_name(&server(&"s".repeat(64)), "tool");
        assert!(is_wire_name(&longest), "{longest}");
        let other = wire_name(&server(&"s".repeat(64)), "tool2");
        assert_ne!(longest, other);
        assert!(is_wire_name(&wire_name(&server("s"), &"é".repeat(100))));
    }

    #[test]
    fn dedup_suffixes_later_duplicates_only() {
        let s = server("s");
        let names = vec![
            wire_name(&s, "a.b"),
            wire_name(&s, "a_b"),
            wire_name(&s, "c"),
            wire_name(&s, "a/b"),
        ];
        assert_eq!(
            dedup(names),
            ["mcp__s__a_b", "mcp__s__a_b_2", "mcp__s__c", "mcp__s__a_b_3"]
        );
    }

    #[test]
    fn dedup_keeps_names_within_the_limit() {
        let long = "x".repeat(MAX_WIRE_NAME);
        let out = dedup(vec![long.clone(), long.clone(), long]);
        assert_eq!(out[0].len(), MAX_WIRE_NAME);
        assert!(out[1].ends_with("_2") && out[1].len() == MAX_WIRE_NAME);
        assert!(out[2].ends_with("_3") && out[2].len() == MAX_WIRE_NAME);
        // A suffixed name that itself collides moves on to the next number.
        let out = dedup(vec!["a".into(), "a_2".into(), "a".into()]);
        assert_eq!(out, ["a", "a_2", "a_3"]);
    }
}
