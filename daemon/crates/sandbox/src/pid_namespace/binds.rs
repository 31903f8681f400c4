//! Bind mounts made in a confined agent's mount namespace when it is made
//! (DESIGN §23): the git quarantine puts the agent's own git directory
//! where its tools look for `.git`, and the repository's real one, read
//! only, where that git directory finds its objects.
//!
//! The paths are strings an agent could redirect between the daemon's
//! check and the mount (a directory swapped for a link to `~/.ssh` would
//! put it, writable, inside the workspace). So the daemon records the
//! device and inode of every source and target when it makes or checks
//! them, and the maker, after it has made the namespace, opens each
//! without following a last link, compares the identities on the open
//! descriptors and mounts by descriptor (`open_tree`, `mount_setattr`,
//! `move_mount`): what it mounts is what the daemon checked, or nothing is
//! mounted and the namespace is not made.

use std::ffi::CString;
use std::os::fd::AsFd;
use std::path::PathBuf;

/// A file's identity: its device, inode and type (a freed inode number
/// can come back as another file, never as the same file of another type:
/// a link in a directory's place is told apart even then).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileId {
    pub dev: u64,
    pub ino: u64,
    pub kind: u32,
}

impl FileId {
    /// The identity of the open file `fd`.
    pub fn of(fd: impl AsFd) -> std::io::Result<FileId> {
        let st = nix::sys::stat::fstat(fd.as_fd()).map_err(crate::beneath::io)?;
        Ok(FileId {
            dev: st.st_dev,
            ino: st.st_ino,
            kind: st.st_mode & libc::S_IFMT,
        })
    }
}

/// One bind mount: `source`, with what is mounted beneath it, appears at
/// `target` (read only with `read_only`). Sources and targets are absolute, as the daemon sees
/// them (the namespace starts as a copy of its mounts).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bind {
    pub source: PathBuf,
    pub source_id: FileId,
    pub target: PathBuf,
    pub target_id: FileId,
    pub read_only: bool,
}

/// A bind ready for the code between fork and exec (its strings made).
pub(super) struct Prepared {
    source: CString,
    source_id: FileId,
    target: CString,
    target_id: FileId,
    read_only: bool,
}

/// The error a bind fails with when a path no longer names what the daemon
/// checked (the maker cannot allocate a message).
pub(super) const SWAPPED: i32 = libc::ESTALE;

pub(super) fn prepare(binds: &[Bind]) -> std::io::Result<Vec<Prepared>> {
    use std::os::unix::ffi::OsStrExt as _;
    let c = |p: &PathBuf| {
        CString::new(p.as_os_str().as_bytes())
            .map_err(|_| std::io::Error::other("a bind mount's path holds a NUL byte"))
    };
    binds
        .iter()
        .map(|b| {
            Ok(Prepared {
                source: c(&b.source)?,
                source_id: b.source_id,
                target: c(&b.target)?,
                target_id: b.target_id,
                read_only: b.read_only,
            })
        })
        .collect()
}

fn last_error() -> std::io::Error {
    std::io::Error::last_os_error()
}

/// Whether the open file `fd` is `id` (async-signal-safe).
#[allow(unsafe_code)]
unsafe fn is(fd: libc::c_int, id: FileId) -> bool {
    // SAFETY: fstat into a zeroed stat on the stack.
    unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        libc::fstat(fd, &mut st) == 0
            && st.st_dev == id.dev
            && st.st_ino == id.ino
            && st.st_mode & libc::S_IFMT == id.kind
    }
}

/// Makes `binds`, in order, in this process's (new, private) mount
/// namespace. Between fork and exec: system calls only, on values prepared
/// before the fork.
#[allow(unsafe_code)]
pub(super) unsafe fn apply(binds: &[Prepared]) -> std::io::Result<()> {
    for b in binds {
        // SAFETY: system calls on C strings and a stack struct that live
        // across them; every descriptor opened is closed.
        unsafe {
            let source = libc::open(
                b.source.as_ptr(),
                libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            );
            if source < 0 {
                return Err(last_error());
            }
            if !is(source, b.source_id) {
                libc::close(source);
                return Err(std::io::Error::from_raw_os_error(SWAPPED));
            }
            let tree = libc::syscall(
                libc::SYS_open_tree,
                source,
                c"".as_ptr(),
                libc::OPEN_TREE_CLONE
                    | libc::OPEN_TREE_CLOEXEC
                    | libc::AT_EMPTY_PATH as u32
                    | libc::AT_RECURSIVE as u32,
            ) as libc::c_int;
            let err = last_error();
            libc::close(source);
            if tree < 0 {
                return Err(err);
            }
            if b.read_only {
                let attr = libc::mount_attr {
                    attr_set: libc::MOUNT_ATTR_RDONLY,
                    attr_clr: 0,
                    propagation: 0,
                    userns_fd: 0,
                };
                let r = libc::syscall(
                    libc::SYS_mount_setattr,
                    tree,
                    c"".as_ptr(),
                    libc::AT_EMPTY_PATH,
                    &raw const attr,
                    std::mem::size_of::<libc::mount_attr>(),
                );
                if r != 0 {
                    let err = last_error();
                    libc::close(tree);
                    return Err(err);
                }
            }
            let target = libc::open(
                b.target.as_ptr(),
                libc::O_PATH | libc::O_NOFOLLOW | libc::O_CLOEXEC,
            );
            if target < 0 {
                let err = last_error();
                libc::close(tree);
                return Err(err);
            }
            if !is(target, b.target_id) {
                libc::close(tree);
                libc::close(target);
                return Err(std::io::Error::from_raw_os_error(SWAPPED));
            }
            let r = libc::syscall(
                libc::SYS_move_mount,
                tree,
                c"".as_ptr(),
                target,
                c"".as_ptr(),
                libc::MOVE_MOUNT_F_EMPTY_PATH | libc::MOVE_MOUNT_T_EMPTY_PATH,
            );
            let err = last_error();
            libc::close(tree);
            libc::close(target);
            if r != 0 {
                return Err(err);
            }
        }
    }
    Ok(())
}
