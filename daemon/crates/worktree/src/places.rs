//! Where agentd writes in a repository, verified before it does: the
//! worktrees directory `<main checkout>/.agentd/worktrees` and the
//! repository's common git directory. Both lie where an agent (whose
//! workspace holds the checkout) or a cloned repository (git stores links)
//! can plant a link to send the daemon's writes into the person's files —
//! `~/.vim/pack`, `~/.bashrc`. So the worktrees directory is opened (and
//! made) through no link at all, `.git` itself must not be a link, and the
//! writes that follow go through the opened directories or run confined to
//! them (`sandbox::confined_thread`).

use std::io::{Read as _, Write as _};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use nix::fcntl::OFlag;

use super::error::WorktreeError;
use super::{EXCLUDE_LINE, WORKTREES_DIR};
use agentd_sandbox::beneath::{self, Links};
use agentd_shared::sync::Unpoisoned as _;

/// The largest `info/exclude` agentd reads before appending to it.
const MAX_EXCLUDE_BYTES: u64 = 1024 * 1024;

/// The verified places of one repository.
pub struct Places {
    /// `<main checkout>/.agentd/worktrees`, opened through no link.
    pub worktrees: OwnedFd,
    /// The repository's common git directory.
    pub common: OwnedFd,
}

/// Why a place was refused, in words that say what to do.
fn refused(path: &Path, e: &std::io::Error) -> WorktreeError {
    match e.raw_os_error() {
        Some(libc::ELOOP | libc::EXDEV) => WorktreeError::refused(format!(
            "{} is a symbolic link or lies behind one; agentd makes and removes worktrees only in a real directory (an agent or a cloned repository could have planted the link to send them elsewhere); remove the link and try again",
            path.display()
        )),
        Some(libc::ENOTDIR) => WorktreeError::refused(format!(
            "{} is not a directory; remove it and try again",
            path.display()
        )),
        _ => WorktreeError::refused(format!("cannot open {}: {e}", path.display())),
    }
}

impl Places {
    /// Verifies (and makes, with `make`) the worktrees directory of the
    /// main checkout `main` (canonical) and opens `common_dir`.
    pub fn verify(main: &Path, common_dir: &Path, make: bool) -> Result<Places, WorktreeError> {
        let dot_git = main.join(".git");
        if std::fs::symlink_metadata(&dot_git).is_ok_and(|m| m.file_type().is_symlink()) {
            return Err(WorktreeError::refused(format!(
                "{} is a symbolic link; agentd does not work in a repository reached through one (an agent could have planted it); replace it with the repository itself",
                dot_git.display()
            )));
        }
        let root = beneath::open_dir(main).map_err(|e| refused(main, &e))?;
        let worktrees = beneath::dir(&root, Path::new(WORKTREES_DIR), Links::Refused, make)
            .map_err(|e| refused(&main.join(WORKTREES_DIR), &e))?;
        let common = beneath::open_dir(common_dir).map_err(|e| refused(common_dir, &e))?;
        Ok(Places { worktrees, common })
    }

    /// A path naming entry `name` of the verified worktrees directory
    /// itself, for path-based calls (`rename`, `remove_dir_all`).
    pub fn tree_path(&self, name: &str) -> PathBuf {
        beneath::fd_path(&self.worktrees).join(name)
    }

    /// Whether `name` is a real directory in the worktrees directory (not
    /// a link).
    pub fn holds_tree(&self, name: &str) -> bool {
        beneath::dir(&self.worktrees, Path::new(name), Links::Refused, false).is_ok()
    }

    /// Adds `.agentd/worktrees/` to the repository's `info/exclude` unless
    /// it is there, so the person's checkout stays clean; never touches a
    /// tracked file. The file is opened beneath the common dir through no
    /// link, must be a regular file, and is read only up to a cap.
    pub fn exclude_worktrees(&self, shown: &Path) -> Result<(), WorktreeError> {
        self.exclude_line(shown, EXCLUDE_LINE)
    }

    /// Adds `line` to the repository's `info/exclude` unless it is there
    /// (see `exclude_worktrees`).
    pub fn exclude_line(&self, shown: &Path, line: &str) -> Result<(), WorktreeError> {
        // Trees are made concurrently: one reads and appends at a time.
        static EXCLUDE: std::sync::Mutex<()> = std::sync::Mutex::new(());
        let _one = EXCLUDE.locked();
        let path = shown.join("info/exclude");
        let info = beneath::dir(&self.common, Path::new("info"), Links::Refused, true)
            .map_err(|e| refused(&shown.join("info"), &e))?;
        let fd = beneath::open(
            &info,
            Path::new("exclude"),
            OFlag::O_RDWR | OFlag::O_CREAT | OFlag::O_APPEND | OFlag::O_NONBLOCK,
            0o644,
            Links::Refused,
        )
        .map_err(|e| refused(&path, &e))?;
        let mut file = std::fs::File::from(fd);
        let meta = file
            .metadata()
            .map_err(|e| WorktreeError::refused(format!("cannot read {}: {e}", path.display())))?;
        if !meta.file_type().is_file() {
            return Err(WorktreeError::refused(format!(
                "{} is not a regular file; replace it with one",
                path.display()
            )));
        }
        if meta.len() > MAX_EXCLUDE_BYTES {
            return Err(WorktreeError::refused(format!(
                "{} is {} bytes, more than agentd reads (1 MiB); shorten it",
                path.display(),
                meta.len()
            )));
        }
        let mut current = Vec::new();
        (&file)
            .take(MAX_EXCLUDE_BYTES)
            .read_to_end(&mut current)
            .map_err(|e| WorktreeError::refused(format!("cannot read {}: {e}", path.display())))?;
        if current
            .split(|b| *b == b'\n')
            .any(|l| l.trim_ascii() == line.as_bytes())
        {
            return Ok(());
        }
        let sep = if current.is_empty() || current.ends_with(b"\n") {
            ""
        } else {
            "\n"
        };
        writeln!(file, "{sep}{line}")
            .map_err(|e| WorktreeError::refused(format!("cannot write {}: {e}", path.display())))
    }

    /// Runs `work` (libgit2 and git writing the tree and git's records) on
    /// a thread that may write only beneath these two directories.
    pub fn confined<R: Send>(
        &self,
        work: impl FnOnce() -> Result<R, WorktreeError> + Send,
    ) -> Result<R, WorktreeError> {
        agentd_sandbox::confined_thread::run(&[&self.worktrees, &self.common], work)
            .map_err(WorktreeError::refused)?
    }
}
