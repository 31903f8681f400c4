//! Recording a workspace as a git tree, safely and incrementally.
//!
//! The workspace is the agent's: anything in it can be a link, a FIFO, a
//! huge file, or change while it is read. The walk opens every directory
//! and file beneath the workspace through no link (`openat2`), files
//! without blocking, checks the type on the descriptor, and reads at most
//! the cap; a link is recorded as a link (its target's text), never
//! followed. The shadow index keeps what each file's stat said when its
//! blob was made, so an unchanged file is not read again; a file changed
//! since the previous walk began (or within the same clock tick) is.

use std::collections::HashSet;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};

use git2::{Index, IndexEntry, IndexTime, ObjectType, Odb};
use nix::fcntl::{AtFlags, OFlag};
use nix::sys::stat::{FileStat, SFlag};

use agentd_sandbox::beneath::{self, Links};

/// What a checkpoint leaves out.
pub struct Caps {
    /// Files larger than this are not recorded.
    pub max_file_bytes: u64,
    /// Directories of these names are not entered (anywhere in the tree).
    pub skip_dirs: &'static [&'static str],
    /// Paths (relative, `/`-separated) not entered.
    pub skip_paths: &'static [&'static str],
}

/// The defaults: files over 8 MiB, dependency and build directories that
/// a build recreates, and agentd's own trees and quarantines.
pub const CAPS: Caps = Caps {
    max_file_bytes: 8 * 1024 * 1024,
    skip_dirs: &[
        ".git",
        "node_modules",
        "target",
        ".venv",
        "venv",
        "__pycache__",
        ".tox",
        ".gradle",
        ".next",
        ".cache",
    ],
    skip_paths: &[".agentd/worktrees", ".agentd/quarantine"],
};

/// What one walk saw.
#[derive(Debug, Default)]
pub struct Walked {
    /// Files whose content was read (new or changed since the last walk).
    pub read: usize,
    /// Files and links recorded.
    pub entries: usize,
    /// Paths left out by the caps.
    pub skipped: Vec<PathBuf>,
}

pub(super) struct Walk<'a> {
    pub(super) index: &'a mut Index,
    pub(super) odb: &'a Odb<'a>,
    pub(super) caps: &'a Caps,
    /// When the previous walk began (ns since the epoch): a file whose
    /// change time is not older than that is read again whatever its stat.
    pub(super) previous_start_ns: i128,
    pub(super) seen: HashSet<Vec<u8>>,
    pub(super) walked: Walked,
}

fn io(e: nix::errno::Errno) -> std::io::Error {
    beneath::io(e)
}

fn time_of(sec: i64, nsec: i64) -> IndexTime {
    IndexTime::new(sec as i32, nsec as u32)
}

fn ns(sec: i64, nsec: i64) -> i128 {
    i128::from(sec) * 1_000_000_000 + i128::from(nsec)
}

impl Walk<'_> {
    /// Walks the directory `dir` (at `rel` in the workspace).
    pub(super) fn dir(&mut self, dir: &OwnedFd, rel: &Path) -> std::io::Result<()> {
        let mut names: Vec<String> = Vec::new();
        for e in std::fs::read_dir(beneath::fd_path(dir))? {
            match e?.file_name().into_string() {
                Ok(n) => names.push(n),
                // A name git cannot hold as UTF-8 here is left out.
                Err(n) => self.walked.skipped.push(rel.join(n)),
            }
        }
        names.sort();
        for name in names {
            let path = rel.join(&name);
            // A linked tree's `.git` is a file: git's, never the work's.
            if name == ".git" {
                continue;
            }
            let st = match nix::sys::stat::fstatat(
                dir.as_fd(),
                name.as_str(),
                AtFlags::AT_SYMLINK_NOFOLLOW,
            ) {
                Ok(st) => st,
                Err(nix::errno::Errno::ENOENT) => continue,
                Err(e) => return Err(io(e)),
            };
            let kind = SFlag::from_bits_truncate(st.st_mode) & SFlag::S_IFMT;
            if kind == SFlag::S_IFDIR {
                if self.caps.skip_dirs.contains(&name.as_str())
                    || self.caps.skip_paths.iter().any(|p| Path::new(p) == path)
                {
                    self.walked.skipped.push(path);
                    continue;
                }
                match beneath::dir(dir, Path::new(&name), Links::Refused, false) {
                    Ok(sub) => self.dir(&sub, &path)?,
                    // Swapped for something else meanwhile: not recorded.
                    Err(_) => self.walked.skipped.push(path),
                }
            } else if kind == SFlag::S_IFREG {
                if st.st_size as u64 > self.caps.max_file_bytes {
                    self.walked.skipped.push(path);
                    continue;
                }
                self.file(dir, &name, &path, &st)?;
            } else if kind == SFlag::S_IFLNK {
                self.link(dir, &name, &path, &st)?;
            }
            // FIFOs, sockets, devices: nothing a checkpoint can hold.
        }
        Ok(())
    }

    fn key(path: &Path) -> Vec<u8> {
        path.to_string_lossy().as_bytes().to_vec()
    }

    /// The index's entry for `path` if its stat still matches `st` and the
    /// file has not changed since the previous walk began.
    fn unchanged(&self, key: &[u8], st: &FileStat, mode: u32) -> Option<git2::Oid> {
        let e = self
            .index
            .get_path(Path::new(std::str::from_utf8(key).ok()?), 0)?;
        let same = e.mode == mode
            && u64::from(e.file_size) == st.st_size as u64
            && e.ino == st.st_ino as u32
            && e.mtime == time_of(st.st_mtime, st.st_mtime_nsec)
            && e.ctime == time_of(st.st_ctime, st.st_ctime_nsec);
        let settled = ns(st.st_ctime, st.st_ctime_nsec) < self.previous_start_ns;
        (same && settled).then_some(e.id)
    }

    /// An unchanged entry: left as it is in the index (so the trees above
    /// it stay cached and are not rebuilt).
    fn keep(&mut self, key: Vec<u8>) {
        self.seen.insert(key);
        self.walked.entries += 1;
    }

    fn record(
        &mut self,
        key: Vec<u8>,
        st: &FileStat,
        mode: u32,
        id: git2::Oid,
    ) -> std::io::Result<()> {
        let entry = IndexEntry {
            ctime: time_of(st.st_ctime, st.st_ctime_nsec),
            mtime: time_of(st.st_mtime, st.st_mtime_nsec),
            dev: st.st_dev as u32,
            ino: st.st_ino as u32,
            mode,
            uid: st.st_uid,
            gid: st.st_gid,
            file_size: st.st_size as u32,
            id,
            flags: key.len().min(0xfff) as u16,
            flags_extended: 0,
            path: key.clone(),
        };
        self.index
            .add(&entry)
            .map_err(|e| std::io::Error::other(e.message().to_string()))?;
        self.seen.insert(key);
        self.walked.entries += 1;
        Ok(())
    }

    fn file(
        &mut self,
        dir: &OwnedFd,
        name: &str,
        path: &Path,
        st: &FileStat,
    ) -> std::io::Result<()> {
        let mode = if st.st_mode & 0o111 != 0 {
            0o100755
        } else {
            0o100644
        };
        let key = Self::key(path);
        if self.unchanged(&key, st, mode).is_some() {
            self.keep(key);
            return Ok(());
        }
        let fd = match beneath::open(
            dir,
            Path::new(name),
            OFlag::O_RDONLY | OFlag::O_NONBLOCK | OFlag::O_NOCTTY | OFlag::O_CLOEXEC,
            0,
            Links::Refused,
        ) {
            Ok(fd) => fd,
            Err(_) => {
                self.walked.skipped.push(path.to_path_buf());
                return Ok(());
            }
        };
        // What was opened is checked, not what was looked at.
        let opened = nix::sys::stat::fstat(fd.as_fd()).map_err(io)?;
        let bytes = match beneath::read_capped(fd, self.caps.max_file_bytes) {
            Ok(b) => b,
            Err(_) => {
                self.walked.skipped.push(path.to_path_buf());
                return Ok(());
            }
        };
        let id = self
            .odb
            .write(ObjectType::Blob, &bytes)
            .map_err(|e| std::io::Error::other(e.message().to_string()))?;
        self.walked.read += 1;
        self.record(key, &opened, mode, id)
    }

    fn link(
        &mut self,
        dir: &OwnedFd,
        name: &str,
        path: &Path,
        st: &FileStat,
    ) -> std::io::Result<()> {
        let key = Self::key(path);
        if self.unchanged(&key, st, 0o120000).is_some() {
            self.keep(key);
            return Ok(());
        }
        let target = match nix::fcntl::readlinkat(dir.as_fd(), name) {
            Ok(t) => t,
            Err(_) => return Ok(()),
        };
        let id = self
            .odb
            .write(ObjectType::Blob, target.as_encoded_bytes())
            .map_err(|e| std::io::Error::other(e.message().to_string()))?;
        self.walked.read += 1;
        self.record(key, st, 0o120000, id)
    }
}
