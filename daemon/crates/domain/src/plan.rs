//! An agent's plan (DESIGN §17): the todo list it keeps with its `TodoWrite`
//! tool, durable on its record, shown by `show`, `list`, `attach`, `Watch`
//! and editors.

use std::fmt;

/// Where one item of a plan stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PlanStatus {
    Pending,
    InProgress,
    Completed,
}

impl PlanStatus {
    pub const ALL: [PlanStatus; 3] = [
        PlanStatus::Pending,
        PlanStatus::InProgress,
        PlanStatus::Completed,
    ];

    /// The spelling `TodoWrite` takes (Claude Code's).
    pub fn as_str(self) -> &'static str {
        match self {
            PlanStatus::Pending => "pending",
            PlanStatus::InProgress => "in_progress",
            PlanStatus::Completed => "completed",
        }
    }

    /// The status of that exact spelling, if there is one.
    pub fn parse(text: &str) -> Option<PlanStatus> {
        PlanStatus::ALL.into_iter().find(|s| s.as_str() == text)
    }
}

impl fmt::Display for PlanStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One item of a plan: what to do, and how it reads while it is done.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlanItem {
    /// In the imperative: "Run the tests". One line, never empty.
    pub content: String,
    pub status: PlanStatus,
    /// In the present continuous: "Running the tests". One line, never
    /// empty.
    pub active_form: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_round_trip_and_other_spellings_are_none() {
        for s in PlanStatus::ALL {
            assert_eq!(PlanStatus::parse(s.as_str()), Some(s));
        }
        for other in ["done", "in-progress", "Pending", ""] {
            assert_eq!(PlanStatus::parse(other), None, "{other:?}");
        }
    }
}
