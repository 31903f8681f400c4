//! The values a fork is made of (DESIGN §6): how much history it keeps,
//! which tools it may run, and where it came from.

use std::fmt;

use super::ToolName;

/// The `subagent_type` of a fork.
pub const FORK_TYPE: &str = "fork";
/// Model turns a fork may take.
pub const FORK_MAX_TURNS: u32 = 200;

/// Who started an agent's run of queries; a fork's source is what the
/// first layer of the recursion guard checks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum QuerySource {
    /// Started by a client (`agentctl run`, `CreateAgent`).
    #[default]
    Client,
    /// A subagent started by another agent's `Agent` call.
    Subagent,
    /// A fork (`agent:builtin:fork`): from an `Agent` call or `ForkAgent`.
    Fork,
}

impl QuerySource {
    pub fn as_str(self) -> &'static str {
        match self {
            QuerySource::Client => "client",
            QuerySource::Subagent => "agent:subagent",
            QuerySource::Fork => "agent:builtin:fork",
        }
    }
}

/// How much of the parent's history a fork keeps (`fork_turns`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum ForkTurns {
    /// Everything (the default): the whole prefix is the parent's bytes.
    #[default]
    All,
    /// From the Nth-last real user turn on.
    Last(u32),
}

impl ForkTurns {
    /// `"all"`, empty (all), or a positive integer.
    pub fn parse(text: &str) -> Result<ForkTurns, String> {
        match text.trim() {
            "" | "all" => Ok(ForkTurns::All),
            t => match t.parse::<u32>() {
                Ok(0) => {
                    Err("fork_turns must be \"all\" or a positive number of turns, not 0".into())
                }
                Ok(n) => Ok(ForkTurns::Last(n)),
                Err(_) => Err(format!(
                    "fork_turns must be \"all\" or a positive number of turns, not '{}'",
                    super::text::quote(t)
                )),
            },
        }
    }
}

impl fmt::Display for ForkTurns {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ForkTurns::All => f.write_str("all"),
            ForkTurns::Last(n) => write!(f, "{n}"),
        }
    }
}

/// A checked list of tool names a fork is allowed (`fork_tools`, a
/// profile's `tools`): see [`parse_tool_allowlist`].
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct ToolAllowlist(Vec<ToolName>);

impl ToolAllowlist {
    pub fn parse(entries: &[String]) -> Result<ToolAllowlist, String> {
        parse_tool_allowlist(entries).map(ToolAllowlist)
    }

    pub fn tools(&self) -> &[ToolName] {
        &self.0
    }

    pub fn into_tools(self) -> Vec<ToolName> {
        self.0
    }
}

/// Which tools a fork asks to run, narrowing its parent's.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub enum ForkTools {
    /// Its parent's tools.
    #[default]
    Parent,
    /// Only these of its parent's (`fork_tools`).
    Only(ToolAllowlist),
    /// The tools of the named fork profile (`fork_profile`), read from the
    /// repository the parent works in.
    Profile(String),
}

impl ForkTools {
    /// A request's `fork_tools` (None: absent) and `fork_profile` (empty:
    /// absent); giving both is refused.
    pub fn parse(list: Option<&[String]>, profile: &str) -> Result<ForkTools, String> {
        match (list, profile) {
            (Some(_), p) if !p.is_empty() => {
                Err("fork_tools and fork_profile cannot be combined: give one".into())
            }
            (Some(list), _) => ToolAllowlist::parse(list).map(ForkTools::Only),
            (None, "") => Ok(ForkTools::Parent),
            (None, p) => Ok(ForkTools::Profile(p.to_string())),
        }
    }
}

/// Checks a `fork_tools` list (or a profile's `tools`) and returns the
/// tools it allows. Entries are exact tool names, `mcp__*`, or an
/// `mcp__<server>__` prefix ending in a single `*`; `*`, any other
/// wildcard, blank, padded or repeated entries are refused. An empty list
/// allows nothing. (agentd has no MCP tools yet: MCP patterns are valid and
/// allow nothing.)
pub fn parse_tool_allowlist(entries: &[String]) -> Result<Vec<ToolName>, String> {
    let mut allowed = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for (i, entry) in entries.iter().enumerate() {
        let at = format!("fork_tools[{i}]");
        if entry.trim().is_empty() {
            return Err(format!("{at} is blank: name a tool"));
        }
        if entry.trim() != entry {
            return Err(format!(
                "{at} '{}' has spaces around it: write the tool name alone",
                super::text::quote(entry)
            ));
        }
        if !seen.insert(entry.as_str()) {
            return Err(format!(
                "{at} '{}' is listed twice",
                super::text::quote(entry)
            ));
        }
        if entry.contains('*') {
            let valid_mcp = entry == "mcp__*"
                || (entry.starts_with("mcp__")
                    && entry.ends_with("__*")
                    && entry.matches('*').count() == 1
                    && entry.len() > "mcp____*".len());
            if !valid_mcp {
                return Err(format!(
                    "{at} '{}' is not allowed: the only wildcards are 'mcp__*' and 'mcp__<server>__*'",
                    super::text::quote(entry)
                ));
            }
            continue;
        }
        match ToolName::parse(entry) {
            Some(tool) => allowed.push(tool),
            None => {
                return Err(format!(
                    "{at} '{}' is not a tool: the tools are {}",
                    super::text::quote(entry),
                    ToolName::ALL.map(ToolName::as_str).join(", ")
                ));
            }
        }
    }
    Ok(allowed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn fork_turns_are_all_or_a_positive_count() {
        assert_eq!(ForkTurns::parse("all").unwrap(), ForkTurns::All);
        assert_eq!(ForkTurns::parse("").unwrap(), ForkTurns::All);
        assert_eq!(ForkTurns::parse("3").unwrap(), ForkTurns::Last(3));
        assert!(ForkTurns::parse("0").unwrap_err().contains("not 0"));
        assert!(ForkTurns::parse("-2").is_err());
        assert!(ForkTurns::parse("some").is_err());
    }

    #[test]
    fn tool_allowlists_follow_the_rules() {
        assert_eq!(
            parse_tool_allowlist(&list(&["Read", "Grep"])).unwrap(),
            vec![ToolName::Read, ToolName::Grep]
        );
        assert_eq!(parse_tool_allowlist(&list(&[])).unwrap(), vec![]);
        assert_eq!(
            parse_tool_allowlist(&list(&["Read", "mcp__*", "mcp__github__*"])).unwrap(),
            vec![ToolName::Read]
        );
        for (bad, says) in [
            ("*", "only wildcards"),
            ("Re*", "only wildcards"),
            ("mcp__gh*", "only wildcards"),
            ("mcp__a__*__*", "only wildcards"),
            ("", "blank"),
            ("  ", "blank"),
            (" Read", "spaces"),
            ("WebFetch", "is not a tool"),
        ] {
            let err = parse_tool_allowlist(&list(&[bad])).unwrap_err();
            assert!(err.contains(says), "{bad:?}: {err}");
        }
        let err = parse_tool_allowlist(&list(&["Read", "Read"])).unwrap_err();
        assert!(err.contains("listed twice"), "{err}");
    }
}
