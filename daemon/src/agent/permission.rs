//! What an agent's permission mode says about a tool call (DESIGN §8): in
//! `default` mode Bash, Write and Edit ask; in `accept-edits` only Bash;
//! `plan` refuses them; `bypass` never asks. An MCP tool (DESIGN §18) asks
//! in `default` and `accept-edits` mode and is refused in `plan` mode
//! unless its server marks it read-only. Where an ask goes and who may
//! answer it is the supervisor's (`supervisor::asks`).

use crate::domain::{
    AgentId, AgentRecord, ExternalToolKind, McpToolName, PermissionMode, ShortId, ToolName, ToolRef,
};

/// What the mode says about one tool call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Gate {
    Allow,
    Ask,
    Refuse(String),
}

pub fn gate(record: &AgentRecord, tool: ToolName) -> Gate {
    let edit = matches!(tool, ToolName::Write | ToolName::Edit);
    let shell = tool == ToolName::Bash;
    if !edit && !shell {
        return Gate::Allow;
    }
    if record.always_allowed.contains(&ToolRef::Builtin(tool)) {
        return Gate::Allow;
    }
    match record.permission_mode {
        PermissionMode::Bypass => Gate::Allow,
        PermissionMode::AcceptEdits if edit => Gate::Allow,
        PermissionMode::AcceptEdits | PermissionMode::Default => Gate::Ask,
        PermissionMode::Plan => Gate::Refuse(format!(
            "{tool} is not available in plan mode: this agent may only read. Describe the change you would make instead."
        )),
    }
}

/// What the mode says about a call of an MCP tool; `read_only`: the server
/// annotated it `readOnlyHint`.
pub fn gate_mcp(record: &AgentRecord, tool: &McpToolName, read_only: bool) -> Gate {
    if read_only || record.always_allowed.contains(&ToolRef::Mcp(tool.clone())) {
        return Gate::Allow;
    }
    match record.permission_mode {
        PermissionMode::Bypass => Gate::Allow,
        PermissionMode::AcceptEdits | PermissionMode::Default => Gate::Ask,
        PermissionMode::Plan => Gate::Refuse(format!(
            "{tool} is not available in plan mode: its server does not mark it read-only, and this agent may only read."
        )),
    }
}

/// What the mode says about an external agent's call (DESIGN §19) of a
/// kind no tool of agentd's stands for: `think` never asks; the others ask
/// in `default` and `accept-edits` mode and are refused in `plan` mode —
/// except `switch_mode`, an agent asking to leave plan mode, which asks.
pub fn gate_external(record: &AgentRecord, kind: ExternalToolKind) -> Gate {
    if kind == ExternalToolKind::Think || record.always_allowed.contains(&ToolRef::External(kind)) {
        return Gate::Allow;
    }
    match record.permission_mode {
        PermissionMode::Bypass => Gate::Allow,
        PermissionMode::AcceptEdits | PermissionMode::Default => Gate::Ask,
        PermissionMode::Plan if kind == ExternalToolKind::SwitchMode => Gate::Ask,
        PermissionMode::Plan => Gate::Refuse(format!(
            "{} calls are not available in plan mode: this agent may only read.",
            kind.as_str()
        )),
    }
}

/// An open question to the user: may this agent run this tool call?
#[derive(Debug, Clone, PartialEq)]
pub struct PermissionAsk {
    pub request_id: String,
    /// The tool call it asks about (its tool_use block's id).
    pub tool_use_id: String,
    pub agent: AgentId,
    pub agent_short: ShortId,
    pub tool: ToolRef,
    pub input_json: String,
    pub summary: String,
    /// The allow rules an answer "always, remembered" keeps
    /// (`agentd_rules::remember`); empty when none can be written.
    pub remember: Vec<String>,
}

/// How a user answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    AllowOnce,
    AllowAlways,
    /// A network ask only: this host for every agent (`Supervisor::answer`
    /// refuses it for a tool).
    AllowEveryAgent,
    Deny(String),
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::now_ms;

    fn with_mode(mode: PermissionMode) -> AgentRecord {
        let id = AgentId::random();
        let mut r = AgentRecord::new(id, id.short_prefix(8), now_ms());
        r.permission_mode = mode;
        r
    }

    #[test]
    fn modes_gate_the_tools_that_change_things() {
        let d = with_mode(PermissionMode::Default);
        assert_eq!(gate(&d, ToolName::Bash), Gate::Ask);
        assert_eq!(gate(&d, ToolName::Write), Gate::Ask);
        assert_eq!(gate(&d, ToolName::Read), Gate::Allow);
        let a = with_mode(PermissionMode::AcceptEdits);
        assert_eq!(gate(&a, ToolName::Edit), Gate::Allow);
        assert_eq!(gate(&a, ToolName::Bash), Gate::Ask);
        let p = with_mode(PermissionMode::Plan);
        assert!(matches!(gate(&p, ToolName::Write), Gate::Refuse(_)));
        assert_eq!(gate(&p, ToolName::Grep), Gate::Allow);
        // A plan is the agent's own state: allowed in plan mode, never asked.
        assert_eq!(gate(&p, ToolName::TodoWrite), Gate::Allow);
        assert_eq!(gate(&d, ToolName::TodoWrite), Gate::Allow);
        assert_eq!(
            gate(&with_mode(PermissionMode::Bypass), ToolName::Bash),
            Gate::Allow
        );
        let mut always = with_mode(PermissionMode::Default);
        always.always_allowed.push(ToolName::Bash.into());
        assert_eq!(gate(&always, ToolName::Bash), Gate::Allow);
        assert_eq!(gate(&always, ToolName::Write), Gate::Ask);
    }

    #[test]
    fn external_kinds_ask_and_plan_mode_refuses_all_but_switching_mode() {
        let d = with_mode(PermissionMode::Default);
        assert_eq!(gate_external(&d, ExternalToolKind::Fetch), Gate::Ask);
        assert_eq!(gate_external(&d, ExternalToolKind::Think), Gate::Allow);
        let p = with_mode(PermissionMode::Plan);
        assert!(matches!(
            gate_external(&p, ExternalToolKind::Other),
            Gate::Refuse(_)
        ));
        assert_eq!(gate_external(&p, ExternalToolKind::SwitchMode), Gate::Ask);
        let b = with_mode(PermissionMode::Bypass);
        assert_eq!(gate_external(&b, ExternalToolKind::Other), Gate::Allow);
        let mut always = with_mode(PermissionMode::Default);
        always
            .always_allowed
            .push(ToolRef::External(ExternalToolKind::Fetch));
        assert_eq!(gate_external(&always, ExternalToolKind::Fetch), Gate::Allow);
        assert_eq!(gate_external(&always, ExternalToolKind::Other), Gate::Ask);
    }

    #[test]
    fn mcp_tools_ask_unless_read_only_and_plan_mode_refuses_the_others() {
        let tool = McpToolName::parse("mcp__fs__write").unwrap();
        let d = with_mode(PermissionMode::Default);
        assert_eq!(gate_mcp(&d, &tool, false), Gate::Ask);
        assert_eq!(gate_mcp(&d, &tool, true), Gate::Allow);
        let a = with_mode(PermissionMode::AcceptEdits);
        assert_eq!(gate_mcp(&a, &tool, false), Gate::Ask);
        let p = with_mode(PermissionMode::Plan);
        assert!(matches!(gate_mcp(&p, &tool, false), Gate::Refuse(_)));
        assert_eq!(gate_mcp(&p, &tool, true), Gate::Allow);
        let b = with_mode(PermissionMode::Bypass);
        assert_eq!(gate_mcp(&b, &tool, false), Gate::Allow);
        let mut always = with_mode(PermissionMode::Default);
        always.always_allowed.push(ToolRef::Mcp(tool.clone()));
        assert_eq!(gate_mcp(&always, &tool, false), Gate::Allow);
        let other = McpToolName::parse("mcp__fs__delete").unwrap();
        assert_eq!(gate_mcp(&always, &other, false), Gate::Ask);
    }
}
