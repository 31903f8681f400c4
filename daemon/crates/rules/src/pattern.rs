//! One permission rule's pattern, in Claude Code's syntax (DESIGN §24):
//! `Tool` (every use), `Bash(npm run test:*)` (a prefix), `Bash(npm run *)`
//! (a glob), `Bash(git status)` (exact), `Read(./src/**)` and
//! `Edit(~/notes/*)` (gitignore-style paths), `mcp__server`,
//! `mcp__server__tool`, `mcp__server__*`, `Agent(Explore)`,
//! `WebFetch(domain:example.com)`. Anything else is refused with the rule
//! quoted, never dropped.

use crate::paths::PathPattern;

/// What a rule matches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pattern {
    /// Every use of the tool named.
    Tool(String),
    /// Every tool of an MCP server (`mcp__server`, `mcp__server__*`).
    McpServer(String),
    /// Bash commands.
    Bash(CommandPattern),
    /// Read, Grep and Glob of paths that match.
    Read(PathPattern),
    /// Write and Edit of paths that match.
    Edit(PathPattern),
    /// The `Agent` tool starting this agent type.
    Agent(String),
    /// Fetches from this domain (kept for when agentd has the tool).
    WebFetch(String),
}

/// A Bash rule's command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommandPattern {
    /// `cmd:*`: the command, alone or followed by arguments.
    Prefix(String),
    /// `*` anywhere (any text, spaces included).
    Glob(String),
    Exact(String),
}

impl CommandPattern {
    /// Whether the simple command `command` (words joined by one space)
    /// matches.
    pub fn matches(&self, command: &str) -> bool {
        match self {
            CommandPattern::Prefix(p) => {
                command == p
                    || command
                        .strip_prefix(p.as_str())
                        .is_some_and(|rest| rest.starts_with(' '))
            }
            CommandPattern::Exact(e) => command == e,
            CommandPattern::Glob(g) => glob_text(g, command),
        }
    }
}

/// `*` matches any text; everything else itself.
fn glob_text(pattern: &str, text: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !text.starts_with(first) || text.len() < first.len() + last.len() || !text.ends_with(last) {
        return false;
    }
    let mut rest = &text[first.len()..text.len() - last.len()];
    for middle in &parts[1..parts.len() - 1] {
        match rest.find(middle) {
            Some(i) => rest = &rest[i + middle.len()..],
            None => return false,
        }
    }
    true
}

/// A tool name as Claude Code's settings write them.
fn is_tool_name(name: &str) -> bool {
    !name.is_empty()
        && name.starts_with(|c: char| c.is_ascii_alphabetic())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// Parses `text` (one rule as written).
pub fn parse(text: &str) -> Result<Pattern, String> {
    let quoted = || {
        let short: String = text.chars().take(80).collect();
        if short.len() < text.len() {
            format!("{short:?}…")
        } else {
            format!("{short:?}")
        }
    };
    let bad = |why: &str| Err(format!("the rule {} {why}", quoted()));
    if text != text.trim() || text.is_empty() {
        return bad("is empty or padded with spaces");
    }
    let (name, spec) = match text.find('(') {
        None => (text, None),
        Some(open) => {
            let Some(inner) = text[open + 1..].strip_suffix(')') else {
                return bad("has no closing parenthesis at its end");
            };
            (&text[..open], Some(inner))
        }
    };
    let mcp_wildcard = name.starts_with("mcp__") && name.ends_with("__*");
    let named = is_tool_name(name) || (mcp_wildcard && is_tool_name(name.trim_end_matches("__*")));
    if !named {
        return bad("does not start with a tool name");
    }
    if let Some(server) = name.strip_prefix("mcp__") {
        if spec.is_some() {
            return bad("gives an MCP tool a specifier; write mcp__server or mcp__server__tool");
        }
        return match server.split_once("__") {
            None if !server.is_empty() => Ok(Pattern::McpServer(server.to_string())),
            Some((s, "*")) if !s.is_empty() => Ok(Pattern::McpServer(s.to_string())),
            Some((s, t)) if !s.is_empty() && !t.is_empty() => Ok(Pattern::Tool(name.to_string())),
            _ => bad("names no MCP server"),
        };
    }
    let Some(spec) = spec else {
        return Ok(Pattern::Tool(name.to_string()));
    };
    if spec.is_empty() {
        return bad("has an empty specifier; write the tool's name alone to match every use");
    }
    match name {
        "Bash" => {
            if let Some(prefix) = spec.strip_suffix(":*") {
                if prefix.is_empty() || prefix.contains('*') {
                    return bad("has a prefix that is empty or holds a *");
                }
                Ok(Pattern::Bash(CommandPattern::Prefix(prefix.to_string())))
            } else if spec.contains(":*") {
                bad("has :* other than at its end")
            } else if spec.contains('*') {
                Ok(Pattern::Bash(CommandPattern::Glob(spec.to_string())))
            } else {
                Ok(Pattern::Bash(CommandPattern::Exact(spec.to_string())))
            }
        }
        "Read" | "Edit" | "Write" => {
            let path =
                PathPattern::parse(spec).map_err(|why| format!("the rule {} {why}", quoted()))?;
            Ok(if name == "Read" {
                Pattern::Read(path)
            } else {
                Pattern::Edit(path)
            })
        }
        "Agent" | "Task" => {
            if is_tool_name(spec) {
                Ok(Pattern::Agent(spec.to_string()))
            } else {
                bad("names no agent type")
            }
        }
        "WebFetch" => match spec.strip_prefix("domain:") {
            Some(d) if !d.is_empty() && !d.contains(['/', ' ']) => {
                Ok(Pattern::WebFetch(d.to_ascii_lowercase()))
            }
            _ => bad("is not WebFetch(domain:HOST)"),
        },
        _ => bad("gives a specifier to a tool that takes none"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_form_parses() {
        assert_eq!(parse("Bash"), Ok(Pattern::Tool("Bash".into())));
        assert_eq!(parse("WebSearch"), Ok(Pattern::Tool("WebSearch".into())));
        assert_eq!(
            parse("Bash(npm run test:*)"),
            Ok(Pattern::Bash(CommandPattern::Prefix("npm run test".into())))
        );
        assert_eq!(
            parse("Bash(npm run *)"),
            Ok(Pattern::Bash(CommandPattern::Glob("npm run *".into())))
        );
        assert_eq!(
            parse("Bash(git status)"),
            Ok(Pattern::Bash(CommandPattern::Exact("git status".into())))
        );
        assert!(matches!(parse("Read(./src/**)"), Ok(Pattern::Read(_))));
        assert!(matches!(parse("Edit(~/notes/*.md)"), Ok(Pattern::Edit(_))));
        assert!(matches!(parse("Read(//etc/passwd)"), Ok(Pattern::Read(_))));
        assert_eq!(
            parse("mcp__github"),
            Ok(Pattern::McpServer("github".into()))
        );
        assert_eq!(
            parse("mcp__github__*"),
            Ok(Pattern::McpServer("github".into()))
        );
        assert_eq!(
            parse("mcp__github__create_issue"),
            Ok(Pattern::Tool("mcp__github__create_issue".into()))
        );
        assert_eq!(
            parse("Agent(Explore)"),
            Ok(Pattern::Agent("Explore".into()))
        );
        assert_eq!(
            parse("WebFetch(domain:Docs.rs)"),
            Ok(Pattern::WebFetch("docs.rs".into()))
        );
    }

    #[test]
    fn malformed_rules_are_refused_with_the_rule_quoted() {
        for bad in [
            "",
            " Bash",
            "Bash(",
            "Bash(ls",
            "Bash()",
            "Bash(:*)",
            "Bash(npm:* run)",
            "Bash(a*:*)",
            "(ls)",
            "1Bash",
            "Grep(foo)",
            "mcp__",
            "mcp__x(y)",
            "Agent(not a type)",
            "WebFetch(example.com)",
            "Read()",
        ] {
            let err = parse(bad).unwrap_err();
            assert!(err.contains(&format!("{bad:?}")), "{bad:?}: {err}");
        }
        let long = format!("Bash({}", "x".repeat(500));
        assert!(
            parse(&long).unwrap_err().len() < 200,
            "a long rule is quoted short"
        );
    }

    #[test]
    fn prefixes_end_at_a_word_and_globs_take_any_text() {
        let prefix = CommandPattern::Prefix("npm run test".into());
        assert!(prefix.matches("npm run test"));
        assert!(prefix.matches("npm run test -- --watch"));
        assert!(!prefix.matches("npm run testing"));
        assert!(!prefix.matches("npm run tes"));
        let glob = CommandPattern::Glob("git * --force".into());
        assert!(glob.matches("git push origin main --force"));
        assert!(!glob.matches("git push"));
        assert!(CommandPattern::Glob("npm run *".into()).matches("npm run build"));
        assert!(!CommandPattern::Exact("git status".into()).matches("git status -s"));
    }
}
