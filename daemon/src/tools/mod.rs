//! The tools an agent can call (DESIGN §8): their declarations, as sent to
//! the model, and their execution.
//!
//! Names and input fields follow the ones models are trained on (Claude
//! Code's). A tool error is returned to the model as a `tool_result` with
//! `is_error: true` and a message it can act on; it never fails the agent.

mod bash;
mod edit;
mod glob;
mod grep;
pub mod paths;
mod read;
mod write;

use std::path::PathBuf;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// What a tool call needs from its agent.
#[derive(Debug, Clone)]
pub struct ToolContext {
    /// The agent's working directory: the root that file tools are contained in
    /// and the cwd of Bash commands.
    pub cwd: PathBuf,
    /// Cancelled when the agent is cancelled; long-running tools stop promptly.
    pub cancel: CancellationToken,
}

/// The result of one tool call, as it goes back to the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutput {
    pub content: String,
    pub is_error: bool,
}

impl ToolOutput {
    pub fn ok(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            is_error: false,
        }
    }

    pub fn error(content: impl Into<String>) -> Self {
        Self {
            content: content.into(),
            is_error: true,
        }
    }
}

/// A tool's declaration in the Anthropic Messages `tools` array.
#[derive(Debug, Clone)]
pub struct ToolSpec {
    pub name: &'static str,
    pub description: &'static str,
    pub input_schema: Value,
}

/// The declarations of the built-in tools, in the order they are sent.
pub fn builtin_specs() -> Vec<ToolSpec> {
    vec![
        bash::spec(),
        read::spec(),
        write::spec(),
        edit::spec(),
        glob::spec(),
        grep::spec(),
    ]
}

/// Runs the tool `name` with `input`. Unknown tools and malformed input are
/// tool errors, never panics.
pub async fn run_tool(name: &str, input: &Value, ctx: &ToolContext) -> ToolOutput {
    match name {
        "Bash" => bash::run(input, ctx).await,
        "Read" => read::run(input, ctx).await,
        "Write" => write::run(input, ctx).await,
        "Edit" => edit::run(input, ctx).await,
        "Glob" => glob::run(input, ctx).await,
        "Grep" => grep::run(input, ctx).await,
        other => ToolOutput::error(format!(
            "No such tool: {other}. Available tools: Bash, Read, Write, Edit, Glob, Grep."
        )),
    }
}

/// One line a person can read for a tool call (shared with clients).
pub use agentd_shared::tool_summary::summarize;
