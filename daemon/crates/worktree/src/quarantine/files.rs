//! Reading and writing in a quarantine, which its agent can change at any
//! moment: every path is opened beneath a directory the daemon opened,
//! through no link, reads are of regular files only and capped, and a
//! write makes a new file (never opening one the agent made) and renames
//! it into place.

use std::io::Write as _;
use std::os::fd::OwnedFd;
use std::path::Path;

use nix::fcntl::OFlag;

use agentd_sandbox::beneath::{self, Links, Unreadable};

/// The directory `rel` beneath `root` (made where missing with `make`),
/// through no link.
pub(super) fn dir(root: &OwnedFd, rel: &str, make: bool) -> std::io::Result<OwnedFd> {
    beneath::dir(root, Path::new(rel), Links::Refused, make)
}

/// The file `rel` beneath `root`: None when it does not exist; an error
/// when it is not a regular file, is a link, or is over `cap` bytes.
pub(super) fn read(root: &OwnedFd, rel: &str, cap: u64) -> std::io::Result<Option<Vec<u8>>> {
    let fd = match beneath::open(
        root,
        Path::new(rel),
        OFlag::O_RDONLY | OFlag::O_NONBLOCK | OFlag::O_NOCTTY | OFlag::O_CLOEXEC,
        0,
        Links::Refused,
    ) {
        Ok(fd) => fd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    match beneath::read_capped(fd, cap) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(Unreadable::Io(e)) => Err(e),
        Err(why) => Err(std::io::Error::other(format!("{rel}: {why}"))),
    }
}

/// Puts `bytes` at `name` in `dir`: a new file, written, then renamed over
/// whatever was there.
pub(super) fn put(dir: &OwnedFd, name: &str, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = format!(".{name}.agentd-{}", std::process::id());
    let _ = nix::unistd::unlinkat(dir, tmp.as_str(), nix::unistd::UnlinkatFlags::NoRemoveDir);
    let fd = beneath::open(
        dir,
        Path::new(&tmp),
        OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_CLOEXEC,
        0o644,
        Links::Refused,
    )?;
    let mut file = std::fs::File::from(fd);
    file.write_all(bytes)?;
    drop(file);
    nix::fcntl::renameat(dir, tmp.as_str(), dir, name).map_err(beneath::io)
}

/// Removes the file `name` from `dir` (nothing if it is not there).
pub(super) fn unlink(dir: &OwnedFd, name: &str) -> std::io::Result<()> {
    match nix::unistd::unlinkat(dir, name, nix::unistd::UnlinkatFlags::NoRemoveDir) {
        Ok(()) | Err(nix::errno::Errno::ENOENT) => Ok(()),
        Err(e) => Err(beneath::io(e)),
    }
}

/// The names in the open directory `dir` (a listing follows nothing).
pub(super) fn names(dir: &OwnedFd) -> std::io::Result<Vec<String>> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(beneath::fd_path(dir))? {
        if let Some(name) = entry?.file_name().to_str() {
            out.push(name.to_string());
        }
    }
    Ok(out)
}
