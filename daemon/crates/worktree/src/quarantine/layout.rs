//! The quarantine's git directory as the daemon lays it out at the start
//! of each run: a git directory of the agent's own whose objects fall back
//! on the repository's (read only), whose config includes the repository's,
//! whose `HEAD` names the agent's branch at the repository's value, and
//! which holds a snapshot of the repository's other refs (`packed-refs`:
//! readable, and nothing the agent does to them reaches the repository).

use std::os::fd::OwnedFd;
use std::path::Path;

use git2::Repository;

use super::{Place, files};
use crate::WorktreeError;

/// The largest file agentd copies from the repository's git directory into
/// a quarantine (an index, `info/exclude`, `shallow`).
pub(super) const MAX_COPY_BYTES: u64 = 256 * 1024 * 1024;

fn io(what: &str) -> impl Fn(std::io::Error) -> WorktreeError + '_ {
    move |e| {
        WorktreeError::refused(format!(
            "cannot lay out the agent's git quarantine ({what}): {e}"
        ))
    }
}

/// The repository's git directories, opened: the common one and the
/// tree's own (the same for the main checkout).
pub(super) struct RealDirs {
    pub(super) common: OwnedFd,
    pub(super) gitdir: OwnedFd,
}

/// Writes the git directory `qgit` for `place`; `real` is where the
/// repository's git directory is seen from inside the agent's namespace.
pub(super) fn lay_out(
    place: &Place,
    repo: &Repository,
    dirs: &RealDirs,
    qgit: &OwnedFd,
    real: &Path,
) -> Result<(), WorktreeError> {
    for d in [
        "objects/info",
        "objects/pack",
        "refs/heads",
        "refs/tags",
        "info",
    ] {
        files::dir(qgit, d, true).map_err(io(d))?;
    }
    files::put(qgit, "HEAD", format!("ref: {}\n", place.branch).as_bytes()).map_err(io("HEAD"))?;
    let info = files::dir(qgit, "objects/info", false).map_err(io("objects/info"))?;
    let alternates = format!("{}\n", real.join("objects").display());
    files::put(&info, "alternates", alternates.as_bytes()).map_err(io("alternates"))?;
    files::put(qgit, "config", config(repo, real).as_bytes()).map_err(io("config"))?;
    files::put(
        qgit,
        "packed-refs",
        packed_refs(repo, &place.branch)?.as_bytes(),
    )
    .map_err(io("packed-refs"))?;
    // Copied so the agent's git sees what the person's does.
    let copy =
        |from: &OwnedFd, rel: &str, into: &OwnedFd, name: &str| -> Result<(), WorktreeError> {
            match files::read(from, rel, MAX_COPY_BYTES).map_err(io(rel))? {
                Some(bytes) => files::put(into, name, &bytes).map_err(io(rel)),
                None => files::unlink(into, name).map_err(io(rel)),
            }
        };
    let qinfo = files::dir(qgit, "info", false).map_err(io("info"))?;
    if let Err(e) = copy(&dirs.common, "info/exclude", &qinfo, "exclude") {
        // Only what `git status` hides depends on it: never a link
        // followed, and the run goes on without it.
        tracing::warn!(error = %e, "not copying info/exclude into the agent's git quarantine");
        files::put(&qinfo, "exclude", b"").map_err(io("info/exclude"))?;
    }
    copy(&dirs.common, "shallow", qgit, "shallow")?;
    copy(&dirs.gitdir, "index", qgit, "index")?;
    Ok(())
}

/// Points the agent's branch at `value` (removes it for None).
pub(super) fn set_branch(
    qgit: &OwnedFd,
    branch: &str,
    value: Option<git2::Oid>,
) -> Result<(), WorktreeError> {
    let (parent, leaf) = branch
        .rsplit_once('/')
        .ok_or_else(|| WorktreeError::refused(format!("{branch} is not a branch")))?;
    let dir = files::dir(qgit, parent, true).map_err(io(parent))?;
    match value {
        Some(oid) => files::put(&dir, leaf, format!("{oid}\n").as_bytes()),
        None => files::unlink(&dir, leaf),
    }
    .map_err(io(branch))
}

/// The config: the repository's own (included), then what makes this a
/// git directory of a working tree with the repository's hooks, never
/// collected by `gc --auto` (its objects fall back on the repository's).
fn config(repo: &Repository, real: &Path) -> String {
    let own_hooks = git2::Config::open(&real_config(repo))
        .ok()
        .and_then(|c| c.get_string("core.hooksPath").ok())
        .is_some();
    let hooks = if own_hooks {
        String::new()
    } else {
        format!("\thooksPath = {}\n", quoted(&real.join("hooks")))
    };
    format!(
        "[include]\n\tpath = {}\n[core]\n\tbare = false\n\tlogAllRefUpdates = true\n{hooks}[gc]\n\tauto = 0\n",
        quoted(&real.join("config"))
    )
}

fn real_config(repo: &Repository) -> std::path::PathBuf {
    repo.commondir().join("config")
}

/// A path as a git config value.
fn quoted(path: &Path) -> String {
    let text = path.display().to_string();
    format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""))
}

/// Every ref of the repository but `branch` (and symbolic ones), as
/// `packed-refs` lines.
fn packed_refs(repo: &Repository, branch: &str) -> Result<String, WorktreeError> {
    let mut out = String::new();
    let refs = repo
        .references()
        .map_err(|e| crate::git_error("cannot list the repository's refs", e))?;
    for r in refs.flatten() {
        let (Some(name), Some(target)) = (r.name(), r.target()) else {
            continue;
        };
        if name == branch || !name.starts_with("refs/") || name.contains(['\n', ' ']) {
            continue;
        }
        out.push_str(&format!("{target} {name}\n"));
    }
    Ok(out)
}
