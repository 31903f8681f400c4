//! Removing a worktree, the one place agentd deletes a tree. The check for
//! work is agentd's own (libgit2's prune with `working_tree` deletes without
//! looking), made immediately before the removal while agentd holds the
//! tree's lock; a tree locked by anyone else is never touched.
//!
//! Callers serialise removals (the supervisor's worktree mutex) and make
//! sure no agent runs in the tree.

use std::path::{Path, PathBuf};

use git2::{BranchType, Repository, WorktreeLockStatus, WorktreePruneOptions};

use super::error::WorktreeError;
use super::inspect::{Inspection, work_in};
use super::places::Places;
use super::{
    REMOVING_REASON, TOMBSTONE_PREFIX, checkout_of, git_error, is_agentd_tree, removable_lock,
};
use crate::domain::WorkSummary;

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
pub fn remove_if_clean(target: &Target) -> Result<Settled, WorktreeError> {
    remove(target, false)
}

/// Removes the tree and its branch whatever they hold: only for an explicit
/// discard. Returns what was lost. A tree locked by someone else is still
/// refused.
pub fn discard(target: &Target) -> Result<Settled, WorktreeError> {
    remove(target, true)
}

/// What `remove_if_clean` would do, changing nothing (for `prune
/// --dry-run`): true when it would remove the tree (or its branch).
pub fn would_remove(target: &Target) -> Result<bool, WorktreeError> {
    let repo = Repository::open(&target.checkout)
        .map_err(|e| git_error("cannot open the repository", e))?;
    let branch_clean = || -> Result<bool, WorktreeError> {
        let Ok(branch) = repo.find_branch(&target.branch, BranchType::Local) else {
            return Ok(true);
        };
        Ok(match branch.get().target() {
            Some(tip) => {
                super::inspect::ahead_of(&repo, &[tip], &target.base, &target.base_commit)? == 0
            }
            None => true,
        })
    };
    let Ok(wt) = repo.find_worktree(&target.name) else {
        return if target.path.exists() {
            Ok(false)
        } else {
            branch_clean()
        };
    };
    if !same_path(wt.path(), &target.path)
        || !is_agentd_tree(&target.path, &target.name)
        || nested_worktree(&repo, &target.path, &target.name).is_some()
    {
        return Ok(false);
    }
    if let WorktreeLockStatus::Locked(reason) = wt
        .is_locked()
        .map_err(|e| git_error("cannot read the lock", e))?
        && !removable_lock(reason.unwrap_or_default().trim(), &target.name)
    {
        return Ok(false);
    }
    if !target.path.exists() {
        return Ok(
            vanished_work(&repo, &target.name, &target.base_commit)? == 0 && branch_clean()?,
        );
    }
    let held = work_in(
        &target.path,
        &target.branch,
        &target.base,
        &target.base_commit,
    )?;
    Ok(held.work.is_empty())
}

fn remove(target: &Target, discard: bool) -> Result<Settled, WorktreeError> {
    let repo = Repository::open(&target.checkout)
        .map_err(|e| git_error("cannot open the repository", e))?;
    let Ok(wt) = repo.find_worktree(&target.name) else {
        if target.path.exists() {
            return Ok(Settled::Untouchable(format!(
                "{} is not a worktree git knows; agentd leaves it alone",
                target.path.display()
            )));
        }
        return drop_branch_if_merged(&repo, target, discard);
    };
    if let Some(refused) = claim(&repo, &wt, target)? {
        return Ok(refused);
    }
    if !target.path.exists() {
        return forget_vanished(&repo, &wt, target, discard);
    }
    // Nothing is inspected or removed through a link planted in the path
    // to the tree.
    let verified = checkout_of(&target.path)
        .map(|main| Places::verify(&main, repo.commondir(), false))
        .unwrap_or_else(|| {
            Err(WorktreeError::refused(format!(
                "{} is not where agentd makes worktrees",
                target.path.display()
            )))
        });
    let places = match verified {
        Ok(p) if p.holds_tree(&target.name) => p,
        Ok(_) => {
            let _ = wt.unlock();
            return Ok(Settled::Untouchable(format!(
                "{} is a symbolic link, not the tree agentd made; agentd removes nothing through it",
                target.path.display()
            )));
        }
        Err(e) => {
            let _ = wt.unlock();
            return Ok(Settled::Untouchable(e.to_string()));
        }
    };
    let inspection = match work_in(
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
    };
    if !discard && !inspection.work.is_empty() {
        wt.unlock().map_err(|e| git_error("cannot unlock", e))?;
        return Ok(Settled::Kept(inspection));
    }
    // Renamed first: a crash mid-way leaves a tombstone (swept at start),
    // never half a tree where an agent could be resumed.
    // Through the verified directory: a link swapped in since is not
    // followed.
    let tombstone_name = format!("{TOMBSTONE_PREFIX}{}", target.name);
    let tombstone = places.tree_path(&tombstone_name);
    std::fs::rename(places.tree_path(&target.name), &tombstone).map_err(|e| {
        let _ = wt.unlock();
        WorktreeError::refused(format!("cannot remove {}: {e}", target.path.display()))
    })?;
    std::fs::remove_dir_all(&tombstone).map_err(|e| {
        WorktreeError::refused(format!(
            "cannot remove {}: {e}",
            target.path.with_file_name(&tombstone_name).display()
        ))
    })?;
    let mut prune = WorktreePruneOptions::new();
    prune.valid(true).locked(true).working_tree(false);
    let turn = super::one_at_a_time::RepositoryTurn::of(repo.commondir());
    let one_at_a_time = turn.take();
    wt.prune(Some(&mut prune))
        .map_err(|e| git_error("cannot prune the worktree's record", e))?;
    drop(one_at_a_time);
    if let Ok(mut b) = repo.find_branch(&target.branch, BranchType::Local)
        && (discard || inspection.work.ahead == 0)
    {
        b.delete()
            .map_err(|e| git_error("cannot delete the branch", e))?;
    }
    Ok(Settled::Removed(inspection))
}

/// Makes sure the tree is agentd's to remove (where agentd put it, with
/// no tree inside, not locked by someone else) and locks it for removal;
/// else says why it is left alone.
fn claim(
    repo: &Repository,
    wt: &git2::Worktree,
    target: &Target,
) -> Result<Option<Settled>, WorktreeError> {
    let registered = wt.path().to_path_buf();
    if !same_path(&registered, &target.path) || !is_agentd_tree(&target.path, &target.name) {
        return Ok(Some(Settled::Untouchable(format!(
            "git's worktree {} is at {}, not where agentd put it",
            target.name,
            registered.display()
        ))));
    }
    if let Some(inner) = nested_worktree(repo, &target.path, &target.name) {
        return Ok(Some(Settled::Untouchable(format!(
            "another worktree lies inside it ({})",
            inner.display()
        ))));
    }
    if let WorktreeLockStatus::Locked(reason) = wt
        .is_locked()
        .map_err(|e| git_error("cannot read the lock", e))?
    {
        let reason = reason.unwrap_or_default().trim().to_string();
        if !removable_lock(&reason, &target.name) {
            return Ok(Some(Settled::Untouchable(format!(
                "locked by someone else ({reason:?})"
            ))));
        }
        wt.unlock().map_err(|e| git_error("cannot unlock", e))?;
    }
    wt.lock(Some(REMOVING_REASON))
        .map_err(|e| git_error("cannot lock the worktree", e))?;
    Ok(None)
}

/// The directory went some other way (or a removal was cut short after
/// its rename): git's record of it goes, but what is committed on its
/// branch must not go with it, nor what only the record holds (a detached
/// HEAD's commits, submodule clones).
fn forget_vanished(
    repo: &Repository,
    wt: &git2::Worktree,
    target: &Target,
    discard: bool,
) -> Result<Settled, WorktreeError> {
    let held = vanished_work(repo, &target.name, &target.base_commit)?;
    if held > 0 && !discard {
        let _ = wt.unlock();
        return Ok(Settled::Kept(Inspection {
            work: WorkSummary {
                ahead: held,
                ..Default::default()
            },
            locked: None,
            paths: Vec::new(),
        }));
    }
    let mut prune = WorktreePruneOptions::new();
    prune.locked(true);
    let turn = super::one_at_a_time::RepositoryTurn::of(repo.commondir());
    let one_at_a_time = turn.take();
    wt.prune(Some(&mut prune))
        .map_err(|e| git_error("cannot prune the worktree's record", e))?;
    drop(one_at_a_time);
    drop_branch_if_merged(repo, target, discard)
}

/// Commits that only git's record of the vanished tree `name` keeps: its
/// HEAD's when detached (no ref reaches them), and those of the submodule
/// clones under it that no remote branch has and the base did not pin.
pub(super) fn vanished_work(
    repo: &Repository,
    name: &str,
    base_commit: &str,
) -> Result<u32, WorktreeError> {
    let admin = repo.commondir().join("worktrees").join(name);
    let walk_err = |e| git_error("cannot walk the history", e);
    let mut held = 0u32;
    if let Ok(head) = std::fs::read_to_string(admin.join("HEAD"))
        && let Ok(oid) = git2::Oid::from_str(head.trim())
        && repo.find_commit(oid).is_ok()
    {
        let mut walk = repo.revwalk().map_err(walk_err)?;
        walk.push(oid).map_err(walk_err)?;
        for r in repo.references().map_err(walk_err)?.flatten() {
            if let Ok(c) = r.peel_to_commit() {
                walk.hide(c.id()).map_err(walk_err)?;
            }
        }
        for oid in walk {
            oid.map_err(walk_err)?;
            held = held.saturating_add(1);
        }
    }
    let pinned = super::inspect::base_gitlinks(repo, base_commit);
    let mut dirs = vec![(admin.join("modules"), 0u32)];
    while let Some((dir, depth)) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if !path.is_dir() || depth > 16 {
                continue;
            }
            if path.join("HEAD").is_file() && path.join("objects").is_dir() {
                if let Ok(sub) = Repository::open_bare(&path) {
                    let mut tips = Vec::new();
                    if let Ok(h) = sub.head()
                        && let Some(oid) = h.target()
                    {
                        tips.push(oid);
                    }
                    if let Ok(branches) = sub.branches(Some(BranchType::Local)) {
                        tips.extend(branches.flatten().filter_map(|(b, _)| b.get().target()));
                    }
                    held = held.saturating_add(super::inspect::unpublished(&sub, &tips, &pinned)?);
                }
                dirs.push((path.join("modules"), depth + 1));
            } else {
                dirs.push((path, depth + 1));
            }
        }
    }
    Ok(held)
}

/// A registered worktree other than `name` inside `path`, if any.
fn nested_worktree(repo: &Repository, path: &Path, name: &str) -> Option<PathBuf> {
    let names = repo.worktrees().ok()?;
    let root = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    names
        .iter()
        .flatten()
        .filter(|n| *n != name)
        .filter_map(|n| repo.find_worktree(n).ok())
        .map(|w| w.path().to_path_buf())
        .find(|p| p.starts_with(&root) || p.starts_with(path))
}

/// The tree's directory is gone: its branch goes too when none of its
/// commits is off its base (or on discard); otherwise it is kept, with
/// what it holds.
fn drop_branch_if_merged(
    repo: &Repository,
    target: &Target,
    discard: bool,
) -> Result<Settled, WorktreeError> {
    let Ok(mut branch) = repo.find_branch(&target.branch, BranchType::Local) else {
        return Ok(Settled::Gone);
    };
    let ahead = match branch.get().target() {
        Some(tip) => super::inspect::ahead_of(repo, &[tip], &target.base, &target.base_commit)?,
        None => 0,
    };
    if ahead > 0 && !discard {
        return Ok(Settled::Kept(Inspection {
            work: WorkSummary {
                ahead,
                ..Default::default()
            },
            locked: None,
            paths: Vec::new(),
        }));
    }
    branch
        .delete()
        .map_err(|e| git_error("cannot delete the branch", e))?;
    Ok(Settled::Gone)
}

fn same_path(a: &Path, b: &Path) -> bool {
    let canon = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    canon(a) == canon(b)
}
