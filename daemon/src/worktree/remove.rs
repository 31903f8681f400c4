//! Removing a worktree, the one place agentd deletes a tree. The check for
//! work is agentd's own (libgit2's prune with `working_tree` deletes without
//! looking), made immediately before the removal while agentd holds the
//! tree's lock; a tree locked by anyone else is never touched.
//!
//! Callers serialise removals (the supervisor's worktree mutex) and make
//! sure no agent runs in the tree.

use std::path::{Path, PathBuf};

use git2::{BranchType, Repository, WorktreeLockStatus, WorktreePruneOptions};

use super::inspect::{Inspection, work_in};
use super::{LOCK_PREFIX, REMOVING_REASON, git_error, is_agentd_tree};
use crate::error::AgentdError;

/// A tree to remove, as agentd knows it.
#[derive(Clone, Debug)]
pub struct Target {
    pub checkout: PathBuf,
    /// git's name for it (the agent's short id).
    pub name: String,
    pub path: PathBuf,
    pub branch: String,
    /// Empty for an orphan whose base is unknown: then every other ref
    /// counts as its base.
    pub base: String,
    pub base_commit: String,
}

/// What a removal did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Settled {
    /// The tree and its branch are gone; this is what they held (nothing,
    /// unless discarded).
    Removed(Inspection),
    /// Kept, with what it holds.
    Kept(Inspection),
    /// Not touched, and why (locked by someone else, not agentd's).
    Untouchable(String),
    /// There was no tree to remove (its branch is removed if it has no work).
    Gone,
}

/// Removes the tree and its branch if they hold no work (DESIGN §9).
pub fn remove_if_clean(target: &Target) -> Result<Settled, AgentdError> {
    remove(target, false)
}

/// Removes the tree and its branch whatever they hold: only for an explicit
/// discard. Returns what was lost. A tree locked by someone else is still
/// refused.
pub fn discard(target: &Target) -> Result<Settled, AgentdError> {
    remove(target, true)
}

fn remove(target: &Target, discard: bool) -> Result<Settled, AgentdError> {
    let repo = Repository::open(&target.checkout)
        .map_err(|e| git_error("cannot open the repository", e))?;
    let Ok(wt) = repo.find_worktree(&target.name) else {
        if target.path.exists() {
            return Ok(Settled::Untouchable(format!(
                "{} is not a worktree git knows; agentd leaves it alone",
                target.path.display()
            )));
        }
        drop_branch_if_merged(&repo, target, discard)?;
        return Ok(Settled::Gone);
    };
    let registered = wt.path().to_path_buf();
    if !same_path(&registered, &target.path) || !is_agentd_tree(&target.path, &target.name) {
        return Ok(Settled::Untouchable(format!(
            "git's worktree {} is at {}, not where agentd put it",
            target.name,
            registered.display()
        )));
    }
    if let WorktreeLockStatus::Locked(reason) = wt
        .is_locked()
        .map_err(|e| git_error("cannot read the lock", e))?
    {
        let reason = reason.unwrap_or_default().trim().to_string();
        if !reason.starts_with(LOCK_PREFIX) {
            return Ok(Settled::Untouchable(format!(
                "locked by someone else ({reason:?})"
            )));
        }
        wt.unlock().map_err(|e| git_error("cannot unlock", e))?;
    }
    wt.lock(Some(REMOVING_REASON))
        .map_err(|e| git_error("cannot lock the worktree", e))?;
    let inspection = if target.path.exists() {
        match work_in(
            &target.path,
            &target.branch,
            &target.base,
            &target.base_commit,
        ) {
            Ok(i) => i,
            Err(e) if !discard => {
                // Cannot tell what it holds: keep it.
                let _ = wt.unlock();
                return Err(e);
            }
            Err(_) => Inspection {
                work: Default::default(),
                locked: None,
                paths: Vec::new(),
            },
        }
    } else {
        Inspection {
            work: Default::default(),
            locked: None,
            paths: Vec::new(),
        }
    };
    if !discard && !inspection.work.is_empty() {
        wt.unlock().map_err(|e| git_error("cannot unlock", e))?;
        return Ok(Settled::Kept(inspection));
    }
    if target.path.exists() {
        std::fs::remove_dir_all(&target.path).map_err(|e| {
            AgentdError::precondition(format!("cannot remove {}: {e}", target.path.display()))
        })?;
    }
    let mut prune = WorktreePruneOptions::new();
    prune.valid(true).locked(true).working_tree(false);
    wt.prune(Some(&mut prune))
        .map_err(|e| git_error("cannot prune the worktree's record", e))?;
    if let Ok(mut b) = repo.find_branch(&target.branch, BranchType::Local)
        && (discard || inspection.work.ahead == 0)
    {
        b.delete()
            .map_err(|e| git_error("cannot delete the branch", e))?;
    }
    Ok(Settled::Removed(inspection))
}

/// After a removal cut short, the branch may outlive its tree: it goes
/// when none of its commits is off its base.
fn drop_branch_if_merged(
    repo: &Repository,
    target: &Target,
    discard: bool,
) -> Result<(), AgentdError> {
    let Ok(mut branch) = repo.find_branch(&target.branch, BranchType::Local) else {
        return Ok(());
    };
    if !discard {
        let Some(tip) = branch.get().target() else {
            return Ok(());
        };
        let ahead = super::inspect::ahead_of(
            repo,
            &[tip],
            &target.branch,
            &target.base,
            &target.base_commit,
        )?;
        if ahead > 0 {
            return Ok(());
        }
    }
    branch
        .delete()
        .map_err(|e| git_error("cannot delete the branch", e))
}

fn same_path(a: &Path, b: &Path) -> bool {
    let canon = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    canon(a) == canon(b)
}
