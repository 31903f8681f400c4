//! Declarations of the tools that act on other agents (DESIGN §8): `Agent`,
//! `SendMessage`, `ListAgents`, `TaskStop`. The supervisor runs them.

use serde_json::json;

use crate::tools::ToolSpec;

pub fn specs() -> Vec<ToolSpec> {
    vec![
        ToolSpec {
            name: "Agent",
            description: "Starts a subagent on a task and returns its answer. Give a short \
`description` (3-5 words) and a complete `prompt`: the subagent does not see this \
conversation. `subagent_type` picks a specialist (general-purpose by default; Explore for \
read-only searches). With `run_in_background: true` the call returns at once with the agent's \
id and you receive a <task-notification> user message when it ends; do not poll for it. \
Launch independent agents in one message to run them in parallel.\n\
`subagent_type: \"fork\"` starts a fork instead: a copy of you that sees this whole \
conversation and works on the directive in `prompt`, always in the background. Forks are cheap \
(they share your cached context): launch several in one message for independent parts of a \
task. For forks only: `fork_turns` (\"all\" or how many of the latest user turns to keep), \
`fork_tools` (the only tools the fork may run) or `fork_profile` (a named set of tools).",
            input_schema: json!({
                "type": "object",
                "properties": {
                    "description": {"type": "string", "description": "A short (3-5 word) description of the task"},
                    "prompt": {"type": "string", "description": "The task, with everything the agent needs to do it alone"},
                    "subagent_type": {"type": "string", "description": "The type of agent to use"},
                    "run_in_background": {"type": "boolean", "description": "Return at once and be notified when the agent ends"},
                    "name": {"type": "string", "description": "A short name to address the agent by"},
                    "model": {"type": "string", "description": "Model override as <scheme>:<name>"},
                    "isolation": {"type": "string", "enum": ["worktree"]},
                    "working_dir": {"type": "string"},
                    "fork_turns": {"type": "string", "description": "Forks only: \"all\" (default) or N, to keep history from the Nth-last user turn"},
                    "fork_tools": {"type": "array", "items": {"type": "string"}, "description": "Forks only: the tools the fork may run (exact names, or mcp__<server>__*)"},
                    "fork_profile": {"type": "string", "description": "Forks only: a profile in .agentd/fork-profiles/, instead of fork_tools"}
                },
                "required": ["description", "prompt"],
                "additionalProperties": false
            }),
        },
        ToolSpec {
            name: "SendMessage",
            description: "Sends a message to one of your subagents or sibling agents (by id, \
id prefix or name). A running agent gets it at its next turn boundary; a completed, paused or \
interrupted one is woken to act on it. Failed and cancelled agents cannot be messaged.",
            input_schema: json!({
                "type": "object",
                "properties": {
                    "to": {"type": "string", "description": "The agent's id, id prefix or name"},
                    "message": {"type": "string"}
                },
                "required": ["to", "message"],
                "additionalProperties": false
            }),
        },
        ToolSpec {
            name: "ListAgents",
            description: "Lists your subagents and your sibling agents: id, type, description, \
status, whether it can be messaged, and why not.",
            input_schema: json!({
                "type": "object",
                "properties": {},
                "additionalProperties": false
            }),
        },
        ToolSpec {
            name: "TaskStop",
            description: "Cancels one of your subagents (and its own subagents) by id, id prefix \
or name.",
            input_schema: json!({
                "type": "object",
                "properties": {
                    "task_id": {"type": "string"}
                },
                "required": ["task_id"],
                "additionalProperties": false
            }),
        },
    ]
}
