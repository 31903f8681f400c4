//! The frozen parts of an agent's requests.

use super::ToolName;

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
    pub allowed_tools: Option<Vec<ToolName>>,
}
