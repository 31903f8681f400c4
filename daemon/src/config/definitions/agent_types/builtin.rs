//! The built-in agent types: `general-purpose` and `Explore`.

use super::{AgentType, TypeOrigin};
use crate::config::definitions::type_mcp::TypeMcp;
use crate::domain::{FamilyLimits, Isolation, ToolAllowlist, ToolName};

/// Tools an Explore agent may run: it looks, it does not touch. Not
/// TodoWrite: an Explore agent answers a question in a few lookups, and a
/// plan for that would only be noise in `list`.
const READ_ONLY_TOOLS: [ToolName; 4] = [
    ToolName::Read,
    ToolName::Glob,
    ToolName::Grep,
    ToolName::ListAgents,
];

pub(super) fn builtin(name: &str) -> Option<AgentType> {
    match name {
        "general-purpose" => Some(AgentType {
            name: name.into(),
            description: "Researches, searches and carries out multi-step tasks with every tool"
                .into(),
            tools: None,
            model: None,
            background: false,
            permission_mode: None,
            isolation: Isolation::None,
            sandbox: None,
            network_allow: Vec::new(),
            mcp: TypeMcp::default(),
            origin: TypeOrigin::BuiltIn,
            limits: FamilyLimits::default(),
            budget: None,
            instructions: "You are a general-purpose agent working on a task delegated by \
another agent. Complete it autonomously with the tools you have, then answer with a concise \
report of what you did and found: your final message is all the delegating agent sees."
                .into(),
        }),
        "Explore" => Some(AgentType {
            name: name.into(),
            description: "Explores a codebase quickly: finds files, searches code, answers \
questions; never changes anything"
                .into(),
            tools: Some(ToolAllowlist::only(&READ_ONLY_TOOLS)),
            model: None,
            background: false,
            permission_mode: None,
            isolation: Isolation::None,
            sandbox: None,
            network_allow: Vec::new(),
            mcp: TypeMcp::default(),
            origin: TypeOrigin::BuiltIn,
            limits: FamilyLimits::default(),
            budget: None,
            instructions: "You are a read-only exploration agent. Find files with Glob, search \
contents with Grep, read with Read. You cannot and must not modify anything. Answer with the \
facts you found, citing file paths and line numbers."
                .into(),
        }),
        _ => None,
    }
}
