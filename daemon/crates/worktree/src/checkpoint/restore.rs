//! Putting a workspace back as a checkpoint recorded it: files changed
//! since are written back, files made since removed, and nothing else
//! touched. What the person changed since the agent last touched the
//! workspace is refused by name unless forced. The daemon writes through
//! no link (a link in the workspace is replaced, never followed), and a
//! restore is idempotent: one a crash cut short is finished by doing it
//! again (the supervisor journals it).

use std::io::Write as _;
use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;

use git2::{Delta, Oid};
use nix::fcntl::OFlag;
use nix::unistd::UnlinkatFlags;

use super::{Changed, Shadow};
use crate::WorktreeError;
use agentd_sandbox::beneath::{self, Links};

/// What a restore did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Restored {
    /// Paths written back.
    pub written: Vec<String>,
    /// Paths removed.
    pub removed: Vec<String>,
}

fn io(what: String) -> impl Fn(std::io::Error) -> WorktreeError {
    move |e| WorktreeError::refused(format!("{what}: {e}"))
}

/// Refuses, naming the paths, when a path a restore of `workspace` to
/// `target` would touch changed since `guard` (the tree as the agent left
/// it): what the person did since is never lost without `--force`.
pub fn check(
    shadow: &Shadow,
    workspace: &Path,
    target: Oid,
    guard: Oid,
) -> Result<(), WorktreeError> {
    let now = shadow
        .record(workspace, "before-rewind", "the workspace before a rewind")?
        .tree;
    let touched: std::collections::HashSet<String> = shadow
        .changed(Some(now), target)?
        .into_iter()
        .map(|c| c.path)
        .collect();
    let since: Vec<Changed> = shadow.changed(Some(guard), now)?;
    let mut conflicts: Vec<String> = since
        .into_iter()
        .map(|c| c.path)
        .filter(|p| touched.contains(p))
        .collect();
    if conflicts.is_empty() {
        return Ok(());
    }
    conflicts.sort();
    // Named, but not all of thousands.
    const SHOWN: usize = 20;
    let more = conflicts.len().saturating_sub(SHOWN);
    conflicts.truncate(SHOWN);
    let and_more = if more > 0 {
        format!(" and {more} more")
    } else {
        String::new()
    };
    Err(WorktreeError::refused(format!(
        "changed since the agent last worked here, so a rewind would lose it: {}{and_more}; pass --force to rewind them too",
        conflicts.join(", ")
    )))
}

/// Restores `workspace` to the tree `target` of `shadow`, calling
/// `progress` after each path (`check` first, unless forced).
pub fn restore(
    shadow: &Shadow,
    workspace: &Path,
    target: Oid,
    progress: &mut dyn FnMut(&str),
) -> Result<Restored, WorktreeError> {
    let now = shadow
        .record(workspace, "before-rewind", "the workspace before a rewind")?
        .tree;
    let repo = shadow.repo();
    let tree = |id: Oid| {
        repo.find_tree(id)
            .map_err(super::git_err("cannot read a checkpoint"))
    };
    let (now_tree, target_tree) = (tree(now)?, tree(target)?);
    let diff = repo
        .diff_tree_to_tree(Some(&now_tree), Some(&target_tree), None)
        .map_err(super::git_err(
            "cannot compare the workspace with the checkpoint",
        ))?;
    let root =
        beneath::open_dir(workspace).map_err(io(format!("cannot open {}", workspace.display())))?;
    let mut done = Restored::default();
    for d in diff.deltas() {
        let old = d.old_file();
        let new = d.new_file();
        let path = new
            .path()
            .or(old.path())
            .map(Path::to_path_buf)
            .unwrap_or_default();
        let shown = path.display().to_string();
        match d.status() {
            Delta::Deleted => {
                remove(&root, &path).map_err(io(format!("cannot remove {shown}")))?;
                progress(&shown);
                done.removed.push(shown);
            }
            _ => {
                let blob = repo
                    .find_blob(new.id())
                    .map_err(super::git_err("cannot read a checkpoint's file"))?;
                put(&root, &path, blob.content(), u32::from(new.mode()))
                    .map_err(io(format!("cannot write {shown}")))?;
                progress(&shown);
                done.written.push(shown);
            }
        }
    }
    // Directories the removals emptied, that the checkpoint did not have.
    for removed in &done.removed {
        let mut dir = Path::new(removed).parent();
        while let Some(d) = dir.filter(|d| !d.as_os_str().is_empty()) {
            if target_tree.get_path(d).is_ok() {
                break;
            }
            let Some(parent) = d.parent() else { break };
            let at = if parent.as_os_str().is_empty() {
                root.try_clone().map_err(io("cannot open".into()))?
            } else {
                match beneath::dir(&root, parent, Links::Refused, false) {
                    Ok(fd) => fd,
                    Err(_) => break,
                }
            };
            let name = d.file_name().unwrap_or_default();
            if nix::unistd::unlinkat(at.as_fd(), name, UnlinkatFlags::RemoveDir).is_err() {
                break;
            }
            dir = d.parent();
        }
    }
    Ok(done)
}

/// The directory holding `path`, opened (made where missing) through no link.
fn parent_of(root: &OwnedFd, path: &Path) -> std::io::Result<OwnedFd> {
    match path.parent().filter(|p| !p.as_os_str().is_empty()) {
        Some(p) => beneath::dir(root, p, Links::Refused, true),
        None => root.try_clone(),
    }
}

/// Removes whatever is at `path` (a file, a link, or a directory the
/// checkpoint holds a file in place of).
fn remove(root: &OwnedFd, path: &Path) -> std::io::Result<()> {
    let dir = match path.parent().filter(|p| !p.as_os_str().is_empty()) {
        Some(p) => match beneath::dir(root, p, Links::Refused, false) {
            Ok(d) => d,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e),
        },
        None => root.try_clone()?,
    };
    let name = path.file_name().unwrap_or_default();
    match nix::unistd::unlinkat(dir.as_fd(), name, UnlinkatFlags::NoRemoveDir) {
        Ok(()) | Err(nix::errno::Errno::ENOENT) => Ok(()),
        Err(nix::errno::Errno::EISDIR) => {
            // remove_dir_all does not follow links inside.
            std::fs::remove_dir_all(beneath::fd_path(&dir).join(name))
        }
        Err(e) => Err(beneath::io(e)),
    }
}

/// Puts `content` at `path` with git's `mode` (a link for 0o120000).
fn put(root: &OwnedFd, path: &Path, content: &[u8], mode: u32) -> std::io::Result<()> {
    let dir = parent_of(root, path)?;
    let name = path.file_name().unwrap_or_default();
    remove(root, path)?;
    if mode == 0o120000 {
        use std::os::unix::ffi::OsStrExt as _;
        let target = std::ffi::OsStr::from_bytes(content);
        return nix::unistd::symlinkat(target, dir.as_fd(), name).map_err(beneath::io);
    }
    let perms = if mode & 0o111 != 0 { 0o755 } else { 0o644 };
    let fd = beneath::open(
        &dir,
        Path::new(name),
        OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_CLOEXEC,
        perms,
        Links::Refused,
    )?;
    let mut file = std::fs::File::from(fd);
    file.write_all(content)?;
    Ok(())
}
