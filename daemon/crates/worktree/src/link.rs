//! The `.git` link of an agent's tree (DESIGN §9): a file naming git's
//! record of the tree in the repository's common dir. A worktree agent can
//! replace it — it lies in its workspace — with a repository of its own
//! whose config runs commands (`core.fsmonitor`, hooks) for whoever runs
//! git in the tree next: the person, or the `git add && commit` a merge's
//! message suggests. So agentd never reads a tree through that file: it
//! opens the tree from git's record (`open_tree`), checks the link before
//! it works on the tree (`check`), and at the agent's end puts the link
//! back, keeping what the agent had put there under another name
//! (`restore`).

use std::path::{Path, PathBuf};

use git2::Repository;

use super::error::WorktreeError;
use super::{checkout_of, git_error, is_agentd_tree};

/// The largest link file read.
const MAX_LINK_BYTES: u64 = 4096;
/// Where a replaced link's content is kept, in the tree.
const KEPT_NAME: &str = ".git.replaced-by-agent";

/// Opens the worktree `name` of the repository whose common dir is
/// `common` from git's record of it (`<common>/worktrees/<name>`, which
/// names the tree): the tree's own `.git` is not read. (libgit2's
/// `open_from_worktree` goes through the tree's `.git`.)
pub fn open_record(common: &Path, name: &str) -> Result<Repository, git2::Error> {
    Repository::open_ext(
        common.join("worktrees").join(name),
        git2::RepositoryOpenFlags::NO_SEARCH,
        std::iter::empty::<&std::ffi::OsStr>(),
    )
}

/// The tree at `path` and git's record of it, if it is one of agentd's
/// trees that git knows (and git's record names this very tree).
fn record_of(path: &Path) -> Option<(Repository, PathBuf)> {
    let name = path.file_name()?.to_str()?;
    if !is_agentd_tree(path, name) {
        return None;
    }
    let main = Repository::open(checkout_of(path)?).ok()?;
    let repo = open_record(main.commondir(), name).ok()?;
    let workdir = repo.workdir()?.canonicalize().ok()?;
    if workdir != path.canonicalize().ok()? {
        return None;
    }
    let admin = repo.path().to_path_buf();
    Some((repo, admin))
}

/// Opens the tree at `path` through git's record of it, never through the
/// tree's own `.git` (an agent's tree); any other directory as git would.
pub fn open_tree(path: &Path) -> Result<Repository, git2::Error> {
    match record_of(path) {
        Some((repo, _)) => Ok(repo),
        None => Repository::open(path),
    }
}

/// What a tree's `.git` is now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Link {
    /// The file agentd made, naming git's record of the tree.
    Intact,
    /// Something else: what.
    Replaced(String),
    /// Not an agentd tree git knows: nothing to check.
    Unknown,
}

/// Checks the `.git` of the tree at `path` against git's record of it.
pub fn check(path: &Path) -> Link {
    let Some((_, admin)) = record_of(path) else {
        return Link::Unknown;
    };
    state_of(path, &admin)
}

fn state_of(path: &Path, admin: &Path) -> Link {
    let dot_git = path.join(".git");
    let meta = match std::fs::symlink_metadata(&dot_git) {
        Ok(m) => m,
        Err(_) => return Link::Replaced("it is missing".into()),
    };
    let kind = meta.file_type();
    if kind.is_symlink() {
        return Link::Replaced("a symbolic link".into());
    }
    if kind.is_dir() {
        return Link::Replaced("a directory: a repository of the agent's own".into());
    }
    let text = agentd_sandbox::beneath::open_file_nofollow(&dot_git)
        .ok()
        .and_then(|fd| agentd_sandbox::beneath::read_capped(fd, MAX_LINK_BYTES).ok())
        .map(|b| String::from_utf8_lossy(&b).into_owned());
    let Some(text) = text else {
        return Link::Replaced("not a readable file".into());
    };
    let named = text.trim().strip_prefix("gitdir:").map(str::trim);
    let same = named.is_some_and(|n| {
        let n = Path::new(n);
        let n = if n.is_absolute() {
            n.to_path_buf()
        } else {
            path.join(n)
        };
        n.canonicalize().ok() == admin.canonicalize().ok()
    });
    if same {
        Link::Intact
    } else {
        Link::Replaced(format!(
            "a file naming {}",
            crate::domain::text::quote(named.unwrap_or("no repository"))
        ))
    }
}

/// Puts back the `.git` link of the tree at `path` if the agent replaced
/// it, keeping what was there as `.git.replaced-by-agent` (untracked: the
/// tree is then kept, for the person to look at). Returns what was done,
/// for the person; None when the link was intact. Call it only once the
/// agent (and everything it started) has ended.
pub fn restore(path: &Path) -> Result<Option<String>, WorktreeError> {
    let Some((_, admin)) = record_of(path) else {
        return Ok(None);
    };
    let Link::Replaced(what) = state_of(path, &admin) else {
        return Ok(None);
    };
    let dot_git = path.join(".git");
    let mut kept = path.join(KEPT_NAME);
    let mut n = 2;
    while kept.symlink_metadata().is_ok() {
        kept = path.join(format!("{KEPT_NAME}-{n}"));
        n += 1;
    }
    if dot_git.symlink_metadata().is_ok() {
        std::fs::rename(&dot_git, &kept).map_err(|e| {
            WorktreeError::refused(format!("cannot move {} aside: {e}", dot_git.display()))
        })?;
    }
    let link = format!("gitdir: {}\n", admin.display());
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&dot_git)
        .and_then(|mut f| std::io::Write::write_all(&mut f, link.as_bytes()));
    written.map_err(|e| {
        WorktreeError::refused(format!("cannot restore {}: {e}", dot_git.display()))
    })?;
    let kept_note = if kept.symlink_metadata().is_ok() {
        format!(
            " and kept what the agent had put there as {}",
            kept.display()
        )
    } else {
        String::new()
    };
    Ok(Some(format!(
        "the agent had replaced its worktree's .git link ({what}); agentd restored it{kept_note} — look at that before running git on it"
    )))
}

/// Why agentd will not suggest running git in the tree at `path` now, if
/// its link is not the one agentd made.
pub fn refusal(path: &Path) -> Option<WorktreeError> {
    match check(path) {
        Link::Replaced(what) => Some(WorktreeError::refused(format!(
            "the agent replaced its worktree's .git link ({what}), so running git in {} could run commands the agent chose; agentd restores the link when the agent ends (or `agentctl rm` it); until then do not run git there",
            path.display()
        ))),
        Link::Intact | Link::Unknown => None,
    }
}

/// A `git2` error about the tree at `path`.
pub fn open_error(path: &Path, e: git2::Error) -> WorktreeError {
    git_error(&format!("cannot open the worktree {}", path.display()), e)
}

/// After the checkout holding the tree `name` was moved (`mv proj proj2`),
/// git's record of the tree still names the old place, and the tree's link
/// the old record: both are pointed at where they are now, as `git
/// worktree repair` would. `main` is the repository's main checkout now
/// (the record's common dir moved with it). Returns the tree's path when it
/// was repaired; None when git's record is right, or no tree of that name
/// is under `main` (then it is gone, not moved).
pub fn repair_moved(common: &Path, name: &str, registered: &Path, main: &Path) -> Option<PathBuf> {
    if registered.exists() {
        return None;
    }
    let places = super::Places::verify(main, common, false).ok()?;
    if !places.holds_tree(name) {
        return None;
    }
    let tree = main.join(super::WORKTREES_DIR).join(name);
    let admin = common.join("worktrees").join(name);
    // The record first: once it names the tree, agentd reads the tree
    // through it (and puts its link back at the agent's end if need be).
    let rewrite = |file: &str, text: String| {
        let tmp = admin.join(format!("{file}.agentd-repair"));
        std::fs::write(&tmp, text).and_then(|()| std::fs::rename(&tmp, admin.join(file)))
    };
    // libgit2 wrote the common dir as an absolute path; git's own
    // relative form moves with the repository from now on.
    rewrite("commondir", "../..\n".into()).ok()?;
    rewrite("gitdir", format!("{}\n", tree.join(".git").display())).ok()?;
    let link = tree.join(".git");
    if std::fs::symlink_metadata(&link).is_ok_and(|m| m.file_type().is_file()) {
        let tmp = tree.join(".git.agentd-repair");
        let written = std::fs::write(&tmp, format!("gitdir: {}\n", admin.display()))
            .and_then(|()| std::fs::rename(&tmp, &link));
        if let Err(e) = written {
            tracing::warn!(tree = %tree.display(), error = %e, "cannot repair the moved worktree's link");
        }
    }
    tracing::info!(tree = %tree.display(), was = %registered.display(), "followed a worktree whose checkout moved");
    Some(tree)
}
