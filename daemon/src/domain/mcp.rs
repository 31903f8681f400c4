//! What an agent's record says of its MCP servers (DESIGN §18): each one's
//! name, how it is reached, and what listing it at creation gave. The
//! definitions themselves are frozen with the agent's prompt.

/// How a server is reached.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum McpTransport {
    Stdio,
    Http,
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
}
