//! What a worktree holds that removing it would lose: changed and untracked
//! files (a full status, untracked directories walked, submodules
//! included) and commits its base branch cannot reach.

use std::path::Path;

use git2::{BranchType, Oid, Repository, Status, StatusOptions};

use super::error::WorktreeError;
use super::git_error;
use crate::domain::{AgentWorktree, WorkSummary};

/// A worktree as it is now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Inspection {
    pub work: WorkSummary,
    /// The lock's reason, if it is locked ("" for a lock without one).
    pub locked: Option<String>,
    /// Paths with uncommitted changes or untracked, at most 50.
    pub paths: Vec<String>,
}

/// How many paths an inspection lists.
const LISTED_PATHS: usize = 50;

/// Inspects the worktree at `path` against its base (`base`, a name that may
/// still resolve to a newer tip, and `base_commit`, where it started).
pub fn work_in(
    path: &Path,
    branch: &str,
    base: &str,
    base_commit: &str,
) -> Result<Inspection, WorktreeError> {
    // Through git's record of the tree, never the tree's own `.git`.
    let repo = super::link::open_tree(path).map_err(|e| super::link::open_error(path, e))?;
    let mut opts = StatusOptions::new();
    opts.include_untracked(true)
        .recurse_untracked_dirs(true)
        .include_ignored(false)
        .exclude_submodules(false)
        .renames_head_to_index(false);
    let statuses = repo
        .statuses(Some(&mut opts))
        .map_err(|e| git_error("cannot read the worktree's status", e))?;
    let mut work = WorkSummary::default();
    let mut paths = Vec::new();
    for entry in statuses.iter() {
        let s = entry.status();
        if s.is_empty() || s == Status::IGNORED {
            continue;
        }
        if s == Status::WT_NEW {
            work.untracked += 1;
        } else {
            work.changed += 1;
        }
        if paths.len() < LISTED_PATHS {
            paths.push(String::from_utf8_lossy(entry.path_bytes()).into_owned());
        }
    }
    let pinned = base_gitlinks(&repo, base_commit);
    submodule_work(&repo, "", &pinned, &mut work, &mut paths, 0)?;
    work.ahead = work
        .ahead
        .saturating_add(commits_ahead(&repo, branch, base, base_commit)?);
    let locked = super::link::open_tree(path)
        .ok()
        .and_then(|r| git2::Worktree::open_from_repository(&r).ok())
        .and_then(|wt| wt.is_locked().ok())
        .and_then(|l| match l {
            git2::WorktreeLockStatus::Locked(reason) => {
                Some(reason.unwrap_or_default().trim().to_string())
            }
            git2::WorktreeLockStatus::Unlocked => None,
        });
    Ok(Inspection {
        work,
        locked,
        paths,
    })
}

/// Work inside submodules, which the tree's own status can miss: edits
/// hidden by a `.gitmodules` `ignore` setting, and commits made in a
/// submodule (its clone lives in git's record of the tree and goes with
/// it) that none of the submodule's remote branches has. Recursive.
fn submodule_work(
    repo: &Repository,
    prefix: &str,
    pinned: &[Oid],
    work: &mut WorkSummary,
    paths: &mut Vec<String>,
    depth: u32,
) -> Result<(), WorktreeError> {
    use git2::SubmoduleStatus as S;
    if depth > 8 {
        return Ok(());
    }
    let submodules = repo
        .submodules()
        .map_err(|e| git_error("cannot read .gitmodules", e))?;
    let dirty = S::WD_MODIFIED
        | S::WD_INDEX_MODIFIED
        | S::WD_WD_MODIFIED
        | S::WD_UNTRACKED
        | S::WD_ADDED
        | S::WD_DELETED
        | S::INDEX_ADDED
        | S::INDEX_DELETED
        | S::INDEX_MODIFIED;
    for sm in submodules {
        let Some(name) = sm.name() else { continue };
        let full = format!("{prefix}{}", sm.path().display());
        let status = repo
            .submodule_status(name, git2::SubmoduleIgnore::None)
            .map_err(|e| git_error(&format!("cannot read the submodule {full}"), e))?;
        if status.intersects(dirty) && !paths.contains(&full) {
            work.changed = work.changed.saturating_add(1);
            if paths.len() < LISTED_PATHS {
                paths.push(full.clone());
            }
        }
        let Ok(sub) = sm.open() else { continue };
        let mut tips = Vec::new();
        if let Ok(head) = sub.head()
            && let Some(oid) = head.target()
        {
            tips.push(oid);
        }
        if let Ok(branches) = sub.branches(Some(BranchType::Local)) {
            tips.extend(branches.flatten().filter_map(|(b, _)| b.get().target()));
        }
        work.ahead = work.ahead.saturating_add(unpublished(&sub, &tips, pinned)?);
        submodule_work(&sub, &format!("{full}/"), pinned, work, paths, depth + 1)?;
    }
    Ok(())
}

/// The submodule commits `base_commit`'s tree records (at any depth of the
/// tree): where the submodules stood when the tree was made, which came
/// from elsewhere and are nobody's work here.
pub(super) fn base_gitlinks(repo: &Repository, base_commit: &str) -> Vec<Oid> {
    let mut out = Vec::new();
    let Some(tree) = Oid::from_str(base_commit)
        .ok()
        .and_then(|oid| repo.find_commit(oid).ok())
        .and_then(|c| c.tree().ok())
    else {
        return out;
    };
    let _ = tree.walk(git2::TreeWalkMode::PreOrder, |_, entry| {
        if entry.kind() == Some(git2::ObjectType::Commit) {
            out.push(entry.id());
        }
        git2::TreeWalkResult::Ok
    });
    out
}

/// Commits reachable from `tips` that no remote-tracking branch reaches,
/// nor any of `pinned` (the commits the base records for submodules).
pub(super) fn unpublished(
    repo: &Repository,
    tips: &[Oid],
    pinned: &[Oid],
) -> Result<u32, WorktreeError> {
    if tips.is_empty() {
        return Ok(0);
    }
    let walk_err = |e| git_error("cannot walk a submodule's history", e);
    let mut walk = repo.revwalk().map_err(walk_err)?;
    for tip in tips {
        walk.push(*tip).map_err(walk_err)?;
    }
    for r in repo
        .references_glob("refs/remotes/*")
        .map_err(walk_err)?
        .flatten()
    {
        if let Ok(c) = r.peel_to_commit() {
            walk.hide(c.id()).map_err(walk_err)?;
        }
    }
    for oid in pinned {
        if repo.find_commit(*oid).is_ok() {
            walk.hide(*oid).map_err(walk_err)?;
        }
    }
    let mut n = 0u32;
    for oid in walk {
        oid.map_err(walk_err)?;
        n = n.saturating_add(1);
    }
    Ok(n)
}

/// Inspects an agent's worktree.
pub fn inspect(wt: &AgentWorktree) -> Result<Inspection, WorktreeError> {
    work_in(&wt.path, &wt.branch, &wt.base, &wt.base_commit)
}

/// Commits reachable from the worktree's branch or its HEAD that its base
/// cannot reach.
fn commits_ahead(
    repo: &Repository,
    branch: &str,
    base: &str,
    base_commit: &str,
) -> Result<u32, WorktreeError> {
    let mut tips = Vec::new();
    if !branch.is_empty()
        && let Ok(b) = repo.find_branch(branch, BranchType::Local)
        && let Some(oid) = b.get().target()
    {
        tips.push(oid);
    }
    if let Ok(head) = repo.head()
        && let Some(oid) = head.target()
    {
        tips.push(oid);
    }
    ahead_of(repo, &tips, base, base_commit)
}

/// Commits reachable from `tips` that neither the base commit nor the
/// base's current tip reaches (a squash-merged branch's commits are not
/// reachable from the base: they count). With no base at all, the
/// person's local branches count as its base.
pub(super) fn ahead_of(
    repo: &Repository,
    tips: &[Oid],
    base: &str,
    base_commit: &str,
) -> Result<u32, WorktreeError> {
    if tips.is_empty() {
        return Ok(0);
    }
    let walk_err = |e| git_error("cannot walk the history", e);
    let mut walk = repo.revwalk().map_err(walk_err)?;
    for tip in tips {
        walk.push(*tip).map_err(walk_err)?;
    }
    if base.is_empty() && base_commit.is_empty() {
        // No base known: the person's own local branches are the base
        // (not agentd's branches, tags or remote-tracking branches, which
        // a fetch can take away).
        let refs = repo.references_glob("refs/heads/*").map_err(walk_err)?;
        for r in refs.flatten() {
            if r.name()
                .is_some_and(|n| n.starts_with("refs/heads/agentd/"))
            {
                continue;
            }
            if let Ok(c) = r.peel_to_commit() {
                walk.hide(c.id()).map_err(walk_err)?;
            }
        }
    }
    if let Ok(oid) = Oid::from_str(base_commit)
        && repo.find_commit(oid).is_ok()
    {
        walk.hide(oid).map_err(walk_err)?;
    }
    if !base.is_empty()
        && let Ok(tip) = repo.revparse_single(base).and_then(|o| o.peel_to_commit())
    {
        walk.hide(tip.id()).map_err(walk_err)?;
    }
    let mut ahead = 0u32;
    for oid in walk {
        oid.map_err(walk_err)?;
        ahead = ahead.saturating_add(1);
    }
    Ok(ahead)
}
