//! Git worktrees for agents (DESIGN §9), with git2: one per agent that asks
//! for isolation, on a branch of its own, never removed while it holds work.
//!
//! Every function here is blocking (libgit2 and the file system); the
//! supervisor calls them on the blocking pool. The rules that keep work safe
//! live in `remove`: a tree is removed only by agentd's own check, made
//! under a lock agentd holds on the tree, immediately before the removal.
//!
//! Layout: `<main checkout>/.agentd/worktrees/<short_id>` on branch
//! `agentd/<short_id>` (the repository's main working tree, even for an
//! agent started in a linked worktree: trees never nest); git's name for
//! the worktree is the short id, which is unique among every agent the
//! store has issued. A marker file in git's record of the worktree
//! (`<common dir>/worktrees/<short_id>/agentd`) says it is agentd's and
//! what its base is, so an orphan (its agent gone) is judged against its
//! real base, and a tree without the marker is never agentd's to remove.

use agentd_domain as domain;

pub mod checkpoint;
mod create;
mod diff;
mod error;
mod inspect;
pub mod link;
mod list;
mod merge;
pub mod merge_journal;
mod one_at_a_time;
mod places;
pub mod quarantine;
mod remove;
mod submodules;
#[cfg(test)]
pub(crate) mod testrepo;
#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};

pub use create::{Plan, create, plan, recreate};
pub use diff::diff;
pub use error::WorktreeError;
pub use inspect::{Inspection, inspect, work_in};
pub use list::{Found, agentd_worktrees, common_dir_of, pinned};
#[cfg(test)]
pub use merge::merge;
pub use merge::{Merged, Prepared, prepare};
pub use places::Places;
pub use remove::{Settled, Target, discard, remove_if_clean, would_remove};

use crate::domain::AgentWorktree;

/// Where agentd's worktrees live inside a checkout.
pub const WORKTREES_DIR: &str = ".agentd/worktrees";
/// What agentd adds to `.git/info/exclude` so its trees never show in the
/// person's `git status`. Only the trees: agent types and fork profiles
/// under `.agentd/` are files people commit, and an agent's new one is work.
pub const EXCLUDE_LINE: &str = "/.agentd/worktrees/";
/// The marker file in git's record of an agentd worktree.
const MARKER_FILE: &str = "agentd";
/// The prefix of a tree being removed (renamed first, so a crash never
/// leaves half a tree where the tree was).
pub const TOMBSTONE_PREFIX: &str = ".removing-";
/// Every lock reason agentd writes starts with this; a lock with any other
/// reason is a person's, and agentd never touches that tree.
pub const LOCK_PREFIX: &str = "agentd: ";

/// The lock reason while `agent` runs (it names the agent).
pub fn running_reason(short_id: &str, name: &str) -> String {
    if name.is_empty() {
        format!("{LOCK_PREFIX}agent {short_id} is running")
    } else {
        format!("{LOCK_PREFIX}agent {short_id} ({name}) is running")
    }
}

/// The lock reason while agentd checks a tree and removes it.
const REMOVING_REASON: &str = "agentd: checking for work before removing";

/// The branch of the agent whose short id is `short_id`.
pub fn branch_for(short_id: &str) -> String {
    format!("agentd/{short_id}")
}

/// A base as a person reads it: a branch's short name, a ref's name, or a
/// commit id.
pub fn base_label(base: &str) -> &str {
    base.strip_prefix("refs/heads/")
        .or_else(|| base.strip_prefix("refs/"))
        .unwrap_or(base)
}

/// Whether `path` is where agentd puts a worktree named `name`: the only
/// directories agentd ever deletes.
pub fn is_agentd_tree(path: &Path, name: &str) -> bool {
    path.file_name().is_some_and(|f| f == name)
        && path
            .parent()
            .is_some_and(|p| p.ends_with(Path::new(WORKTREES_DIR)))
}

/// The checkout an agentd worktree at `path` was made in.
pub fn checkout_of(path: &Path) -> Option<PathBuf> {
    path.parent()?.parent()?.parent().map(Path::to_path_buf)
}

/// What agentd writes into git's record of a tree it makes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Marker {
    pub base: String,
    pub base_commit: String,
    /// The store (`Store::instance_id`) whose agent the tree is: another
    /// daemon's trees are never this one's orphans.
    pub store: String,
}

/// Writes the marker of the worktree `name`.
pub(crate) fn write_marker(
    common_dir: &Path,
    name: &str,
    marker: &Marker,
) -> Result<(), WorktreeError> {
    let file = common_dir.join("worktrees").join(name).join(MARKER_FILE);
    let text = format!(
        "base {}\ncommit {}\nstore {}\n",
        marker.base, marker.base_commit, marker.store
    );
    std::fs::write(&file, text)
        .map_err(|e| WorktreeError::refused(format!("cannot write {}: {e}", file.display())))
}

/// The marker of the worktree `name`; None when it has none (not
/// agentd's).
pub fn read_marker(common_dir: &Path, name: &str) -> Option<Marker> {
    let file = common_dir.join("worktrees").join(name).join(MARKER_FILE);
    let text = std::fs::read_to_string(file).ok()?;
    let mut marker = Marker::default();
    let (mut has_base, mut has_commit) = (false, false);
    for line in text.lines() {
        if let Some(b) = line.strip_prefix("base ") {
            marker.base = b.to_string();
            has_base = true;
        } else if let Some(c) = line.strip_prefix("commit ") {
            marker.base_commit = c.to_string();
            has_commit = true;
        } else if let Some(s) = line.strip_prefix("store ") {
            marker.store = s.to_string();
        }
    }
    (has_base && has_commit).then_some(marker)
}

/// The checkout to open the repository of an agent's tree through: the
/// main checkout its tree lives in (it outlasts the checkout the tree was
/// made from, which may be another agent's tree, removed since).
pub fn repo_dir(wt: &AgentWorktree) -> PathBuf {
    if wt.owned
        && let Some(main) = checkout_of(&wt.path).filter(|m| m.is_dir())
    {
        return main;
    }
    wt.checkout.clone()
}

/// Whether `reason` is a lock agentd may lift to remove the tree `name`:
/// the lock of its own agent, or of a removal agentd began.
pub(crate) fn removable_lock(reason: &str, name: &str) -> bool {
    reason == REMOVING_REASON
        || reason == format!("{LOCK_PREFIX}agent {name} is running")
        || reason.starts_with(&format!("{LOCK_PREFIX}agent {name} ("))
}

/// A libgit2 failure, as a request's error: the operation, and git's words.
pub(crate) fn git_error(what: &str, e: git2::Error) -> WorktreeError {
    WorktreeError::refused(format!("{what}: {}", e.message()))
}

/// Sets a lock on the worktree `name` with `reason`, replacing a lock of
/// agentd's own; refuses if a person holds it.
pub fn lock(checkout: &Path, name: &str, reason: &str) -> Result<(), WorktreeError> {
    let repo =
        git2::Repository::open(checkout).map_err(|e| git_error("cannot open the repository", e))?;
    let wt = repo
        .find_worktree(name)
        .map_err(|e| git_error("cannot find the worktree", e))?;
    match wt
        .is_locked()
        .map_err(|e| git_error("cannot read the lock", e))?
    {
        git2::WorktreeLockStatus::Locked(held) => {
            let held = held.unwrap_or_default().trim().to_string();
            if held == reason {
                return Ok(());
            }
            if !held.starts_with(LOCK_PREFIX) {
                return Err(WorktreeError::refused(format!(
                    "worktree {} is locked by someone else ({held:?}); unlock it with `git worktree unlock {}` first",
                    wt.path().display(),
                    wt.path().display()
                )));
            }
            wt.unlock().map_err(|e| git_error("cannot unlock", e))?;
        }
        git2::WorktreeLockStatus::Unlocked => {}
    }
    wt.lock(Some(reason))
        .map_err(|e| git_error("cannot lock the worktree", e))
}

/// Lifts agentd's own lock from the worktree `name` (a person's lock stays).
pub fn unlock(checkout: &Path, name: &str) -> Result<(), WorktreeError> {
    let repo =
        git2::Repository::open(checkout).map_err(|e| git_error("cannot open the repository", e))?;
    let wt = repo
        .find_worktree(name)
        .map_err(|e| git_error("cannot find the worktree", e))?;
    if let git2::WorktreeLockStatus::Locked(held) = wt
        .is_locked()
        .map_err(|e| git_error("cannot read the lock", e))?
        && held.unwrap_or_default().starts_with(LOCK_PREFIX)
    {
        wt.unlock().map_err(|e| git_error("cannot unlock", e))?;
    }
    Ok(())
}
