//! The frozen parts of an agent's requests, rendered once at creation and
//! stored (DESIGN §6): a later request, a revival or a fork reuses these
//! bytes and never renders them again, so prompt caches keep matching.

use std::path::Path;

use serde_json::{Value, json};

use super::orchestration;
use crate::config::agent_types::AgentType;
use crate::domain::{ExternalAgentName, PromptContext, json_bytes};
use crate::tools;

/// Renders the system prompt and the tools array for a new agent: a
/// top-level one (`agent_type` None) or a subagent of a type.
/// `instructions`: the block of project instructions (DESIGN §17), a
/// system block of its own after agentd's.
pub fn render(
    cwd: &Path,
    now_ms: i64,
    agent_type: Option<&AgentType>,
    instructions: Option<&str>,
) -> PromptContext {
    let date = humantime::format_rfc3339_seconds(
        std::time::UNIX_EPOCH + std::time::Duration::from_millis(now_ms.max(0) as u64),
    )
    .to_string();
    let intro = agent_type.map_or(TOP_LEVEL_INTRO, |t| t.instructions.as_str());
    let system = format!(
        "{intro}\n\
\n\
Environment:\n\
- Working directory: {cwd}\n\
- Platform: {os}\n\
- Started: {date}\n\
\n\
Guidelines:\n\
- File tools take paths inside the working directory; relative paths resolve against it.\n\
- Read a file before you edit it, and prefer Edit for small changes to existing files.\n\
- Use Glob and Grep to find things rather than guessing paths.\n\
- Bash runs non-interactively in the working directory; commands that wait for input will hang \
until their timeout.\n\
- When a tool returns an error, read the message and adjust; do not repeat the same call unchanged.\n\
- Do not ask the user questions: nobody may be watching. Make reasonable assumptions and say \
which ones you made.\n\
- Subagents (the Agent tool) do not see this conversation: give them complete prompts. A \
background agent reports back later as a <task-notification> user message.",
        cwd = cwd.display(),
        os = std::env::consts::OS,
    );
    let mut blocks = vec![json!({ "type": "text", "text": system })];
    if let Some(text) = instructions {
        blocks.push(json!({ "type": "text", "text": text }));
    }
    let system_json = Value::Array(blocks);
    let allowed = agent_type.and_then(|t| t.tools.as_ref());
    let tools_json: Vec<Value> = tools::builtin_specs()
        .into_iter()
        .chain(orchestration::specs())
        .filter(|t| allowed.is_none_or(|a| a.tools().iter().any(|n| n.as_str() == t.name)))
        .map(|t| {
            json!({
                "name": t.name,
                "description": t.description,
                "input_schema": t.input_schema,
            })
        })
        .collect();
    PromptContext {
        system_json: json_bytes(&system_json),
        tools_json: json_bytes(&Value::Array(tools_json)),
        allowed_tools: allowed.cloned(),
        mcp_json: Vec::new(),
    }
}

/// The `Agent` tool's description in `tools_json` with the external
/// agents (DESIGN §19) it can hand a task to named; unchanged when there
/// are none or the agent has no `Agent` tool.
pub fn mention_external_agents(tools_json: &[u8], names: &[ExternalAgentName]) -> Vec<u8> {
    let Ok(Value::Array(mut tools)) = serde_json::from_slice::<Value>(tools_json) else {
        return tools_json.to_vec();
    };
    if names.is_empty() {
        return tools_json.to_vec();
    }
    let list: Vec<&str> = names.iter().map(ExternalAgentName::as_str).collect();
    for tool in tools.iter_mut().filter(|t| t["name"] == "Agent") {
        let described = tool["description"].as_str().unwrap_or("").to_string();
        tool["description"] = Value::from(format!(
            "{described}\nOther coding agents installed here can take a task too: `subagent_type` \
one of {}. Each runs in its own process with its own model and tools, in your working directory \
(or its own worktree with isolation \"worktree\"); it does not see this conversation.",
            list.join(", ")
        ));
    }
    json_bytes(&Value::Array(tools))
}

const TOP_LEVEL_INTRO: &str = "You are a coding agent supervised by agentd. You work \
autonomously on the task in the user's message, using the tools you are given, and finish with \
a concise final answer that states what you did and what you found.";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rendering_is_deterministic_and_declares_every_tool() {
        let a = render(Path::new("/repo"), 1_700_000_000_000, None, None);
        let b = render(Path::new("/repo"), 1_700_000_000_000, None, None);
        assert_eq!(a, b);
        let tools: Vec<Value> = serde_json::from_slice(&a.tools_json).unwrap();
        let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
        assert_eq!(
            names,
            [
                "Bash",
                "Read",
                "Write",
                "Edit",
                "Glob",
                "Grep",
                "TodoWrite",
                "Agent",
                "SendMessage",
                "ListAgents",
                "TaskStop"
            ]
        );
        assert!(
            a.allowed_tools.is_none(),
            "top-level agents may run every tool"
        );
        let system: Value = serde_json::from_slice(&a.system_json).unwrap();
        assert!(system[0]["text"].as_str().unwrap().contains("/repo"));
        assert_eq!(system.as_array().unwrap().len(), 1, "no instructions block");
    }

    #[test]
    fn external_agents_are_named_in_the_agent_tool_only_when_there_are_some() {
        let p = render(Path::new("/repo"), 0, None, None);
        assert_eq!(mention_external_agents(&p.tools_json, &[]), p.tools_json);
        let names = [ExternalAgentName::parse("claude-code").unwrap()];
        let tools: Value =
            serde_json::from_slice(&mention_external_agents(&p.tools_json, &names)).unwrap();
        let agent = tools
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == "Agent")
            .unwrap();
        assert!(
            agent["description"]
                .as_str()
                .unwrap()
                .contains("one of claude-code.")
        );
        let bash = tools
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == "Bash")
            .unwrap();
        assert!(
            !bash["description"]
                .as_str()
                .unwrap()
                .contains("claude-code")
        );
    }

    #[test]
    fn instructions_are_a_system_block_of_their_own_after_agentds() {
        let p = render(
            Path::new("/repo"),
            0,
            None,
            Some("Contents of AGENTS.md: x"),
        );
        let system: Value = serde_json::from_slice(&p.system_json).unwrap();
        assert_eq!(system[1]["text"], "Contents of AGENTS.md: x");
        assert!(system[0]["text"].as_str().unwrap().contains("coding agent"));
    }
}
