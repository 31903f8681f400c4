//! Making an agent's worktree: validate everything first (`plan`, which
//! changes nothing), then create the branch and the tree, locked from the
//! start, with submodules initialised (`create`).

use std::path::{Path, PathBuf};

use git2::{BranchType, Oid, Repository, WorktreeAddOptions};

use super::error::WorktreeError;
use super::places::Places;
use super::{WORKTREES_DIR, branch_for, git_error};
use crate::domain::text::quote;
use crate::domain::{AgentWorktree, WorkSummary, WorktreeState};

/// A worktree about to be made, checked against the repository.
#[derive(Clone, Debug)]
pub struct Plan {
    /// git's name for it: the agent's short id.
    pub name: String,
    pub checkout: PathBuf,
    pub path: PathBuf,
    pub branch: String,
    pub base: String,
    pub base_commit: Oid,
    /// The agent's working directory: `cwd`'s place inside the new tree.
    pub cwd: PathBuf,
    /// The store whose agent it is (written into the marker).
    pub store: String,
}

impl Plan {
    /// The record of the tree this plan makes.
    pub fn record(&self) -> AgentWorktree {
        AgentWorktree {
            path: self.path.clone(),
            branch: self.branch.clone(),
            checkout: self.checkout.clone(),
            base: self.base.clone(),
            base_commit: self.base_commit.to_string(),
            owned: true,
            state: WorktreeState::Active,
            work: WorkSummary::default(),
            notice: None,
        }
    }
}

/// Checks that a worktree for agent `short_id` can be made from the
/// checkout holding `cwd` (canonical), on `base` or the checkout's HEAD.
/// Changes nothing.
pub fn plan(
    cwd: &Path,
    base: Option<&str>,
    short_id: &str,
    store: &str,
) -> Result<Plan, WorktreeError> {
    let repo = Repository::discover(cwd).map_err(|_| {
        WorktreeError::refused(format!(
            "worktree isolation needs a git repository, and {} is not inside one; start from a checkout, or without worktree isolation",
            cwd.display()
        ))
    })?;
    if repo.is_bare() {
        return Err(WorktreeError::refused(format!(
            "{} is a bare repository, which has no checkout to branch from; run --worktree from a checkout of it",
            repo.path().display()
        )));
    }
    let checkout = repo
        .workdir()
        .ok_or_else(|| WorktreeError::refused("the repository has no working directory"))?
        .canonicalize()
        .map_err(|e| WorktreeError::refused(format!("cannot resolve the checkout: {e}")))?;
    let relative = cwd.strip_prefix(&checkout).map_err(|_| {
        WorktreeError::refused(format!(
            "{} lies inside the repository's .git directory; run --worktree from its checkout",
            cwd.display()
        ))
    })?;
    let (base_name, commit) = base_commit(&repo, base, &checkout)?;
    if !relative.as_os_str().is_empty() {
        let tree = commit
            .tree()
            .map_err(|e| git_error("cannot read the base tree", e))?;
        let is_dir = tree
            .get_path(relative)
            .is_ok_and(|e| e.kind() == Some(git2::ObjectType::Tree));
        if !is_dir {
            return Err(WorktreeError::refused(format!(
                "the working directory {} is not part of {} (untracked, ignored or new), so the worktree would not have it; start the agent from a directory the base commit has",
                relative.display(),
                super::base_label(&base_name)
            )));
        }
    }
    let main = main_tree(&repo, &checkout)?;
    let path = main.join(WORKTREES_DIR).join(short_id);
    let branch = branch_for(short_id);
    if path.exists() {
        return Err(WorktreeError::refused(format!(
            "{} exists already; agentd will not reuse it",
            path.display()
        )));
    }
    if repo.find_branch(&branch, BranchType::Local).is_ok() {
        return Err(WorktreeError::refused(format!(
            "the branch {branch} exists already; agentd will not reuse it"
        )));
    }
    Ok(Plan {
        name: short_id.to_string(),
        // `join("")` would add a trailing separator.
        cwd: if relative.as_os_str().is_empty() {
            path.clone()
        } else {
            path.join(relative)
        },
        checkout,
        path,
        branch,
        base: base_name,
        base_commit: commit.id(),
        store: store.to_string(),
    })
}

/// What the tree branches from: `base` (a ref kept by its full name, an
/// expression by the commit it names), else the checkout's HEAD.
fn base_commit<'r>(
    repo: &'r Repository,
    base: Option<&str>,
    checkout: &Path,
) -> Result<(String, git2::Commit<'r>), WorktreeError> {
    let given = base
        .map(str::trim)
        .filter(|b| !b.is_empty() && *b != "HEAD");
    match given {
        Some(given) => {
            let (object, reference) = repo.revparse_ext(given).map_err(|_| {
                WorktreeError::invalid(format!(
                    "--base '{}' does not name a commit in {}",
                    quote(given),
                    checkout.display()
                ))
            })?;
            let commit = object.peel_to_commit().map_err(|_| {
                WorktreeError::invalid(format!("--base '{}' is not a commit", quote(given)))
            })?;
            // A ref is kept by its full name (unambiguous in every
            // worktree); an expression (`main~2`) by the commit it named.
            let name = reference
                .and_then(|r| r.name().map(str::to_string))
                .filter(|n| n.starts_with("refs/"))
                .unwrap_or_else(|| commit.id().to_string());
            Ok((name, commit))
        }
        None => {
            let head = repo.head().map_err(|_| {
                WorktreeError::refused(format!(
                    "the repository at {} has no commits yet; commit something first or pass --base",
                    checkout.display()
                ))
            })?;
            let commit = head
                .peel_to_commit()
                .map_err(|e| git_error("cannot read HEAD", e))?;
            let name = match head.name() {
                Some(n) if head.is_branch() => n.to_string(),
                _ => commit.id().to_string(),
            };
            Ok((name, commit))
        }
    }
}

/// The repository's main working tree: trees go under it, even when the
/// agent starts in a linked worktree (another agent's tree), since a tree
/// inside a tree would be deleted with it.
fn main_tree(repo: &Repository, checkout: &Path) -> Result<PathBuf, WorktreeError> {
    if repo.is_worktree() {
        Repository::open(repo.commondir())
            .ok()
            .and_then(|r| r.workdir().and_then(|w| w.canonicalize().ok()))
            .ok_or_else(|| {
                WorktreeError::refused(format!(
                    "cannot find the main working tree of {}; make the worktree from the main checkout",
                    checkout.display()
                ))
            })
    } else {
        Ok(checkout.to_path_buf())
    }
}

/// Makes the planned worktree: the branch from the base commit, the tree,
/// locked with `lock_reason` from the moment it exists, `.agentd/` in the
/// repository's exclude file, submodules initialised. On failure nothing it
/// made is left behind.
pub fn create(plan: &Plan, lock_reason: &str) -> Result<(), WorktreeError> {
    let repo =
        Repository::open(&plan.checkout).map_err(|e| git_error("cannot open the repository", e))?;
    let common = repo.commondir().to_path_buf();
    drop(repo);
    make_tree_in_places(plan, &common, lock_reason, true)
}

/// Verifies where the tree goes (`Places`), excludes the worktrees
/// directory, and makes the tree confined to the verified places.
fn make_tree_in_places(
    plan: &Plan,
    common: &Path,
    lock_reason: &str,
    new_branch: bool,
) -> Result<(), WorktreeError> {
    let main = super::checkout_of(&plan.path)
        .filter(|m| plan.path.parent() == Some(&m.join(WORKTREES_DIR)))
        .ok_or_else(|| {
            WorktreeError::refused(format!(
                "{} is not where agentd makes worktrees",
                plan.path.display()
            ))
        })?;
    let places = Places::verify(&main, common, true)?;
    places.exclude_worktrees(common)?;
    places.confined(|| {
        let repo = Repository::open(&plan.checkout)
            .map_err(|e| git_error("cannot open the repository", e))?;
        make_tree(&repo, plan, lock_reason, new_branch)
    })?;
    // Made where it was verified to go, not through a link swapped in
    // meanwhile.
    if !places.holds_tree(&plan.name) {
        return Err(WorktreeError::refused(format!(
            "the worktree {} did not end up in {} (a link was swapped in while it was made); agentd left what was made for you to look at",
            plan.name,
            main.join(WORKTREES_DIR).display()
        )));
    }
    Ok(())
}

/// Makes again the tree of an agent that is to run again but whose tree is
/// gone: removed clean by agentd when it ended (the branch went with it:
/// made anew from the base commit), or deleted by someone (the branch is
/// still there: checked out again, with its commits; whatever was not
/// committed went with the directory). Same path and branch.
pub fn recreate(
    wt: &AgentWorktree,
    name: &str,
    lock_reason: &str,
    store: &str,
) -> Result<(), WorktreeError> {
    let base_commit = Oid::from_str(&wt.base_commit)
        .map_err(|e| git_error("the recorded base commit is not an id", e))?;
    let plan = Plan {
        name: name.to_string(),
        checkout: super::repo_dir(wt),
        path: wt.path.clone(),
        branch: wt.branch.clone(),
        base: wt.base.clone(),
        base_commit,
        cwd: wt.path.clone(),
        store: store.to_string(),
    };
    let repo =
        Repository::open(&plan.checkout).map_err(|e| git_error("cannot open the repository", e))?;
    // A record git still keeps of the vanished tree would refuse the name.
    if let Ok(stale) = repo.find_worktree(name)
        && !stale.path().exists()
    {
        if let Ok(git2::WorktreeLockStatus::Locked(reason)) = stale.is_locked()
            && !super::removable_lock(reason.as_deref().unwrap_or_default().trim(), name)
        {
            return Err(WorktreeError::refused(format!(
                "git's record of the vanished worktree {} is locked by someone else ({:?}); unlock it with `git worktree unlock` first",
                wt.path.display(),
                reason.unwrap_or_default().trim()
            )));
        }
        if super::remove::vanished_work(&repo, name, &wt.base_commit)? > 0 {
            return Err(WorktreeError::refused(format!(
                "git's record of the vanished worktree {} still holds commits (a detached HEAD or a submodule's) that exist nowhere else; recover them from {} first",
                wt.path.display(),
                repo.commondir().join("worktrees").join(name).display()
            )));
        }
        let mut prune = git2::WorktreePruneOptions::new();
        prune.locked(true);
        stale
            .prune(Some(&mut prune))
            .map_err(|e| git_error("cannot forget the vanished worktree", e))?;
    }
    let branch_exists = repo.find_branch(&plan.branch, BranchType::Local).is_ok();
    let common = repo.commondir().to_path_buf();
    drop(repo);
    make_tree_in_places(&plan, &common, lock_reason, !branch_exists)
}

fn make_tree(
    repo: &Repository,
    plan: &Plan,
    lock_reason: &str,
    new_branch: bool,
) -> Result<(), WorktreeError> {
    let turn = super::one_at_a_time::RepositoryTurn::of(repo.commondir());
    let _one_at_a_time = turn.take();
    // libgit2 makes this directory without tolerating that another tree
    // being made at the same moment made it first.
    let records = repo.commondir().join("worktrees");
    std::fs::create_dir_all(&records)
        .map_err(|e| WorktreeError::refused(format!("cannot create {}: {e}", records.display())))?;
    let commit = repo
        .find_commit(plan.base_commit)
        .map_err(|e| git_error("cannot find the base commit", e))?;
    let branch = if new_branch {
        repo.branch(&plan.branch, &commit, false)
    } else {
        repo.find_branch(&plan.branch, BranchType::Local)
    }
    .map_err(|e| git_error(&format!("cannot create the branch {}", plan.branch), e))?;
    let undo_branch = |repo: &Repository| {
        if let Ok(mut b) = repo.find_branch(&plan.branch, BranchType::Local) {
            let _ = b.delete();
        }
    };
    let reference = branch.into_reference();
    let mut opts = WorktreeAddOptions::new();
    opts.reference(Some(&reference)).lock(true);
    let wt = match repo.worktree(&plan.name, &plan.path, Some(&opts)) {
        Ok(wt) => wt,
        Err(e) => {
            if new_branch {
                undo_branch(repo);
            }
            return Err(git_error(
                &format!("cannot create the worktree {}", plan.path.display()),
                e,
            ));
        }
    };
    let finish = || -> Result<(), WorktreeError> {
        // Locked (with no reason) since it was made; now name the agent.
        wt.unlock()
            .map_err(|e| git_error("cannot lock the worktree", e))?;
        wt.lock(Some(lock_reason))
            .map_err(|e| git_error("cannot lock the worktree", e))?;
        super::write_marker(
            repo.commondir(),
            &plan.name,
            &super::Marker {
                base: plan.base.clone(),
                base_commit: plan.base_commit.to_string(),
                store: plan.store.clone(),
            },
        )?;
        // libgit2 writes the common dir as an absolute path; git's own
        // relative form keeps the record valid if the checkout moves.
        let commondir = repo
            .commondir()
            .join("worktrees")
            .join(&plan.name)
            .join("commondir");
        std::fs::write(&commondir, "../..\n").map_err(|e| {
            WorktreeError::refused(format!("cannot write {}: {e}", commondir.display()))
        })?;
        let tree_repo = Repository::open_from_worktree(&wt)
            .map_err(|e| git_error("cannot open the new worktree", e))?;
        super::submodules::init(&tree_repo)
    };
    if let Err(e) = finish() {
        // Just made from a commit: nothing in it is anybody's work yet.
        let _ = std::fs::remove_dir_all(&plan.path);
        let mut prune = git2::WorktreePruneOptions::new();
        prune.valid(true).locked(true).working_tree(false);
        let _ = wt.prune(Some(&mut prune));
        if new_branch {
            undo_branch(repo);
        }
        return Err(e);
    }
    Ok(())
}
