//! The tools an agent can call (DESIGN §8): their declarations, as sent to
//! the model, and their execution.
//!
//! Names and input fields follow the ones models are trained on (Claude
//! Code's). A tool error is returned to the model as a `tool_result` with
//! `is_error: true` and a message it can act on; it never fails the agent.

use agentd_domain as domain;

mod bash;
mod beneath;
mod context;
mod edit;
mod glob;
mod grep;
pub mod hook_process;
mod input;
pub mod paths;
mod read;

pub mod server_process;
pub mod spool;
pub mod todo_write;
mod tool_process;
mod write;

use serde_json::Value;

use crate::domain::ToolName;

pub use context::{ToolContext, ToolEnv, ToolOutput, ToolSpec};
pub use tool_process::AgentProcesses;
pub use tool_process::ToolProcess;

/// Bash's output cap, shared with MCP tool results.
pub use bash::{MAX_OUTPUT_CHARS, truncate_middle};

/// The declarations of the built-in tools, in the order they are sent.
pub fn builtin_specs() -> Vec<ToolSpec> {
    vec![
        bash::spec(),
        read::spec(),
        write::spec(),
        edit::spec(),
        glob::spec(),
        grep::spec(),
        todo_write::spec(),
    ]
}

/// Runs the built-in tool `tool` with `input`. Malformed input is a tool
/// error, never a panic. The tools that reach other agents are the
/// supervisor's, and `TodoWrite` the turn loop's: they are not run here.
pub async fn run_tool(tool: ToolName, input: &Value, ctx: &ToolContext) -> ToolOutput {
    if matches!(tool, ToolName::Write | ToolName::Edit)
        && ctx
            .sandbox
            .as_ref()
            .is_some_and(|p| p.mode == crate::domain::SandboxMode::ReadOnly)
    {
        return ToolOutput::error(format!(
            "{tool} refused: read-only file system (this agent's sandbox is read-only; it may read anything and write nothing)."
        ));
    }
    let ran = match tool {
        ToolName::Bash => bash::run(input, ctx).await,
        ToolName::Read => read::run(input, ctx).await,
        ToolName::Write => write::run(input, ctx).await,
        ToolName::Edit => edit::run(input, ctx).await,
        ToolName::Glob => glob::run(input, ctx).await,
        ToolName::Grep => grep::run(input, ctx).await,
        ToolName::Agent | ToolName::SendMessage | ToolName::ListAgents | ToolName::TaskStop => Err(
            ToolOutput::error(format!("{tool} is run by the supervisor")),
        ),
        // It sets the agent's own plan, which only its turn loop writes.
        ToolName::TodoWrite => Err(ToolOutput::error(format!(
            "{tool} is run by the agent's turn loop"
        ))),
    };
    ToolOutput::either(ran)
}

/// One line a person can read for a tool call (shared with clients).
pub use agentd_shared::tool_summary::summarize;
