//! The worktree an agent works in (DESIGN §9), as the registry keeps it.

use std::fmt;
use std::path::PathBuf;

/// Where an agent with `isolation: worktree` (or a pinned `working_dir`)
/// does its work, and what became of that tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgentWorktree {
    /// The worktree's root directory.
    pub path: PathBuf,
    /// `agentd/<short_id>`, or the branch a pinned worktree had.
    pub branch: String,
    /// The working directory of the checkout it was made from: the
    /// person's checkout, which `merge` merges into.
    pub checkout: PathBuf,
    /// The base as it was named: the checkout's branch, the `--base` given,
    /// or a commit id when the checkout's HEAD was detached.
    pub base: String,
    /// The commit the branch started from (hex).
    pub base_commit: String,
    /// agentd made it and removes it when it holds no work; false for a
    /// person's worktree pinned with `working_dir`, never created, locked
    /// or removed by agentd.
    pub owned: bool,
    pub state: WorktreeState,
    /// What it held when it was last settled (at the agent's end).
    pub work: WorkSummary,
    /// What agentd had to do to the tree at the agent's end that the person
    /// should know (it restored a `.git` link the agent had replaced).
    pub notice: Option<String>,
}

/// A merge about to change the person's checkout (`agentctl merge`): its
/// branch moves from `from` to `to` (commit ids) and the checkout's files
/// with it. Journaled (`store::merges`) so that a crash mid-way is finished
/// or undone at the next start, never left half done.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MergeJournal {
    /// The checkout's working directory.
    pub checkout: PathBuf,
    /// The branch it has checked out (`refs/heads/…`).
    pub branch_ref: String,
    pub from: String,
    pub to: String,
}

/// What became of an agent's worktree.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum WorktreeState {
    /// In use: the agent has not ended (or can run again).
    #[default]
    Active,
    /// The agent ended and the tree held work: kept with its branch.
    Kept,
    /// The agent ended with no work in the tree: tree and branch removed.
    Removed,
}

impl WorktreeState {
    pub fn as_str(self) -> &'static str {
        match self {
            WorktreeState::Active => "active",
            WorktreeState::Kept => "kept",
            WorktreeState::Removed => "removed",
        }
    }
}

/// Work a tree holds that removing it would lose.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WorkSummary {
    /// Tracked files changed, staged or not (conflicts included).
    pub changed: u32,
    /// Files git does not track and does not ignore.
    pub untracked: u32,
    /// Commits on the worktree's branch or HEAD that its base branch cannot
    /// reach (a squash-merged branch still counts).
    pub ahead: u32,
}

impl WorkSummary {
    pub fn is_empty(&self) -> bool {
        *self == WorkSummary::default()
    }
}

impl fmt::Display for WorkSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_empty() {
            return f.write_str("no changes");
        }
        let mut parts = Vec::new();
        if self.changed > 0 {
            parts.push(format!("{} changed", plural(self.changed, "file")));
        }
        if self.untracked > 0 {
            parts.push(format!("{} untracked", plural(self.untracked, "file")));
        }
        if self.ahead > 0 {
            parts.push(format!("{} not on its base", plural(self.ahead, "commit")));
        }
        f.write_str(&parts.join(", "))
    }
}

fn plural(n: u32, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_summary_says_what_would_be_lost() {
        assert_eq!(WorkSummary::default().to_string(), "no changes");
        let w = WorkSummary {
            changed: 1,
            untracked: 2,
            ahead: 3,
        };
        assert_eq!(
            w.to_string(),
            "1 file changed, 2 files untracked, 3 commits not on its base"
        );
    }
}
