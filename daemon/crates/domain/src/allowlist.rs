//! Which tools an agent may run when they are limited to a list: a fork's
//! `fork_tools`, a fork profile's or an agent type's `tools`. Entries are
//! agentd's tool names and MCP tools (DESIGN §18): an exact
//! `mcp__<server>__<tool>`, every tool of a server (`mcp__<server>__*`), or
//! every MCP tool (`mcp__*`).

use std::collections::HashSet;

use super::text::quote;
use super::{McpToolName, ToolName};

/// MCP tools an allowlist names.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum McpPattern {
    /// `mcp__*`.
    All,
    /// `mcp__<server>__*`: the prefix `mcp__<server>__`.
    Server(String),
    /// One tool.
    Tool(McpToolName),
}

impl McpPattern {
    fn parse(entry: &str) -> Option<McpPattern> {
        if entry == "mcp__*" {
            return Some(McpPattern::All);
        }
        if let Some(prefix) = entry.strip_suffix('*') {
            let server = prefix.strip_prefix("mcp__")?.strip_suffix("__")?;
            let valid = !server.is_empty()
                && server
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
            return valid.then(|| McpPattern::Server(prefix.to_string()));
        }
        McpToolName::parse(entry).map(McpPattern::Tool)
    }

    fn matches(&self, tool: &McpToolName) -> bool {
        match self {
            McpPattern::All => true,
            McpPattern::Server(prefix) => tool.as_str().starts_with(prefix.as_str()),
            McpPattern::Tool(t) => t == tool,
        }
    }

    /// The tools both patterns name, as a pattern (None: none).
    fn and(&self, other: &McpPattern) -> Option<McpPattern> {
        match (self, other) {
            (McpPattern::All, p) | (p, McpPattern::All) => Some(p.clone()),
            (McpPattern::Server(a), McpPattern::Server(b)) => {
                (a == b).then(|| McpPattern::Server(a.clone()))
            }
            (McpPattern::Server(_), McpPattern::Tool(t))
            | (McpPattern::Tool(t), McpPattern::Server(_)) => {
                (self.matches(t) && other.matches(t)).then(|| McpPattern::Tool(t.clone()))
            }
            (McpPattern::Tool(a), McpPattern::Tool(b)) => {
                (a == b).then(|| McpPattern::Tool(a.clone()))
            }
        }
    }

    fn as_string(&self) -> String {
        match self {
            McpPattern::All => "mcp__*".into(),
            McpPattern::Server(prefix) => format!("{prefix}*"),
            McpPattern::Tool(t) => t.as_str().to_string(),
        }
    }
}

/// A checked list of the tools an agent may run.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct ToolAllowlist {
    tools: Vec<ToolName>,
    mcp: Vec<McpPattern>,
}

impl ToolAllowlist {
    /// A `fork_tools` list or a profile's `tools`, strictly: `*`, any other
    /// wildcard, unknown, blank, padded or repeated entries are refused.
    /// An empty list allows nothing.
    pub fn parse(entries: &[String]) -> Result<ToolAllowlist, String> {
        let mut list = ToolAllowlist::default();
        let mut seen = HashSet::new();
        for (i, entry) in entries.iter().enumerate() {
            let at = format!("fork_tools[{i}]");
            if entry.trim().is_empty() {
                return Err(format!("{at} is blank: name a tool"));
            }
            if entry.trim() != entry {
                return Err(format!(
                    "{at} '{}' has spaces around it: write the tool name alone",
                    quote(entry)
                ));
            }
            if !seen.insert(entry.as_str()) {
                return Err(format!("{at} '{}' is listed twice", quote(entry)));
            }
            if let Some(tool) = ToolName::parse(entry) {
                list.tools.push(tool);
            } else if let Some(pattern) = McpPattern::parse(entry) {
                list.mcp.push(pattern);
            } else if entry.contains('*') {
                return Err(format!(
                    "{at} '{}' is not allowed: the only wildcards are 'mcp__*' and 'mcp__<server>__*'",
                    quote(entry)
                ));
            } else {
                return Err(format!(
                    "{at} '{}' is not a tool: the tools are {} and MCP tools (mcp__<server>__<tool>)",
                    quote(entry),
                    ToolName::ALL.map(ToolName::as_str).join(", ")
                ));
            }
        }
        Ok(list)
    }

    /// A list read leniently (an agent type's `tools`, a stored list): an
    /// entry agentd does not know is left out, so the list allows less,
    /// never more.
    pub fn lenient<'a>(entries: impl IntoIterator<Item = &'a str>) -> ToolAllowlist {
        let mut list = ToolAllowlist::default();
        for entry in entries {
            if let Some(tool) = ToolName::parse(entry) {
                if !list.tools.contains(&tool) {
                    list.tools.push(tool);
                }
            } else if let Some(pattern) = McpPattern::parse(entry)
                && !list.mcp.contains(&pattern)
            {
                list.mcp.push(pattern);
            }
        }
        list
    }

    /// Exactly these built-in tools.
    pub fn only(tools: &[ToolName]) -> ToolAllowlist {
        ToolAllowlist {
            tools: tools.to_vec(),
            mcp: Vec::new(),
        }
    }

    /// The built-in tools it allows.
    pub fn tools(&self) -> &[ToolName] {
        &self.tools
    }

    pub fn allows(&self, tool: ToolName) -> bool {
        self.tools.contains(&tool)
    }

    pub fn allows_mcp(&self, tool: &McpToolName) -> bool {
        self.mcp.iter().any(|p| p.matches(tool))
    }

    /// Whether it allows any MCP tool at all.
    pub fn has_mcp(&self) -> bool {
        !self.mcp.is_empty()
    }

    /// The tools both lists allow (a fork narrowing its parent's).
    pub fn and(&self, other: &ToolAllowlist) -> ToolAllowlist {
        let mut mcp: Vec<McpPattern> = Vec::new();
        for a in &self.mcp {
            for b in &other.mcp {
                if let Some(p) = a.and(b)
                    && !mcp.contains(&p)
                {
                    mcp.push(p);
                }
            }
        }
        ToolAllowlist {
            tools: other
                .tools
                .iter()
                .copied()
                .filter(|t| self.tools.contains(t))
                .collect(),
            mcp,
        }
    }

    /// Its entries as written (and stored), built-in tools first.
    pub fn names(&self) -> Vec<String> {
        self.tools
            .iter()
            .map(|t| t.as_str().to_string())
            .chain(self.mcp.iter().map(McpPattern::as_string))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    fn mcp(name: &str) -> McpToolName {
        McpToolName::parse(name).unwrap()
    }

    #[test]
    fn tool_allowlists_follow_the_rules() {
        let l = ToolAllowlist::parse(&list(&["Read", "Grep"])).unwrap();
        assert_eq!(l.tools(), [ToolName::Read, ToolName::Grep]);
        assert!(!l.has_mcp());
        assert_eq!(
            ToolAllowlist::parse(&list(&[])).unwrap(),
            ToolAllowlist::default()
        );
        let l = ToolAllowlist::parse(&list(&["Read", "mcp__github__*", "mcp__db__query"])).unwrap();
        assert_eq!(l.tools(), [ToolName::Read]);
        assert!(l.allows_mcp(&mcp("mcp__github__create_issue")));
        assert!(l.allows_mcp(&mcp("mcp__db__query")));
        assert!(!l.allows_mcp(&mcp("mcp__db__drop")));
        assert!(!l.allows_mcp(&mcp("mcp__githubx__list")));
        assert!(
            ToolAllowlist::parse(&list(&["mcp__*"]))
                .unwrap()
                .allows_mcp(&mcp("mcp__a__b"))
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
            let err = ToolAllowlist::parse(&list(&[bad])).unwrap_err();
            assert!(err.contains(says), "{bad:?}: {err}");
        }
        let err = ToolAllowlist::parse(&list(&["Read", "Read"])).unwrap_err();
        assert!(err.contains("listed twice"), "{err}");
    }

    #[test]
    fn narrowing_allows_only_what_both_lists_allow() {
        let parent =
            ToolAllowlist::parse(&list(&["Read", "Bash", "mcp__github__*", "mcp__db__query"]))
                .unwrap();
        let asked =
            ToolAllowlist::parse(&list(&["Read", "Grep", "mcp__*", "mcp__github__list"])).unwrap();
        let both = parent.and(&asked);
        assert_eq!(both.tools(), [ToolName::Read]);
        assert!(both.allows_mcp(&mcp("mcp__github__create")));
        assert!(both.allows_mcp(&mcp("mcp__db__query")));
        assert!(!both.allows_mcp(&mcp("mcp__db__drop")));
        let narrow = ToolAllowlist::parse(&list(&["mcp__db__*"])).unwrap();
        let none = ToolAllowlist::parse(&list(&["mcp__github__*"]))
            .unwrap()
            .and(&narrow);
        assert!(!none.has_mcp());
    }

    #[test]
    fn lenient_lists_leave_out_what_they_do_not_know_and_round_trip() {
        let l = ToolAllowlist::lenient(["Read", "WebFetch", "mcp__gh__*", "mcp__x__y", "Read"]);
        assert_eq!(l.names(), ["Read", "mcp__gh__*", "mcp__x__y"]);
        assert_eq!(
            ToolAllowlist::lenient(l.names().iter().map(String::as_str)),
            l
        );
    }
}
