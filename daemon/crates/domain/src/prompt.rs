//! The frozen parts of an agent's requests.

use super::ToolAllowlist;

/// Rendered once at creation and stored (DESIGN §6): the system prompt and
/// the tools array, as sent. Later requests, revivals and forks reuse these
/// bytes and never render them again, so prompt caches keep matching.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PromptContext {
    /// JSON of the `system` field.
    pub system_json: Vec<u8>,
    /// JSON of the `tools` array.
    pub tools_json: Vec<u8>,
    /// Tools the agent may run; None means every declared tool.
    pub allowed_tools: Option<ToolAllowlist>,
    /// Its MCP servers and their tools as listed at creation (DESIGN
    /// §18), frozen with the tools array (JSON, `mcp::Setup`; empty: none).
    pub mcp_json: Vec<u8>,
}

/// One instruction file (`AGENTS.md`, `CLAUDE.md`…) read into an agent's
/// system prompt at creation (DESIGN §17).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InstructionFile {
    /// Where it was read.
    pub path: std::path::PathBuf,
    /// The bytes of it the prompt holds.
    pub bytes: u64,
    /// Its end was left out (a size limit was reached).
    pub cut: bool,
}

/// What an agent's system prompt holds of the instructions people keep:
/// the files read, in order, and what was left out and why.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct InstructionsLoaded {
    pub files: Vec<InstructionFile>,
    pub notes: Vec<String>,
    /// The agent was made without them (`--no-instructions`, or the
    /// config's `instructions = false`).
    pub skipped: bool,
}
