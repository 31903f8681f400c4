//! The results recorded for tool calls that did not run to the end: calls
//! a stop came before (not run), a call a cancel cut short, and calls a
//! daemon crash interrupted (DESIGN §5). Each tells the model what it can
//! know and what to check.

use crate::agent::run::RunEnd;
use crate::domain::{AgentRecord, ToolName};
use crate::tools::ToolOutput;

/// Where a call that never started was when the agent stopped.
#[derive(Debug, Clone, PartialEq)]
pub enum Before {
    /// Before its turn came.
    Start,
    /// While its permission was being asked.
    Answer,
    /// A PreToolUse hook stopped the agent (`continue: false`), for this
    /// reason.
    Hook(String),
}

/// A call that never started: a stop came first.
pub fn not_run(tool: impl std::fmt::Display, stop: &RunEnd, at: &Before) -> ToolOutput {
    if let Before::Hook(why) = at {
        return ToolOutput::error(format!(
            "Not run: a PreToolUse hook stopped the agent before this {tool} call ({why}). Nothing of it happened; make it again if it is still needed."
        ));
    }
    let why = match stop {
        RunEnd::Paused => "the agent was paused",
        RunEnd::Interrupted => "agentd was shutting down",
        RunEnd::Cancelled => "the agent was cancelled",
        RunEnd::Halted => "the agent was interrupted",
        RunEnd::BudgetExhausted(_) => "its family's budget is spent",
        RunEnd::Completed(_) | RunEnd::Failed(_) | RunEnd::Unchanged(_) => "the agent stopped",
    };
    let when = if *at == Before::Answer {
        "while it waited for permission to run it"
    } else {
        "before it started"
    };
    ToolOutput::error(format!(
        "Not run: {why} {when}. Nothing of this {tool} call happened; make it again if it is still needed."
    ))
}

/// A call a cancel or an interrupt cut short.
pub fn cut_short(tool: impl std::fmt::Display, stop: &RunEnd) -> ToolOutput {
    let what = if *stop == RunEnd::Halted {
        "interrupted"
    } else {
        "cancelled"
    };
    ToolOutput::error(format!(
        "The agent was {what} while this {tool} call ran; it was stopped and may have run partly."
    ))
}

/// An MCP call whose result a daemon crash kept from being recorded.
pub fn mcp_by_restart(tool: &str) -> ToolOutput {
    ToolOutput::error(format!(
        "Interrupted: agentd was restarted while this {tool} call was running, so its result was \
never recorded. Its server may have carried it out partly or fully: check before you repeat it."
    ))
}

/// A call whose result a daemon crash kept from being recorded. `output`
/// is what it had captured; `started` the agent an `Agent` call started.
pub fn by_restart(
    tool: ToolName,
    output: Option<String>,
    started: Option<AgentRecord>,
) -> ToolOutput {
    let mut text = format!(
        "Interrupted: agentd was restarted while this {tool} call was running, so its result was \
never recorded. It may have run partly or fully: check its effects before you repeat it."
    );
    if let Some(child) = started {
        text.push_str(&format!(
            "\nIt had started agent {} ({}). That agent resumes on its own in the background and \
you will receive a <task-notification> when it ends; do not start it again.",
            child.short_id, child.id
        ));
    }
    match output {
        Some(out) => text.push_str(&format!("\nOutput captured before the restart:\n{out}")),
        None if tool == ToolName::Bash => text.push_str("\nNo output was captured."),
        None => {}
    }
    ToolOutput::error(text)
}
