//! The tools agents can call (DESIGN §8), by name.

use std::fmt;

/// A tool agentd provides. Names are the ones models are trained on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ToolName {
    Bash,
    Read,
    Write,
    Edit,
    Glob,
    Grep,
    Agent,
    SendMessage,
    ListAgents,
    TaskStop,
    /// Sets the agent's own plan (DESIGN §17); touches nothing outside it.
    TodoWrite,
}

impl ToolName {
    pub const ALL: [ToolName; 11] = [
        ToolName::Bash,
        ToolName::Read,
        ToolName::Write,
        ToolName::Edit,
        ToolName::Glob,
        ToolName::Grep,
        ToolName::Agent,
        ToolName::SendMessage,
        ToolName::ListAgents,
        ToolName::TaskStop,
        ToolName::TodoWrite,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ToolName::Bash => "Bash",
            ToolName::Read => "Read",
            ToolName::Write => "Write",
            ToolName::Edit => "Edit",
            ToolName::Glob => "Glob",
            ToolName::Grep => "Grep",
            ToolName::Agent => "Agent",
            ToolName::SendMessage => "SendMessage",
            ToolName::ListAgents => "ListAgents",
            ToolName::TaskStop => "TaskStop",
            ToolName::TodoWrite => "TodoWrite",
        }
    }

    /// The tool of that exact name, if agentd has one.
    pub fn parse(name: &str) -> Option<ToolName> {
        ToolName::ALL.into_iter().find(|t| t.as_str() == name)
    }

    /// Tools that only look: running one again after a crash changes
    /// nothing (DESIGN §5). Every other tool may have changed the world.
    pub fn is_read_only(self) -> bool {
        matches!(
            self,
            ToolName::Read | ToolName::Glob | ToolName::Grep | ToolName::ListAgents
        )
    }

    /// Tools that act on other agents; the supervisor runs them.
    pub fn is_orchestration(self) -> bool {
        matches!(
            self,
            ToolName::Agent | ToolName::SendMessage | ToolName::ListAgents | ToolName::TaskStop
        )
    }
}

impl fmt::Display for ToolName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_names_are_none() {
        for t in ToolName::ALL {
            assert_eq!(ToolName::parse(t.as_str()), Some(t));
        }
        assert_eq!(ToolName::parse("bash"), None);
        assert_eq!(ToolName::parse("Shell"), None);
    }
}
