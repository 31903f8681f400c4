//! `agentctl merge`: the agent's branch into the checkout it came from,
//! only when that checkout is clean; a conflict changes nothing.

use git2::{BranchType, Commit, Repository, Signature, StatusOptions, build::CheckoutBuilder};

use super::{base_label, git_error, inspect::work_in};
use crate::domain::AgentWorktree;
use crate::error::AgentdError;

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

/// Merges `wt`'s branch into its checkout's current branch. `label` names
/// the agent in messages and the commit. Refuses (changing nothing) when the
/// checkout has uncommitted changes or is detached, when the worktree holds
/// uncommitted work (it would not be merged), or on a conflict (listing the
/// conflicting paths).
pub fn merge(wt: &AgentWorktree, squash: bool, label: &str) -> Result<Merged, AgentdError> {
    let repo = Repository::open(&wt.checkout)
        .map_err(|e| git_error(&format!("cannot open {}", wt.checkout.display()), e))?;
    let head = repo
        .head()
        .map_err(|e| git_error("cannot read the checkout's HEAD", e))?;
    if !head.is_branch() {
        return Err(AgentdError::precondition(format!(
            "{} has a detached HEAD; check out the branch to merge into first",
            wt.checkout.display()
        )));
    }
    if repo.state() != git2::RepositoryState::Clean {
        return Err(AgentdError::precondition(format!(
            "{} is in the middle of another operation ({:?}); finish or abort it first",
            wt.checkout.display(),
            repo.state()
        )));
    }
    let branch_ref = head.name().unwrap_or_default().to_string();
    let branch_name = head.shorthand().unwrap_or_default().to_string();
    let dirty = tracked_changes(&repo)?;
    if dirty > 0 {
        return Err(AgentdError::precondition(format!(
            "{} has uncommitted changes ({dirty} files); commit or stash them, then merge again",
            wt.checkout.display()
        )));
    }
    if wt.path.is_dir() {
        // Its message would have the person run git in the tree.
        if let Some(refused) = super::link::refusal(&wt.path) {
            return Err(refused);
        }
        let held = work_in(&wt.path, &wt.branch, &wt.base, &wt.base_commit)?;
        let uncommitted = held.work.changed + held.work.untracked;
        if uncommitted > 0 {
            return Err(AgentdError::precondition(format!(
                "{label}'s worktree has {uncommitted} uncommitted files, which a merge of its branch would leave out; commit them (git -C {} add -A && git -C {} commit) or look at them with `agentctl diff`, then merge again",
                wt.path.display(),
                wt.path.display()
            )));
        }
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
        return Ok(Merged::UpToDate);
    }
    if !squash && reachable(theirs_id, ours_id) {
        update_checkout(
            &repo,
            &theirs,
            &branch_ref,
            ours_id,
            &format!("agentd: fast-forward to {}", wt.branch),
        )?;
        return Ok(Merged::FastForward {
            branch: branch_name,
            commit: theirs_id.to_string(),
        });
    }
    let mut index = repo
        .merge_commits(&head_commit, &theirs, None)
        .map_err(|e| git_error("cannot merge", e))?;
    if index.has_conflicts() {
        let mut paths: Vec<String> = index
            .conflicts()
            .map_err(|e| git_error("cannot read the conflicts", e))?
            .flatten()
            .filter_map(|c| c.our.or(c.their).or(c.ancestor))
            .map(|e| String::from_utf8_lossy(&e.path).into_owned())
            .collect();
        paths.dedup();
        return Err(AgentdError::precondition(format!(
            "merging {} into {branch_name} conflicts in: {}; nothing was changed (merge by hand with `git merge {}`)",
            wt.branch,
            paths.join(", "),
            wt.branch
        )));
    }
    let tree_id = index
        .write_tree_to(&repo)
        .map_err(|e| git_error("cannot write the merged tree", e))?;
    if head_commit.tree_id() == tree_id {
        // The checkout has the agent's change already (squashed before).
        return Ok(Merged::UpToDate);
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
    let commit = repo
        .find_commit(commit_id)
        .map_err(|e| git_error("cannot read the merge commit", e))?;
    update_checkout(
        &repo,
        &commit,
        &branch_ref,
        ours_id,
        &format!("agentd: merge {}", wt.branch),
    )?;
    Ok(Merged::Commit {
        branch: branch_name,
        commit: commit_id.to_string(),
        squashed: squash,
    })
}

/// Tracked files with staged or unstaged changes (untracked ones are
/// allowed: the checkout refuses to write over them).
fn tracked_changes(repo: &Repository) -> Result<usize, AgentdError> {
    let mut opts = StatusOptions::new();
    opts.include_untracked(false).include_ignored(false);
    let statuses = repo
        .statuses(Some(&mut opts))
        .map_err(|e| git_error("cannot read the checkout's status", e))?;
    Ok(statuses.iter().filter(|s| !s.status().is_empty()).count())
}

/// Writes `commit`'s tree into the checkout and its index, then moves the
/// branch from `expected` to it (a compare-and-swap). HEAD is read again
/// first: if the branch moved while the merge was computed, nothing is
/// written. The checkout's baseline is HEAD's tree, and it refuses, before
/// writing anything, to overwrite a changed file or one git does not track.
fn update_checkout(
    repo: &Repository,
    commit: &Commit,
    branch_ref: &str,
    expected: git2::Oid,
    log: &str,
) -> Result<(), AgentdError> {
    let moved = || {
        AgentdError::precondition(
            "the checkout's branch moved while merging; nothing was changed, merge again",
        )
    };
    match repo.head() {
        Ok(h) if h.name() == Some(branch_ref) && h.target() == Some(expected) => {}
        _ => return Err(moved()),
    }
    let tree = commit
        .tree()
        .map_err(|e| git_error("cannot read the tree", e))?;
    let mut checkout = CheckoutBuilder::new();
    // Not even an ignored file (a person's .env) is written over.
    checkout.safe().overwrite_ignored(false);
    repo.checkout_tree(tree.as_object(), Some(&mut checkout))
        .map_err(|e| {
            AgentdError::precondition(if e.code() == git2::ErrorCode::Conflict {
                format!(
                    "the merge would overwrite files in the checkout that are changed or not tracked ({}); nothing was changed — commit or move them, then merge again",
                    e.message()
                )
            } else {
                format!(
                    "writing the merge into the checkout failed ({}); the branch was not moved; check `git status` before going on",
                    e.message()
                )
            })
        })?;
    repo.reference_matching(branch_ref, commit.id(), true, expected, log)
        .map_err(|e| {
            AgentdError::precondition(format!(
                "the checkout's branch moved while the merge was written ({}); the files hold the merge ({}) but the branch was not moved; check `git status`",
                e.message(),
                commit.id()
            ))
        })?;
    let mut index = repo
        .index()
        .map_err(|e| git_error("cannot open the index", e))?;
    index
        .read_tree(&tree)
        .and_then(|_| index.write())
        .map_err(|e| git_error("cannot write the index", e))
}
