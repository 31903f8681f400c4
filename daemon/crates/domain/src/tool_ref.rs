//! Which tool a call names: one of agentd's own, or one an MCP server
//! provides (DESIGN §18), known by its wire name `mcp__<server>__<tool>`.

use std::fmt;

use super::ToolName;

/// The longest tool name the model APIs accept.
const MAX_WIRE_CHARS: usize = 64;

/// The name a model calls an MCP tool by: `mcp__` and then only letters,
/// digits, `_` and `-`, at most 64 characters.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct McpToolName(String);

impl McpToolName {
    pub fn parse(name: &str) -> Option<McpToolName> {
        let valid = name.len() > "mcp__".len()
            && name.len() <= MAX_WIRE_CHARS
            && name.starts_with("mcp__")
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        valid.then(|| McpToolName(name.to_string()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for McpToolName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A tool, built in or an MCP server's.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ToolRef {
    Builtin(ToolName),
    Mcp(McpToolName),
    /// A call of an external agent's (DESIGN §19) of a kind none of
    /// agentd's tools stands for.
    External(super::ExternalToolKind),
    /// Not a tool: a connection the agent's network proxy asks about
    /// (DESIGN §22). Never parsed from a name, never allowed "always" as
    /// a tool.
    Network,
}

impl ToolRef {
    /// The tool of that exact name: agentd's, or a well-formed MCP name.
    pub fn parse(name: &str) -> Option<ToolRef> {
        ToolName::parse(name)
            .map(ToolRef::Builtin)
            .or_else(|| McpToolName::parse(name).map(ToolRef::Mcp))
            .or_else(|| super::ExternalToolKind::parse(name).map(ToolRef::External))
    }

    pub fn as_str(&self) -> &str {
        match self {
            ToolRef::Builtin(t) => t.as_str(),
            ToolRef::Mcp(m) => m.as_str(),
            ToolRef::External(k) => k.as_str(),
            ToolRef::Network => "Network",
        }
    }
}

impl From<ToolName> for ToolRef {
    fn from(tool: ToolName) -> ToolRef {
        ToolRef::Builtin(tool)
    }
}

impl fmt::Display for ToolRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_builtin_or_well_formed_mcp_names() {
        assert_eq!(
            ToolRef::parse("Bash"),
            Some(ToolRef::Builtin(ToolName::Bash))
        );
        assert_eq!(
            ToolRef::parse("mcp__github__create_issue").map(|t| t.to_string()),
            Some("mcp__github__create_issue".into())
        );
        assert_eq!(ToolRef::parse("mcp__"), None);
        assert_eq!(ToolRef::parse("mcp__a b"), None);
        assert_eq!(ToolRef::parse("Teleport"), None);
        assert_eq!(ToolRef::parse(&format!("mcp__{}", "x".repeat(60))), None);
    }
}
