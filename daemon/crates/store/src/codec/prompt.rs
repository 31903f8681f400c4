//! An agent's frozen prompt context on disk (`v1/prompts`): the system
//! and tools bytes as sent, the tools it may run, its MCP setup.

use prost::Message;

use super::Corrupt;
use crate::domain::{PromptContext, ToolAllowlist};

#[derive(Clone, PartialEq, prost::Message)]
struct StoredPrompt {
    #[prost(bytes = "vec", tag = "1")]
    system_json: Vec<u8>,
    #[prost(bytes = "vec", tag = "2")]
    tools_json: Vec<u8>,
    /// With `restricted` false and no names: every declared tool.
    #[prost(string, repeated, tag = "3")]
    allowed_tools: Vec<String>,
    /// The list is an allowlist even when empty (no tool at all).
    #[prost(bool, tag = "4")]
    restricted: bool,
    /// The MCP servers and tools frozen at creation (`mcp::Setup` JSON).
    #[prost(bytes = "vec", tag = "5")]
    mcp_json: Vec<u8>,
}

pub fn encode_prompt(p: &PromptContext) -> Vec<u8> {
    StoredPrompt {
        system_json: p.system_json.clone(),
        tools_json: p.tools_json.clone(),
        allowed_tools: p
            .allowed_tools
            .as_ref()
            .map(ToolAllowlist::names)
            .unwrap_or_default(),
        restricted: p.allowed_tools.is_some(),
        mcp_json: p.mcp_json.clone(),
    }
    .encode_to_vec()
}

pub fn decode_prompt(bytes: &[u8]) -> Result<PromptContext, Corrupt> {
    let s = StoredPrompt::decode(bytes)?;
    let allowed_tools = if s.allowed_tools.is_empty() && !s.restricted {
        None
    } else {
        // An entry this agentd does not know is left out: less, never more.
        Some(ToolAllowlist::lenient(
            s.allowed_tools.iter().map(String::as_str),
        ))
    };
    Ok(PromptContext {
        system_json: s.system_json,
        tools_json: s.tools_json,
        allowed_tools,
        mcp_json: s.mcp_json,
    })
}
