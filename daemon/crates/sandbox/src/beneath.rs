//! Opening paths that an agent or a repository controls, beneath a
//! directory the daemon has verified, with `openat2`: the kernel resolves
//! the path from that directory at the moment of the open, so no link
//! planted or swapped in between a check and a use can send the daemon
//! elsewhere (DESIGN §14, §16).
//!
//! Two rules for links: tools' files (`Links::StayInside`, Write and Edit)
//! may go through links that stay beneath the directory; what the daemon
//! makes for itself in a repository — worktree directories,
//! `.git/info/exclude` — goes through no link at all (`Links::Refused`).
//! Reads of such files are bounded: regular files only, never blocking on a
//! FIFO, never more than a cap (`read_capped`).

use std::fs::File;
use std::io::Read as _;
use std::os::fd::{AsRawFd as _, OwnedFd};
use std::path::{Component, Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::{OFlag, OpenHow, ResolveFlag, openat2};
use nix::sys::stat::Mode;

/// What a path may do with symbolic links on its way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Links {
    /// Links are followed while they stay beneath the directory.
    StayInside,
    /// No link is followed, wherever it points (ELOOP).
    Refused,
}

fn how(flags: OFlag, mode: u32, links: Links) -> OpenHow {
    // openat2 refuses flags O_PATH does not take, and a mode without O_CREAT.
    let extra = if flags.contains(OFlag::O_PATH) {
        OFlag::O_CLOEXEC
    } else {
        OFlag::O_CLOEXEC | OFlag::O_NOCTTY
    };
    let mut resolve = ResolveFlag::RESOLVE_BENEATH | ResolveFlag::RESOLVE_NO_MAGICLINKS;
    if links == Links::Refused {
        resolve |= ResolveFlag::RESOLVE_NO_SYMLINKS;
    }
    OpenHow::new()
        .flags(flags | extra)
        .mode(Mode::from_bits_truncate(mode))
        .resolve(resolve)
}

pub fn io(e: Errno) -> std::io::Error {
    std::io::Error::from_raw_os_error(e as i32)
}

/// Opens the directory `root` to resolve from. The path itself is trusted
/// as given (the caller verified it, or it is the daemon's own).
pub fn open_dir(root: &Path) -> std::io::Result<OwnedFd> {
    nix::fcntl::open(
        root,
        OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .map_err(io)
}

/// `rel` must be relative and free of `..`: a path below the root.
pub fn check_relative(rel: &Path) -> std::io::Result<()> {
    if rel.as_os_str().is_empty() || rel.components().any(|c| !matches!(c, Component::Normal(_))) {
        return Err(std::io::Error::from_raw_os_error(libc::EXDEV));
    }
    Ok(())
}

/// Opens `rel` beneath `root` with `flags`.
pub fn open(
    root: &OwnedFd,
    rel: &Path,
    flags: OFlag,
    mode: u32,
    links: Links,
) -> std::io::Result<OwnedFd> {
    check_relative(rel)?;
    openat2(root, rel, how(flags, mode, links)).map_err(io)
}

/// The directory `rel` beneath `root`, made (0755) where missing when
/// `make`; returned open (`O_PATH`).
pub fn dir(root: &OwnedFd, rel: &Path, links: Links, make: bool) -> std::io::Result<OwnedFd> {
    check_relative(rel)?;
    let mut current = root.try_clone()?;
    for component in rel.components() {
        let name = component.as_os_str();
        let flags = OFlag::O_PATH | OFlag::O_DIRECTORY;
        current = match openat2(&current, name, how(flags, 0, links)) {
            Ok(fd) => fd,
            Err(Errno::ENOENT) if make => {
                match nix::sys::stat::mkdirat(&current, name, Mode::from_bits_truncate(0o755)) {
                    Ok(()) | Err(Errno::EEXIST) => {}
                    Err(e) => return Err(io(e)),
                }
                openat2(&current, name, how(flags, 0, links)).map_err(io)?
            }
            Err(e) => return Err(io(e)),
        };
    }
    Ok(current)
}

/// A path naming the open directory `fd` itself, for APIs that take paths
/// (`rename`, `remove_dir_all`): `/proc/self/fd/N` resolves to the
/// directory that was opened, wherever it is now and whatever links were
/// planted on the way to it since.
pub fn fd_path(fd: &OwnedFd) -> PathBuf {
    PathBuf::from(format!("/proc/self/fd/{}", fd.as_raw_fd()))
}

/// Why a capped read refused a file.
#[derive(Debug)]
pub enum Unreadable {
    /// Not a regular file (a FIFO, socket, device or directory).
    NotRegular,
    /// Larger than the cap.
    TooLarge(u64),
    Io(std::io::Error),
}

impl std::fmt::Display for Unreadable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unreadable::NotRegular => {
                write!(
                    f,
                    "not a regular file (a FIFO, socket, device or directory)"
                )
            }
            Unreadable::TooLarge(n) => write!(f, "{n} bytes, over the limit"),
            Unreadable::Io(e) => write!(f, "{e}"),
        }
    }
}

/// Reads the file `fd` (opened `O_NONBLOCK`, so opening a FIFO did not
/// wait) if it is a regular file of at most `cap` bytes; reads no more than
/// the cap even if it grows meanwhile.
pub fn read_capped(fd: OwnedFd, cap: u64) -> Result<Vec<u8>, Unreadable> {
    let file = File::from(fd);
    let meta = file.metadata().map_err(Unreadable::Io)?;
    if !meta.file_type().is_file() {
        return Err(Unreadable::NotRegular);
    }
    if meta.len() > cap {
        return Err(Unreadable::TooLarge(meta.len()));
    }
    let mut out = Vec::with_capacity(meta.len() as usize);
    file.take(cap + 1)
        .read_to_end(&mut out)
        .map_err(Unreadable::Io)?;
    if out.len() as u64 > cap {
        return Err(Unreadable::TooLarge(out.len() as u64));
    }
    Ok(out)
}

/// Opens the file at `path` for a capped read without following a link
/// in its last component and without blocking (the directory part is
/// trusted as given).
pub fn open_file_nofollow(path: &Path) -> std::io::Result<OwnedFd> {
    nix::fcntl::open(
        path,
        OFlag::O_RDONLY
            | OFlag::O_NOFOLLOW
            | OFlag::O_NONBLOCK
            | OFlag::O_CLOEXEC
            | OFlag::O_NOCTTY,
        Mode::empty(),
    )
    .map_err(io)
}

/// Opens `path` for reading if it is a regular file: opened without
/// blocking (a FIFO with no writer would hold the open forever, a thread
/// with it), then checked on the descriptor, so it cannot turn into a FIFO
/// or device between a check and the read. Links are followed (the caller
/// resolved and contained the path).
pub fn open_regular(path: &Path) -> std::io::Result<File> {
    let fd = nix::fcntl::open(
        path,
        OFlag::O_RDONLY | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC | OFlag::O_NOCTTY,
        Mode::empty(),
    )
    .map_err(io)?;
    let file = File::from(fd);
    if !file.metadata()?.file_type().is_file() {
        return Err(std::io::Error::other(
            "not a regular file (a FIFO, socket or device)",
        ));
    }
    Ok(file)
}

/// Why `read_contained` refused a file.
#[derive(Debug)]
pub enum ContainedRead {
    Missing,
    /// It resolves (through a link) outside its directory.
    Outside,
    Refused(Unreadable),
}

/// Reads the file `path` found in `dir` (a directory a repository or a
/// person controls: agent types, fork profiles): it must resolve inside
/// `dir` (a link may point elsewhere in it, never out), be a regular file
/// and hold at most `cap` bytes; opened without blocking and read no
/// further than the cap.
pub fn read_contained(dir: &Path, path: &Path, cap: u64) -> Result<Vec<u8>, ContainedRead> {
    read_capped(open_contained(dir, path)?, cap).map_err(ContainedRead::Refused)
}

/// Opens `path` for a capped read if it resolves inside `dir`: the kernel
/// resolves it from `dir` at the moment of the open (`openat2` with
/// `RESOLVE_BENEATH`), so a link inside may point elsewhere inside, and no
/// link or `..` anywhere on the way, planted or swapped in at any time,
/// leads out. Opened without blocking (a FIFO with no writer).
fn open_contained(dir: &Path, path: &Path) -> Result<OwnedFd, ContainedRead> {
    let rel = path.strip_prefix(dir).map_err(|_| ContainedRead::Outside)?;
    let root = open_dir(dir).map_err(|_| ContainedRead::Missing)?;
    open(
        &root,
        rel,
        OFlag::O_RDONLY | OFlag::O_NONBLOCK,
        0,
        Links::StayInside,
    )
    .map_err(|e| match e.raw_os_error() {
        Some(libc::ENOENT | libc::ENOTDIR) => ContainedRead::Missing,
        Some(libc::EXDEV) => ContainedRead::Outside,
        _ => ContainedRead::Refused(Unreadable::Io(e)),
    })
}

/// The first `cap` bytes of the file `path` found in `dir`, contained as
/// [`read_contained`] contains it: for a file that may be cut (instruction
/// files), where `read_contained` refuses one over its cap.
pub fn read_contained_prefix(dir: &Path, path: &Path, cap: u64) -> Result<Vec<u8>, ContainedRead> {
    let refused = |e| ContainedRead::Refused(Unreadable::Io(e));
    let file = File::from(open_contained(dir, path)?);
    if !file.metadata().map_err(refused)?.file_type().is_file() {
        return Err(ContainedRead::Refused(Unreadable::NotRegular));
    }
    let mut out = Vec::new();
    file.take(cap).read_to_end(&mut out).map_err(refused)?;
    Ok(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn no_link_is_followed_when_links_are_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("root");
        let inside = root.join("real");
        std::fs::create_dir_all(&inside).unwrap();
        std::os::unix::fs::symlink("real", root.join("link")).unwrap();
        let fd = open_dir(&root).unwrap();
        // A link that stays inside: followed only when allowed.
        assert!(dir(&fd, Path::new("link"), Links::StayInside, false).is_ok());
        let e = dir(&fd, Path::new("link/new"), Links::Refused, true).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ELOOP), "{e}");
        assert!(
            !inside.join("new").exists(),
            "nothing made through the link"
        );
        // Missing directories are made, beneath.
        let made = dir(&fd, Path::new("a/b"), Links::Refused, true).unwrap();
        assert!(root.join("a/b").is_dir());
        assert_eq!(
            std::fs::canonicalize(fd_path(&made)).unwrap(),
            root.join("a/b").canonicalize().unwrap()
        );
    }

    #[test]
    fn contained_reads_stay_inside_through_every_directory_on_the_way() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("repo");
        let outside = tmp.path().join("outside");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("secret.md"), "secret").unwrap();
        std::fs::write(root.join("sub/in.md"), "inside").unwrap();
        // A link inside that points inside is followed.
        std::os::unix::fs::symlink("sub", root.join("alias")).unwrap();
        assert_eq!(
            read_contained(&root, &root.join("alias/in.md"), 100).unwrap(),
            b"inside"
        );
        // A directory on the way that links out is not (the last
        // component is an ordinary file).
        std::os::unix::fs::symlink(&outside, root.join("out")).unwrap();
        assert!(matches!(
            read_contained(&root, &root.join("out/secret.md"), 100),
            Err(ContainedRead::Outside)
        ));
        assert!(matches!(
            read_contained(&root, &root.join("sub/../../outside/secret.md"), 100),
            Err(ContainedRead::Outside)
        ));
        assert!(matches!(
            read_contained(&root, &outside.join("secret.md"), 100),
            Err(ContainedRead::Outside)
        ));
        assert!(matches!(
            read_contained(&root, &root.join("sub/none.md"), 100),
            Err(ContainedRead::Missing)
        ));
    }

    #[test]
    fn capped_reads_refuse_fifos_and_big_files_without_waiting() {
        let tmp = tempfile::tempdir().unwrap();
        let fifo = tmp.path().join("fifo");
        nix::unistd::mkfifo(&fifo, Mode::from_bits_truncate(0o644)).unwrap();
        let fd = open_file_nofollow(&fifo).unwrap();
        assert!(matches!(read_capped(fd, 10), Err(Unreadable::NotRegular)));
        let big = tmp.path().join("big");
        std::fs::write(&big, vec![b'x'; 11]).unwrap();
        let fd = open_file_nofollow(&big).unwrap();
        assert!(matches!(read_capped(fd, 10), Err(Unreadable::TooLarge(11))));
        let fd = open_file_nofollow(&big).unwrap();
        assert_eq!(read_capped(fd, 11).unwrap().len(), 11);
        std::os::unix::fs::symlink(&big, tmp.path().join("link")).unwrap();
        let e = open_file_nofollow(&tmp.path().join("link")).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ELOOP));
    }
}
