//! Carving denied paths out of a Landlock grant (DESIGN §22).
//!
//! Landlock only allows: a rule grants its rights on a directory and
//! everything beneath it, and nothing can take a subtree back out. So a
//! grant of `dir` that must not reach a denied path beneath it is made of
//! rules on each entry of `dir` instead, recursing into the one entry on
//! the way to the denied path: every sibling on the way is granted whole,
//! and the directories on the way get only the right to list them.
//!
//! - Entries are opened beneath the directory's own descriptor without
//!   following links, and symbolic links get no rule (what they point to is
//!   granted, or not, where it lies): a link swapped in during the walk
//!   cannot widen it.
//! - A path made later on the way (a denied path that did not exist yet, a
//!   new entry beside it) was not there to be granted: it cannot be read.
//! - A directory on the way that cannot be opened or listed is granted
//!   nothing beneath it: the walk fails closed.
//! - The directories on the way stay listable (`ls ~` works); a right to
//!   list is inherited by every directory beneath, so the names inside a
//!   denied directory can be listed, never what its files hold.

use std::ffi::OsStr;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use landlock::{AccessFs, BitFlags};
use nix::fcntl::{OFlag, openat};
use nix::sys::stat::{Mode, SFlag, fstat};

/// One rule: a descriptor (`O_PATH`) and the rights it grants beneath.
pub(super) struct Grant {
    pub(super) fd: OwnedFd,
    pub(super) access: BitFlags<AccessFs>,
}

/// Deeper than this the walk stops granting (fails closed): no denied path
/// in a real configuration is nested this far.
const MAX_DEPTH: usize = 64;

/// The rules that grant `access` on `root` and everything beneath it except
/// the `denied` paths (absolute, resolved: `resolve`) — an explicit grant
/// wins over a denial it is inside of (an agent's own temp dir or home in a
/// denied directory). File rights only on files. Appended to `out`.
pub(super) fn carve(
    root: &Path,
    access: BitFlags<AccessFs>,
    file_access: BitFlags<AccessFs>,
    denied: &[PathBuf],
    out: &mut Vec<Grant>,
) {
    let inside: Vec<&Path> = denied
        .iter()
        .map(PathBuf::as_path)
        .filter(|d| d.starts_with(root) && *d != root)
        .collect();
    let Ok(fd) = open_path(None, root.as_os_str(), true) else {
        return;
    };
    walk(fd, root, &inside, access, file_access, 0, out);
}

fn walk(
    fd: OwnedFd,
    dir: &Path,
    denied: &[&Path],
    access: BitFlags<AccessFs>,
    file_access: BitFlags<AccessFs>,
    depth: usize,
    out: &mut Vec<Grant>,
) {
    let Ok(stat) = fstat(&fd) else { return };
    let kind = SFlag::from_bits_truncate(stat.st_mode) & SFlag::S_IFMT;
    if kind == SFlag::S_IFLNK {
        return;
    }
    let is_dir = kind == SFlag::S_IFDIR;
    if denied.is_empty() {
        let access = if is_dir { access } else { file_access };
        out.push(Grant { fd, access });
        return;
    }
    if !is_dir || depth >= MAX_DEPTH {
        return;
    }
    let Ok(mut listing) = open_dir(&fd) else {
        return;
    };
    let names: Vec<std::ffi::OsString> = listing
        .iter()
        .filter_map(Result::ok)
        .map(|e| OsStr::from_bytes(e.file_name().to_bytes()).to_os_string())
        .filter(|n| n != "." && n != "..")
        .collect();
    drop(listing);
    for name in names {
        let child = dir.join(&name);
        let beneath: Vec<&Path> = denied
            .iter()
            .copied()
            .filter(|d| d.starts_with(&child))
            .collect();
        if beneath.contains(&child.as_path()) {
            continue;
        }
        let Ok(child_fd) = open_path(Some(&fd), &name, false) else {
            continue;
        };
        walk(
            child_fd,
            &child,
            &beneath,
            access,
            file_access,
            depth + 1,
            out,
        );
    }
    out.push(Grant {
        fd,
        access: AccessFs::ReadDir.into(),
    });
}

/// `O_PATH` of `name` (beneath `dir` when given), never following a link
/// in its last component; `follow`: the starting point may be one.
fn open_path(dir: Option<&OwnedFd>, name: &OsStr, follow: bool) -> nix::Result<OwnedFd> {
    let mut flags = OFlag::O_PATH | OFlag::O_CLOEXEC;
    if !follow {
        flags |= OFlag::O_NOFOLLOW;
    }
    match dir {
        Some(d) => openat(d, name, flags, Mode::empty()),
        None => openat(nix::fcntl::AT_FDCWD, name, flags, Mode::empty()),
    }
}

/// A listing of the directory `fd` (an `O_PATH` descriptor), opened anew
/// through it so the listing is of the very directory that was checked.
fn open_dir(fd: &OwnedFd) -> nix::Result<nix::dir::Dir> {
    nix::dir::Dir::openat(
        fd,
        ".",
        OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
}

/// `path` as the kernel resolves it, for a path that may not exist (yet):
/// its deepest existing ancestor resolved, the rest appended.
pub(super) fn resolve(path: &Path) -> PathBuf {
    let mut existing = path;
    let mut rest = Vec::new();
    loop {
        if let Ok(real) = existing.canonicalize() {
            return rest.iter().rev().fold(real, |p: PathBuf, c| p.join(c));
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_os_string());
                existing = parent;
            }
            _ => return path.to_path_buf(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;

    fn target(fd: &OwnedFd) -> PathBuf {
        std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd())).unwrap()
    }

    fn granted(root: &Path, denied: &[PathBuf]) -> Vec<(PathBuf, bool)> {
        let mut out = Vec::new();
        let denied: Vec<PathBuf> = denied.iter().map(|d| resolve(d)).collect();
        carve(
            &resolve(root),
            AccessFs::ReadFile | AccessFs::ReadDir,
            AccessFs::ReadFile.into(),
            &denied,
            &mut out,
        );
        let mut paths: Vec<(PathBuf, bool)> = out
            .iter()
            .map(|g| (target(&g.fd), g.access == AccessFs::ReadDir))
            .collect();
        paths.sort();
        paths
    }

    #[test]
    fn a_denied_path_is_left_out_and_its_siblings_granted_whole() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().canonicalize().unwrap();
        for d in ["a/secret", "a/open", "b"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        std::fs::write(root.join("a/file"), "x").unwrap();
        std::os::unix::fs::symlink(root.join("a/secret"), root.join("a/link")).unwrap();
        let got = granted(&root, &[root.join("a/secret"), root.join("c/later")]);
        assert_eq!(
            got,
            vec![
                (root.clone(), true),
                (root.join("a"), true),
                (root.join("a/file"), false),
                (root.join("a/open"), false),
                (root.join("b"), false),
            ],
            "the link to the denied directory gets no rule, and c (not there yet) none either"
        );
    }

    #[test]
    fn an_explicit_grant_inside_a_denied_directory_wins() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("data/own")).unwrap();
        let got = granted(&root.join("data/own"), &[root.join("data")]);
        assert_eq!(got, vec![(root.join("data/own"), false)]);
    }

    #[test]
    fn a_path_that_does_not_exist_resolves_through_its_existing_ancestor() {
        let t = tempfile::tempdir().unwrap();
        let real = t.path().canonicalize().unwrap();
        std::os::unix::fs::symlink(&real, real.join("alias")).unwrap();
        assert_eq!(resolve(&real.join("alias/x/y")), real.join("x/y"));
    }
}
