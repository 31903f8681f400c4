//! Finding worktrees: agentd's own in a repository (for `worktrees`, prune
//! and the startup sweep), and a person's worktree an agent is pinned to
//! with `working_dir`.

use std::path::{Path, PathBuf};

use git2::Repository;

use super::error::WorktreeError;
use super::{branch_for, checkout_of, git_error, is_agentd_tree};
use crate::domain::text::quote;
use crate::domain::{AgentWorktree, WorkSummary, WorktreeState};

/// One of agentd's worktrees, as git lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Found {
    /// git's name for it: the agent's short id.
    pub name: String,
    pub path: PathBuf,
    pub checkout: PathBuf,
    /// The branch its HEAD is on (`agentd/<name>` unless someone switched).
    pub branch: String,
    /// Whether its directory exists.
    pub exists: bool,
    /// agentd's marker: the base and base commit it was made from. None:
    /// not made by agentd (never removed as an orphan).
    pub marker: Option<super::Marker>,
}

/// agentd's worktrees of the repository whose common git directory is
/// `common_dir`: those git lists under some `<checkout>/.agentd/worktrees/`.
pub fn agentd_worktrees(common_dir: &Path) -> Result<Vec<Found>, WorktreeError> {
    let repo = Repository::open(common_dir).map_err(|e| {
        git_error(
            &format!("cannot open the repository {}", common_dir.display()),
            e,
        )
    })?;
    let names = repo
        .worktrees()
        .map_err(|e| git_error("cannot list the worktrees", e))?;
    let mut found = Vec::new();
    for name in names.iter().flatten() {
        let Ok(wt) = repo.find_worktree(name) else {
            continue;
        };
        let mut path = wt.path().to_path_buf();
        if !is_agentd_tree(&path, name) {
            continue;
        }
        // The checkout moved (and git's record with it): the tree is found
        // where it is now, and git's record of it repaired.
        if let Some(main) = repo.workdir()
            && let Some(moved) = super::link::repair_moved(repo.commondir(), name, &path, main)
        {
            path = moved;
        }
        let Some(checkout) = checkout_of(&path) else {
            continue;
        };
        // From git's record: the tree's own `.git` may be an agent's.
        let branch = super::link::open_record(repo.commondir(), name)
            .ok()
            .and_then(|r| {
                r.head()
                    .ok()
                    .and_then(|h| h.shorthand().map(str::to_string))
            })
            .unwrap_or_else(|| branch_for(name));
        found.push(Found {
            marker: super::read_marker(repo.commondir(), name),
            name: name.to_string(),
            exists: path.is_dir(),
            path,
            checkout,
            branch,
        });
    }
    Ok(found)
}

/// The common git directory of the repository holding `dir`, if any.
pub fn common_dir_of(dir: &Path) -> Option<PathBuf> {
    let repo = Repository::discover(dir).ok()?;
    repo.commondir().canonicalize().ok()
}

/// Validates `working_dir` for an agent started from `cwd`: an existing
/// directory inside a linked worktree git has registered for the same
/// repository as `cwd`. Returns the directory (canonical) and the record of
/// the pinned tree, which agentd never creates, locks or removes.
pub fn pinned(working_dir: &str, cwd: &Path) -> Result<(PathBuf, AgentWorktree), WorktreeError> {
    let bad =
        |why: String| WorktreeError::invalid(format!("working_dir '{}' {why}", quote(working_dir)));
    let dir = Path::new(working_dir);
    if !dir.is_absolute() {
        return Err(bad("is not an absolute path".into()));
    }
    let dir = dir
        .canonicalize()
        .map_err(|e| bad(format!("cannot be used: {e}")))?;
    if !dir.is_dir() {
        return Err(bad("is not a directory".into()));
    }
    if dir
        .ancestors()
        .any(|a| a.ends_with(Path::new(super::WORKTREES_DIR)))
    {
        return Err(bad(
            "is inside another agent's worktree, which agentd removes when that agent ends; give the agent isolation \"worktree\" instead".into(),
        ));
    }
    let ours = Repository::discover(cwd).map_err(|_| {
        bad(format!(
            "cannot be checked: the agent's directory {} is not in a git repository",
            cwd.display()
        ))
    })?;
    let theirs =
        Repository::discover(&dir).map_err(|_| bad("is not inside a git worktree".into()))?;
    let same = |r: &Repository| r.commondir().canonicalize().ok();
    if same(&ours).is_none() || same(&ours) != same(&theirs) {
        return Err(bad(
            "belongs to another repository than the agent's working directory".into(),
        ));
    }
    if !theirs.is_worktree() {
        return Err(bad(
            "is not in a linked worktree (`git worktree list` shows the registered ones); use cwd for the main checkout".into(),
        ));
    }
    let wt = git2::Worktree::open_from_repository(&theirs)
        .map_err(|e| git_error("cannot open the worktree", e))?;
    wt.validate().map_err(|e| {
        bad(format!(
            "is not a valid registered worktree: {}",
            e.message()
        ))
    })?;
    let root = theirs
        .workdir()
        .and_then(|w| w.canonicalize().ok())
        .ok_or_else(|| bad("has no working directory".into()))?;
    let head = theirs.head().ok();
    let branch = head
        .as_ref()
        .and_then(|h| h.shorthand().map(str::to_string))
        .unwrap_or_default();
    let base_commit = head
        .and_then(|h| h.target())
        .map(|o| o.to_string())
        .unwrap_or_default();
    let checkout = ours
        .workdir()
        .and_then(|w| w.canonicalize().ok())
        .unwrap_or_else(|| cwd.to_path_buf());
    Ok((
        dir,
        AgentWorktree {
            path: root,
            branch,
            checkout,
            base: String::new(),
            base_commit,
            owned: false,
            state: WorktreeState::Active,
            work: WorkSummary::default(),
            notice: None,
        },
    ))
}
