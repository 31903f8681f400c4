//! What the MCP end-to-end tests share: the fixture servers, a model's
//! call of a tool, and reading what a server or an agent says of them.

#![allow(clippy::unwrap_used)] // Tests: a panic is the failure report.

use std::path::Path;

use agentd_e2e::mcp_fixtures::{self, McpFixtures};
use agentd_e2e::mock::{Block, MockMessage, Reply};
use serde_json::Value;

/// The fixture servers, installed on first use.
pub fn fixtures() -> McpFixtures {
    mcp_fixtures::setup().unwrap_or_else(|e| panic!("the MCP fixtures cannot be set up: {e}"))
}

/// A TOML string.
pub fn quoted(s: &str) -> String {
    serde_json::to_string(s).unwrap()
}

/// The model calls `tool` with `input`.
pub fn call(id: &str, tool: &str, input: Value) -> Reply {
    Reply::Message(MockMessage::text(format!("calling {tool}")).with(Block::tool(id, tool, input)))
}

/// Times a server was started: the lines of `log` that say so.
pub fn starts(log: &Path) -> usize {
    std::fs::read_to_string(log)
        .map(|t| t.lines().filter(|l| l.starts_with("started")).count())
        .unwrap_or(0)
}

/// The MCP tools among a request's tool names.
pub fn mcp_tools(names: &[String]) -> Vec<&String> {
    names.iter().filter(|n| n.starts_with("mcp__")).collect()
}

/// An agent's MCP notes, from `show --json`.
pub fn notes(shown: &Value) -> Vec<String> {
    shown["mcp_notes"]
        .as_array()
        .unwrap_or_else(|| panic!("mcp_notes in show --json: {shown}"))
        .iter()
        .map(|n| n.as_str().unwrap().to_string())
        .collect()
}
