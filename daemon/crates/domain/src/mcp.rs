//! What an agent's record says of its MCP servers (DESIGN §18): each one's
//! name, how it is reached, and what listing it at creation gave. The
//! definitions themselves are frozen with the agent's prompt.

/// How a server is reached.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum McpTransport {
    Stdio,
    Http,
}

/// Where an agent's MCP server was defined (DESIGN §18). An agent gets
/// config.toml's servers, then those passed with its creation request (an
/// editor's ACP `session/new`), which replace a config server of the same
/// name.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum McpSource {
    /// `[mcp_servers.NAME]` in config.toml.
    #[default]
    Config,
    /// Passed with the request that created the agent (`CreateAgentRequest`
    /// `mcp_servers`; an editor's `mcpServers`), or inherited from a parent
    /// that was given it so.
    Editor,
    /// The repository's `.mcp.json`, approved by the person.
    Repository,
    /// The agent's type's front matter (`mcpServers`): a type file of the
    /// person's own, or a repository's the person approved.
    AgentType,
}

/// One of an agent's MCP servers, as listed at its creation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct McpServerSummary {
    pub name: String,
    pub transport: McpTransport,
    /// Tools it offered (0 when it offered none: see `error`).
    pub tools: u32,
    /// Why it offered no tools: it did not start or did not list them.
    pub error: Option<String>,
    /// It runs under the agent's sandbox (its definition did not say
    /// `sandbox = "off"`).
    pub sandboxed: bool,
    pub source: McpSource,
}
