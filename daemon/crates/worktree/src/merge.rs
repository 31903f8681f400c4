//! `agentctl merge`: the agent's branch into the checkout it came from,
//! only when that checkout is clean; a conflict changes nothing. This file
//! decides what the merge is (`prepare`: nothing in the checkout changes);
//! `merge_journal` writes it into the checkout, all or nothing across a
//! crash.

use git2::{BranchType, Commit, Repository, Signature, StatusOptions};

use super::error::WorktreeError;
use super::{base_label, git_error, inspect::work_in};
use crate::domain::{AgentWorktree, MergeJournal};

/// What a merge did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Merged {
    /// The checkout's branch already has every commit of the agent's.
    UpToDate,
    /// The checkout's branch moved forward to the agent's tip.
    FastForward { branch: String, commit: String },
    /// A new commit on the checkout's branch (two parents, or one for a
    /// squash).
    Commit {
        branch: String,
        commit: String,
        squashed: bool,
    },
}

/// A merge decided: nothing to do, or a change for the checkout.
#[derive(Clone, Debug)]
pub enum Prepared {
    Done(Merged),
    /// The checkout's branch moves as `journal` says; `merged` is the
    /// outcome once written (`merge_journal::apply`).
    Write {
        journal: MergeJournal,
        merged: Merged,
        log: String,
    },
}

/// Decides the merge of `wt`'s branch into its checkout's current branch.
/// `label` names the agent in messages and the commit. Refuses (changing
/// nothing) when the checkout has uncommitted changes or is detached, when
/// the worktree holds uncommitted work (it would not be merged), or on a
/// conflict (listing the conflicting paths). A merge commit it makes is
/// only an object until the merge is written.
pub fn prepare(wt: &AgentWorktree, squash: bool, label: &str) -> Result<Prepared, WorktreeError> {
    let repo = Repository::open(&wt.checkout)
        .map_err(|e| git_error(&format!("cannot open {}", wt.checkout.display()), e))?;
    let head = repo
        .head()
        .map_err(|e| git_error("cannot read the checkout's HEAD", e))?;
    checkout_ready(&repo, &head, wt)?;
    let branch_ref = head.name().unwrap_or_default().to_string();
    let branch_name = head.shorthand().unwrap_or_default().to_string();
    if wt.path.is_dir() {
        tree_committed(wt, label)?;
    }
    let head_commit = head
        .peel_to_commit()
        .map_err(|e| git_error("cannot read the checkout's HEAD", e))?;
    let theirs = repo
        .find_branch(&wt.branch, BranchType::Local)
        .and_then(|b| b.get().peel_to_commit())
        .map_err(|e| git_error(&format!("cannot find the branch {}", wt.branch), e))?;
    let (ours_id, theirs_id) = (head_commit.id(), theirs.id());
    let reachable = |from, to| repo.graph_descendant_of(from, to).unwrap_or(false);
    if ours_id == theirs_id || reachable(ours_id, theirs_id) {
        return Ok(Prepared::Done(Merged::UpToDate));
    }
    let journal = |to: git2::Oid| MergeJournal {
        checkout: wt.checkout.clone(),
        branch_ref: branch_ref.clone(),
        from: ours_id.to_string(),
        to: to.to_string(),
    };
    if !squash && reachable(theirs_id, ours_id) {
        return Ok(Prepared::Write {
            journal: journal(theirs_id),
            merged: Merged::FastForward {
                branch: branch_name,
                commit: theirs_id.to_string(),
            },
            log: format!("agentd: fast-forward to {}", wt.branch),
        });
    }
    let mut index = repo
        .merge_commits(&head_commit, &theirs, None)
        .map_err(|e| git_error("cannot merge", e))?;
    if index.has_conflicts() {
        return Err(conflicts(&index, wt, &branch_name));
    }
    let tree_id = index
        .write_tree_to(&repo)
        .map_err(|e| git_error("cannot write the merged tree", e))?;
    if head_commit.tree_id() == tree_id {
        // The checkout has the agent's change already (squashed before).
        return Ok(Prepared::Done(Merged::UpToDate));
    }
    let tree = repo
        .find_tree(tree_id)
        .map_err(|e| git_error("cannot read the merged tree", e))?;
    let sig = repo
        .signature()
        .or_else(|_| Signature::now("agentd", "agentd@localhost"))
        .map_err(|e| git_error("cannot make a signature", e))?;
    let message = if squash {
        format!(
            "{label} (squashed from {}, based on {})",
            wt.branch,
            base_label(&wt.base)
        )
    } else {
        format!("Merge branch '{}' ({label})", wt.branch)
    };
    let parents: Vec<&Commit> = if squash {
        vec![&head_commit]
    } else {
        vec![&head_commit, &theirs]
    };
    let commit_id = repo
        .commit(None, &sig, &sig, &message, &tree, &parents)
        .map_err(|e| git_error("cannot commit the merge", e))?;
    Ok(Prepared::Write {
        journal: journal(commit_id),
        merged: Merged::Commit {
            branch: branch_name,
            commit: commit_id.to_string(),
            squashed: squash,
        },
        log: format!("agentd: merge {}", wt.branch),
    })
}

/// The checkout can take a merge: on a branch, in no other operation,
/// with no uncommitted changes to tracked files.
fn checkout_ready(
    repo: &Repository,
    head: &git2::Reference<'_>,
    wt: &AgentWorktree,
) -> Result<(), WorktreeError> {
    if !head.is_branch() {
        return Err(WorktreeError::refused(format!(
            "{} has a detached HEAD; check out the branch to merge into first",
            wt.checkout.display()
        )));
    }
    if repo.state() != git2::RepositoryState::Clean {
        return Err(WorktreeError::refused(format!(
            "{} is in the middle of another operation ({:?}); finish or abort it first",
            wt.checkout.display(),
            repo.state()
        )));
    }
    let dirty = tracked_changes(repo)?;
    if dirty > 0 {
        return Err(WorktreeError::refused(format!(
            "{} has uncommitted changes ({dirty} files); commit or stash them, then merge again",
            wt.checkout.display()
        )));
    }
    Ok(())
}

/// The agent's tree holds no uncommitted work, which a merge of its
/// branch would leave out.
fn tree_committed(wt: &AgentWorktree, label: &str) -> Result<(), WorktreeError> {
    // Its message would have the person run git in the tree.
    if let Some(refused) = super::link::refusal(&wt.path) {
        return Err(refused);
    }
    let held = work_in(&wt.path, &wt.branch, &wt.base, &wt.base_commit)?;
    let uncommitted = held.work.changed + held.work.untracked;
    if uncommitted > 0 {
        return Err(WorktreeError::refused(format!(
            "{label}'s worktree has {uncommitted} uncommitted files, which a merge of its branch would leave out; commit them (git -C {} add -A && git -C {} commit) or look at them with `agentctl diff`, then merge again",
            wt.path.display(),
            wt.path.display()
        )));
    }
    Ok(())
}

/// The refusal of a merge that conflicts, naming the paths.
fn conflicts(index: &git2::Index, wt: &AgentWorktree, branch_name: &str) -> WorktreeError {
    let listed = match index.conflicts() {
        Ok(listed) => listed,
        Err(e) => return git_error("cannot read the conflicts", e),
    };
    let mut paths: Vec<String> = listed
        .flatten()
        .filter_map(|c| c.our.or(c.their).or(c.ancestor))
        .map(|e| String::from_utf8_lossy(&e.path).into_owned())
        .collect();
    paths.dedup();
    WorktreeError::refused(format!(
        "merging {} into {branch_name} conflicts in: {}; nothing was changed (merge by hand with `git merge {}`)",
        wt.branch,
        paths.join(", "),
        wt.branch
    ))
}

/// `prepare` and `merge_journal::apply` without a journal: for tests of
/// the merge rules only (the daemon journals every merge it writes).
#[cfg(test)]
pub fn merge(wt: &AgentWorktree, squash: bool, label: &str) -> Result<Merged, WorktreeError> {
    match prepare(wt, squash, label)? {
        Prepared::Done(m) => Ok(m),
        Prepared::Write {
            journal,
            merged,
            log,
        } => {
            super::merge_journal::apply(&journal, &log)?;
            Ok(merged)
        }
    }
}

/// Tracked files with staged or unstaged changes (untracked ones are
/// allowed: the checkout refuses to write over them).
fn tracked_changes(repo: &Repository) -> Result<usize, WorktreeError> {
    let mut opts = StatusOptions::new();
    opts.include_untracked(false).include_ignored(false);
    let statuses = repo
        .statuses(Some(&mut opts))
        .map_err(|e| git_error("cannot read the checkout's status", e))?;
    Ok(statuses.iter().filter(|s| !s.status().is_empty()).count())
}
