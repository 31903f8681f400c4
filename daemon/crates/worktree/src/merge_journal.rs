//! Writing a merge into the person's checkout, all or nothing across a
//! crash (DESIGN §9). libgit2's checkout rewrites files in place, one
//! after the other, and moves the branch last: a SIGKILL half way left
//! 1,400 of 3,000 files rewritten under an unchanged HEAD. Here:
//!
//! - every file changes by renaming a complete new file over the old one
//!   (made beneath the checkout through no link), so each path holds its
//!   content before the merge or after it, never half of it;
//! - the branch moves in one step (a compare-and-swap of its ref), after
//!   every file is written;
//! - a journal entry (`store::merges`, on disk before the first file) names
//!   the two commits, and `recover`, at the next start, brings every path
//!   of the merge to the side the branch is on: forward if it moved, back
//!   if it did not. A path that holds neither side (someone changed it
//!   since) is left alone and reported.
//!
//! Files are written as git stores them (no autocrlf or filter
//! conversion); the index is set to the tree the branch points at.

use std::io::Write as _;
use std::os::fd::OwnedFd;
use std::path::{Component, Path, PathBuf};

use std::os::unix::ffi::OsStrExt as _;

use git2::{Oid, Repository, Tree};
use nix::fcntl::OFlag;

use super::error::WorktreeError;
use super::git_error;
use crate::domain::MergeJournal;
use agentd_sandbox::beneath::{self, Links};

const FILE_MODE_EXEC: i32 = 0o100755;
const FILE_MODE_LINK: i32 = 0o120000;
const FILE_MODE_GITLINK: i32 = 0o160000;

/// What `recover` did with a merge a crash cut short.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Recovered {
    /// The branch had moved: the files were brought forward to it.
    Finished { written: usize, left: Vec<String> },
    /// The branch had not moved: the files were put back.
    Undone { written: usize, left: Vec<String> },
    /// The branch is neither where the merge started nor where it went
    /// (someone moved it since): nothing was touched.
    Left(String),
}

/// One path the merge changes: what it holds on either side (a blob id and
/// its file mode), None where the side does not have it.
struct Change {
    path: PathBuf,
    from: Option<(Oid, i32)>,
    to: Option<(Oid, i32)>,
}

impl Change {
    fn side(&self, to: bool) -> Option<(Oid, i32)> {
        if to { self.to } else { self.from }
    }
}

/// The checkout and both sides of a merge.
struct Sides<'r> {
    repo: &'r Repository,
    root: OwnedFd,
    /// Every path the merge changes, from one tree-to-tree diff; deletions
    /// first (a directory that becomes a file, or the reverse, must be
    /// emptied before the other side is written).
    changes: Vec<Change>,
}

impl<'r> Sides<'r> {
    fn of(repo: &'r Repository, j: &MergeJournal) -> Result<Sides<'r>, WorktreeError> {
        let tree = |id: &str| {
            Oid::from_str(id)
                .and_then(|oid| repo.find_commit(oid))
                .and_then(|c| c.tree())
                .map_err(|e| git_error("cannot read a commit of the merge", e))
        };
        let from: Tree<'_> = tree(&j.from)?;
        let to: Tree<'_> = tree(&j.to)?;
        let workdir = repo
            .workdir()
            .ok_or_else(|| WorktreeError::refused("the checkout has no working directory"))?;
        let root = beneath::open_dir(workdir).map_err(|e| {
            WorktreeError::refused(format!("cannot open {}: {e}", workdir.display()))
        })?;
        let diff = repo
            .diff_tree_to_tree(Some(&from), Some(&to), None)
            .map_err(|e| git_error("cannot compare the two sides of the merge", e))?;
        let entry =
            |f: git2::DiffFile<'_>| (!f.id().is_zero()).then(|| (f.id(), i32::from(f.mode())));
        let mut changes = Vec::new();
        for delta in diff.deltas() {
            let (old, new) = (delta.old_file(), delta.new_file());
            let path = new
                .path()
                .or_else(|| old.path())
                .ok_or_else(|| WorktreeError::refused("the merge names a path without a name"))?
                .to_path_buf();
            let bad = path.components().any(|c| match c {
                Component::Normal(n) => n.eq_ignore_ascii_case(".git"),
                _ => true,
            });
            if bad {
                return Err(WorktreeError::refused(format!(
                    "the merge names a path agentd will not write ({}); merge it with git",
                    path.display()
                )));
            }
            changes.push(Change {
                path,
                from: entry(old),
                to: entry(new),
            });
        }
        changes.sort_by_key(|c| c.to.is_some());
        Ok(Sides {
            repo,
            root,
            changes,
        })
    }

    /// What `path` holds now, as a blob id as written raw (how this module
    /// writes); None when nothing is there. A directory is the zero id.
    fn current(&self, path: &Path) -> Option<Oid> {
        let workdir = self.repo.workdir()?;
        let full = workdir.join(path);
        let meta = std::fs::symlink_metadata(&full).ok()?;
        if meta.file_type().is_symlink() {
            let target = std::fs::read_link(&full).ok()?;
            let id =
                Oid::hash_object(git2::ObjectType::Blob, target.as_os_str().as_bytes()).ok()?;
            return Some(id);
        }
        if meta.file_type().is_dir() {
            return Some(Oid::zero());
        }
        Some(Oid::hash_file(git2::ObjectType::Blob, &full).unwrap_or_else(|_| Oid::zero()))
    }

    /// Whether `path` holds `side`: compared raw (as this module writes),
    /// and, failing that, as git would store the file (filters applied: how
    /// the person's checkout holds it).
    fn holds(&self, path: &Path, side: Option<(Oid, i32)>) -> bool {
        match (self.current(path), side) {
            (None, None) => true,
            (Some(raw), Some((id, mode))) => {
                if mode == FILE_MODE_GITLINK || raw == id {
                    return true;
                }
                self.repo
                    .workdir()
                    .and_then(|w| self.repo.blob_path(&w.join(path)).ok())
                    .is_some_and(|filtered| filtered == id)
            }
            _ => false,
        }
    }

    /// Makes `path` hold `side` (nothing, or a blob), replacing what is
    /// there in one rename.
    fn write(&self, path: &Path, side: Option<(Oid, i32)>) -> Result<(), WorktreeError> {
        let fail = |e: std::io::Error| {
            WorktreeError::refused(format!("cannot write {}: {e}", path.display()))
        };
        let name = path
            .file_name()
            .ok_or_else(|| fail(std::io::Error::other("no file name")))?;
        let parent_rel = path.parent().filter(|p| !p.as_os_str().is_empty());
        let make = side.is_some();
        let parent = match parent_rel {
            Some(rel) => match beneath::dir(&self.root, rel, Links::Refused, make) {
                Ok(fd) => fd,
                // Deleting from a directory that is gone: nothing to do.
                Err(e) if !make && e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
                Err(e) => return Err(fail(e)),
            },
            None => self.root.try_clone().map_err(fail)?,
        };
        let tmp =
            Self::temp_name(path).ok_or_else(|| fail(std::io::Error::other("no file name")))?;
        let _ = nix::unistd::unlinkat(
            &parent,
            tmp.as_os_str(),
            nix::unistd::UnlinkatFlags::NoRemoveDir,
        );
        let Some((id, mode)) = side else {
            return match nix::unistd::unlinkat(
                &parent,
                name,
                nix::unistd::UnlinkatFlags::NoRemoveDir,
            ) {
                Ok(()) | Err(nix::errno::Errno::ENOENT) => Ok(()),
                Err(e) => Err(fail(beneath::io(e))),
            };
        };
        if mode == FILE_MODE_GITLINK {
            // A submodule: its directory only, as git's checkout leaves it.
            return match nix::sys::stat::mkdirat(
                &parent,
                name,
                nix::sys::stat::Mode::from_bits_truncate(0o777),
            ) {
                Ok(()) | Err(nix::errno::Errno::EEXIST) => Ok(()),
                Err(e) => Err(fail(beneath::io(e))),
            };
        }
        let blob = self
            .repo
            .find_blob(id)
            .map_err(|e| git_error("cannot read a file of the merge", e))?;
        if mode == FILE_MODE_LINK {
            let target =
                <std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(blob.content());
            nix::unistd::symlinkat(target, &parent, tmp.as_os_str())
                .map_err(|e| fail(beneath::io(e)))?;
        } else {
            let perm = if mode == FILE_MODE_EXEC { 0o777 } else { 0o666 };
            let fd = beneath::open(
                &parent,
                Path::new(&tmp),
                OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL,
                perm,
                Links::Refused,
            )
            .map_err(fail)?;
            let mut file = std::fs::File::from(fd);
            file.write_all(blob.content()).map_err(fail)?;
        }
        nix::fcntl::renameat(&parent, tmp.as_os_str(), &parent, name).map_err(|e| {
            let _ = nix::unistd::unlinkat(
                &parent,
                tmp.as_os_str(),
                nix::unistd::UnlinkatFlags::NoRemoveDir,
            );
            fail(beneath::io(e))
        })
    }

    /// Brings every path to its side (`to`: the merge's end, else its
    /// start) where it holds the other side (or already this one); paths
    /// holding neither are left and returned. Temporary files a crash left
    /// go.
    fn bring_to(&self, to: bool) -> Result<(usize, Vec<String>), WorktreeError> {
        let mut written = 0;
        let mut left = Vec::new();
        for c in &self.changes {
            self.clear_temp(&c.path);
            let want = c.side(to);
            if self.holds(&c.path, want) {
                continue;
            }
            if self.holds(&c.path, c.side(!to)) {
                self.write(&c.path, want)?;
                written += 1;
            } else {
                left.push(c.path.display().to_string());
            }
        }
        self.remove_emptied_dirs(to);
        Ok((written, left))
    }

    /// The temporary file `write` makes for `path`.
    fn temp_name(path: &Path) -> Option<std::ffi::OsString> {
        let mut t = std::ffi::OsString::from(".");
        t.push(path.file_name()?);
        t.push(".agentd-merge");
        Some(t)
    }

    fn clear_temp(&self, path: &Path) {
        let Some(workdir) = self.repo.workdir() else {
            return;
        };
        let Some(tmp) = Self::temp_name(path) else {
            return;
        };
        let full = workdir.join(path).with_file_name(tmp);
        if full.symlink_metadata().is_ok() {
            let _ = std::fs::remove_file(full);
        }
    }

    /// Directories a deletion emptied go (git tracks no empty directory, so
    /// one the kept side has is not empty).
    fn remove_emptied_dirs(&self, to: bool) {
        let Some(workdir) = self.repo.workdir() else {
            return;
        };
        for c in self.changes.iter().filter(|c| c.side(to).is_none()) {
            let mut dir = c.path.parent();
            while let Some(d) = dir.filter(|d| !d.as_os_str().is_empty()) {
                if std::fs::remove_dir(workdir.join(d)).is_err() {
                    break;
                }
                dir = d.parent();
            }
        }
    }

    fn set_index(&self, commit: &str) -> Result<(), WorktreeError> {
        let tree = Oid::from_str(commit)
            .and_then(|oid| self.repo.find_commit(oid))
            .and_then(|c| c.tree())
            .map_err(|e| git_error("cannot read a commit of the merge", e))?;
        let mut index = self
            .repo
            .index()
            .map_err(|e| git_error("cannot open the index", e))?;
        index
            .read_tree(&tree)
            .and_then(|_| index.write())
            .map_err(|e| git_error("cannot write the index", e))
    }
}

/// Writes the merge `j` into its checkout (journaled by the caller): every
/// file of the merge, then the branch (from `j.from` to `j.to`, refused if
/// it moved meanwhile), then the index. Refuses, changing nothing, when a
/// file it would write is changed or untracked in the checkout. On any
/// failure after the first file, what was written is put back.
pub fn apply(j: &MergeJournal, log: &str) -> Result<(), WorktreeError> {
    let repo = Repository::open(&j.checkout)
        .map_err(|e| git_error(&format!("cannot open {}", j.checkout.display()), e))?;
    let sides = Sides::of(&repo, j)?;
    let moved = || {
        WorktreeError::refused(
            "the checkout's branch moved while merging; nothing was changed, merge again",
        )
    };
    let from_id = Oid::from_str(&j.from).map_err(|e| git_error("bad commit id", e))?;
    let to_id = Oid::from_str(&j.to).map_err(|e| git_error("bad commit id", e))?;
    match repo.head() {
        Ok(h) if h.name() == Some(j.branch_ref.as_str()) && h.target() == Some(from_id) => {}
        _ => return Err(moved()),
    }
    // The index is written last: a lock on it now (another git at work,
    // or one that crashed) would stop the merge half way.
    let index_lock = repo.path().join("index.lock");
    if index_lock.symlink_metadata().is_ok() {
        return Err(WorktreeError::refused(format!(
            "the checkout's index is locked ({}): another git is at work there, or one crashed; if none runs, remove the lock, then merge again; nothing was changed",
            index_lock.display()
        )));
    }
    // Before anything is written: nothing the merge adds is there already
    // (untracked or ignored), and nothing it changes differs from the
    // branch (git's status, as the person's git sees it: filters applied).
    let mut opts = git2::StatusOptions::new();
    opts.include_untracked(false).include_ignored(false);
    let changed: std::collections::HashSet<PathBuf> = repo
        .statuses(Some(&mut opts))
        .map_err(|e| git_error("cannot read the checkout's status", e))?
        .iter()
        .filter(|e| !e.status().is_empty())
        .map(|e| PathBuf::from(std::ffi::OsStr::from_bytes(e.path_bytes())))
        .collect();
    let blocked: Vec<String> = sides
        .changes
        .iter()
        .filter(|c| match c.from {
            None => repo
                .workdir()
                .is_some_and(|w| w.join(&c.path).symlink_metadata().is_ok()),
            Some(_) => changed.contains(&c.path),
        })
        .map(|c| c.path.display().to_string())
        .collect();
    if !blocked.is_empty() {
        return Err(WorktreeError::refused(format!(
            "the merge would overwrite files in the checkout that are changed or not tracked ({}); nothing was changed — commit or move them, then merge again",
            blocked.into_iter().take(10).collect::<Vec<_>>().join(", ")
        )));
    }
    let undo = |sides: &Sides<'_>| {
        if let Err(e) = sides.bring_to(false) {
            tracing::error!(error = %e, "could not put back a merge that failed half way");
        }
    };
    // Every path holds the start: each is written, none compared again.
    let written = sides
        .changes
        .iter()
        .try_for_each(|c| sides.write(&c.path, c.to));
    sides.remove_emptied_dirs(true);
    if let Err(e) = written {
        undo(&sides);
        return Err(e);
    }
    if let Err(e) = repo.reference_matching(&j.branch_ref, to_id, true, from_id, log) {
        undo(&sides);
        return Err(WorktreeError::refused(format!(
            "the checkout's branch moved while the merge was written ({}); the files were put back, nothing changed",
            e.message()
        )));
    }
    sides.set_index(&j.to)
}

/// Whether some process has `path` open (a git holding its lock now).
fn held_open(path: &Path) -> bool {
    let Ok(target) = path.canonicalize() else {
        return false;
    };
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return true;
    };
    for p in procs.flatten() {
        let Ok(fds) = std::fs::read_dir(p.path().join("fd")) else {
            continue;
        };
        if fds
            .flatten()
            .any(|fd| std::fs::read_link(fd.path()).is_ok_and(|l| l == target))
        {
            return true;
        }
    }
    false
}

/// The lock files a killed merge can leave (the index's, the branch's):
/// removed when no process holds them, else the settling waits for the
/// next start. git itself leaves a stale lock for a person to remove; here
/// the journal says the merge that took it was agentd's and was cut short.
fn clear_stale_locks(repo: &Repository, j: &MergeJournal) {
    let git_dir = repo.path();
    let common = repo.commondir();
    for lock in [
        git_dir.join("index.lock"),
        common.join(format!("{}.lock", j.branch_ref)),
    ] {
        if lock.symlink_metadata().is_ok() && !held_open(&lock) {
            match std::fs::remove_file(&lock) {
                Ok(()) => {
                    tracing::warn!(lock = %lock.display(), "removed a lock the interrupted merge left")
                }
                Err(e) => {
                    tracing::warn!(lock = %lock.display(), error = %e, "cannot remove a lock the interrupted merge left")
                }
            }
        }
    }
}

/// Finishes or undoes the merge `j` a crash cut short: the files follow the
/// branch (see the module's doc).
pub fn recover(j: &MergeJournal) -> Result<Recovered, WorktreeError> {
    let repo = Repository::open(&j.checkout)
        .map_err(|e| git_error(&format!("cannot open {}", j.checkout.display()), e))?;
    clear_stale_locks(&repo, j);
    let sides = Sides::of(&repo, j)?;
    let at = repo
        .find_reference(&j.branch_ref)
        .ok()
        .and_then(|r| r.target())
        .map(|o| o.to_string());
    match at.as_deref() {
        Some(t) if t == j.to => {
            let (written, left) = sides.bring_to(true)?;
            sides.set_index(&j.to)?;
            Ok(Recovered::Finished { written, left })
        }
        Some(t) if t == j.from => {
            let (written, left) = sides.bring_to(false)?;
            sides.set_index(&j.from)?;
            Ok(Recovered::Undone { written, left })
        }
        _ => Ok(Recovered::Left(format!(
            "{} is no longer at either side of the merge",
            j.branch_ref
        ))),
    }
}
