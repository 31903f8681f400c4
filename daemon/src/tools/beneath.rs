//! Opening files for Write and Edit beneath the agent's working directory
//! with `openat2(RESOLVE_BENEATH)`: the kernel resolves the path from the
//! directory and fails if `..`, an absolute symlink or any symlink would
//! take it outside, at the moment of the open — no window between a check
//! and the use in which a swapped symlink could redirect the write.

use std::fs::File;
use std::io::{Read as _, Write as _};
use std::os::fd::OwnedFd;
use std::path::{Component, Path};

use nix::errno::Errno;
use nix::fcntl::{OFlag, OpenHow, ResolveFlag, openat2};
use nix::sys::stat::Mode;

fn how(flags: OFlag, mode: u32) -> OpenHow {
    // openat2 refuses flags O_PATH does not take, and a mode without O_CREAT.
    let extra = if flags.contains(OFlag::O_PATH) {
        OFlag::O_CLOEXEC
    } else {
        OFlag::O_CLOEXEC | OFlag::O_NOCTTY
    };
    OpenHow::new()
        .flags(flags | extra)
        .mode(Mode::from_bits_truncate(mode))
        .resolve(ResolveFlag::RESOLVE_BENEATH | ResolveFlag::RESOLVE_NO_MAGICLINKS)
}

fn io(e: Errno) -> std::io::Error {
    std::io::Error::from_raw_os_error(e as i32)
}

/// Opens the directory `root` to resolve from.
fn open_root(root: &Path) -> std::io::Result<OwnedFd> {
    nix::fcntl::open(
        root,
        OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .map_err(io)
}

/// `rel` must be relative and free of `..`: a path below `root`.
fn check_relative(rel: &Path) -> std::io::Result<()> {
    if rel.as_os_str().is_empty() || rel.components().any(|c| !matches!(c, Component::Normal(_))) {
        return Err(std::io::Error::from_raw_os_error(libc::EXDEV));
    }
    Ok(())
}

/// Makes the missing directories of `dir` (relative, beneath `root`).
fn make_dirs(root: &OwnedFd, dir: &Path) -> std::io::Result<()> {
    let mut prefix = std::path::PathBuf::new();
    for component in dir.components() {
        let parent = if prefix.as_os_str().is_empty() {
            None
        } else {
            Some(prefix.clone())
        };
        prefix.push(component);
        match openat2(root, &prefix, how(OFlag::O_PATH | OFlag::O_DIRECTORY, 0)) {
            Ok(_) => continue,
            Err(Errno::ENOENT) => {}
            Err(e) => return Err(io(e)),
        }
        let parent_fd = match parent {
            Some(p) => openat2(root, &p, how(OFlag::O_PATH | OFlag::O_DIRECTORY, 0)).map_err(io)?,
            None => root.try_clone()?,
        };
        match nix::sys::stat::mkdirat(
            &parent_fd,
            component.as_os_str(),
            Mode::from_bits_truncate(0o755),
        ) {
            Ok(()) | Err(Errno::EEXIST) => {}
            Err(e) => return Err(io(e)),
        }
    }
    Ok(())
}

/// Writes `content` to `rel` beneath `root`, making missing directories,
/// creating or truncating the file.
pub fn write(root: &Path, rel: &Path, content: &[u8]) -> std::io::Result<()> {
    check_relative(rel)?;
    let dir = open_root(root)?;
    if let Some(parent) = rel.parent().filter(|p| !p.as_os_str().is_empty()) {
        make_dirs(&dir, parent)?;
    }
    // Not blocking (a FIFO must not hang the call) and not truncating
    // before the file is known to be a regular one.
    let fd = openat2(
        &dir,
        rel,
        how(OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_NONBLOCK, 0o644),
    )
    .map_err(io)?;
    let file = regular(File::from(fd))?;
    file.set_len(0)?;
    let mut file = file;
    file.write_all(content)
}

/// Reads `rel` beneath `root`.
pub fn read(root: &Path, rel: &Path) -> std::io::Result<Vec<u8>> {
    check_relative(rel)?;
    let dir = open_root(root)?;
    let fd = openat2(&dir, rel, how(OFlag::O_RDONLY | OFlag::O_NONBLOCK, 0)).map_err(io)?;
    let mut out = Vec::new();
    regular(File::from(fd))?.read_to_end(&mut out)?;
    Ok(out)
}

/// `file` if it is a regular file (not a FIFO, device or directory).
fn regular(file: File) -> std::io::Result<File> {
    if file.metadata()?.file_type().is_file() {
        Ok(file)
    } else {
        Err(std::io::Error::other(
            "not a regular file (a FIFO, device or directory); Write and Edit only handle files",
        ))
    }
}

/// Why an open beneath the working directory failed, for the model.
pub fn explain(e: &std::io::Error, path: &Path) -> String {
    match e.raw_os_error() {
        Some(libc::EXDEV) => format!(
            "{} resolves outside the agent's working directory (through `..` or a symlink); file tools can only write inside it.",
            path.display()
        ),
        Some(libc::ENOSYS) => "this kernel has no openat2 (Linux 5.6), so files cannot be opened safely beneath the working directory".to_string(),
        Some(libc::ELOOP) => format!("{}: too many symlinks", path.display()),
        Some(libc::ENXIO) => format!(
            "{} is not a regular file (a FIFO or a device); Write and Edit only handle files",
            path.display()
        ),
        _ => format!("{}: {e}", path.display()),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn writes_stay_beneath_the_root_whatever_the_links_say() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        let outside = dir.path().join("outside");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        write(&root, Path::new("a/b/c.txt"), b"ok").unwrap();
        assert_eq!(read(&root, Path::new("a/b/c.txt")).unwrap(), b"ok");
        std::os::unix::fs::symlink(&outside, root.join("out")).unwrap();
        std::os::unix::fs::symlink("../outside/f", root.join("rel")).unwrap();
        for rel in ["out/f", "rel", "out/new/deeper"] {
            let e = write(&root, Path::new(rel), b"x").unwrap_err();
            assert_eq!(e.raw_os_error(), Some(libc::EXDEV), "{rel}: {e}");
        }
        assert!(check_relative(Path::new("../x")).is_err());
        assert!(check_relative(Path::new("/etc/passwd")).is_err());
        assert!(std::fs::read_dir(&outside).unwrap().next().is_none());
        // A FIFO is refused at once, never waited on.
        nix::unistd::mkfifo(&root.join("fifo"), Mode::from_bits_truncate(0o644)).unwrap();
        let e = write(&root, Path::new("fifo"), b"x").unwrap_err();
        assert_eq!(
            e.raw_os_error(),
            Some(libc::ENXIO),
            "no reader: refused at once: {e}"
        );
        let e = read(&root, Path::new("fifo")).unwrap_err();
        assert!(e.to_string().contains("not a regular file"), "{e}");
        // A link that stays inside is followed.
        std::os::unix::fs::symlink("a/b", root.join("inner")).unwrap();
        write(&root, Path::new("inner/d.txt"), b"in").unwrap();
        assert_eq!(std::fs::read(root.join("a/b/d.txt")).unwrap(), b"in");
    }
}
