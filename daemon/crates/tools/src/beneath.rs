//! Opening files for Write and Edit beneath the agent's working directory
//! with `openat2(RESOLVE_BENEATH)`: the kernel resolves the path from the
//! directory and fails if `..`, an absolute symlink or any symlink would
//! take it outside, at the moment of the open — no window between a check
//! and the use in which a swapped symlink could redirect the write.

use std::fs::File;
use std::io::{Read as _, Write as _};
use std::path::Path;

use nix::fcntl::OFlag;

use agentd_sandbox::beneath::{self, Links};

/// Writes `content` to `rel` beneath `root`, making missing directories,
/// creating or truncating the file. With `outside_git`, a file that turns
/// out (at the open, whatever links were swapped in) to lie in a `.git`
/// directory is refused before a byte of it changes.
pub fn write(root: &Path, rel: &Path, content: &[u8], outside_git: bool) -> std::io::Result<()> {
    beneath::check_relative(rel)?;
    let dir = beneath::open_dir(root)?;
    if let Some(parent) = rel.parent().filter(|p| !p.as_os_str().is_empty()) {
        beneath::dir(&dir, parent, Links::StayInside, true)?;
    }
    // Not blocking (a FIFO must not hang the call) and not truncating
    // before the file is known to be a regular one.
    let fd = beneath::open(
        &dir,
        rel,
        OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_NONBLOCK,
        0o644,
        Links::StayInside,
    )?;
    if outside_git {
        let opened = std::fs::read_link(beneath::fd_path(&fd))?;
        let inside = opened.strip_prefix(root).unwrap_or(&opened);
        if in_git_dir(inside) {
            return Err(std::io::Error::from_raw_os_error(libc::EACCES));
        }
    }
    let file = regular(File::from(fd))?;
    file.set_len(0)?;
    let mut file = file;
    file.write_all(content)
}

/// Reads `rel` beneath `root`.
pub fn read(root: &Path, rel: &Path) -> std::io::Result<Vec<u8>> {
    let dir = beneath::open_dir(root)?;
    let fd = beneath::open(
        &dir,
        rel,
        OFlag::O_RDONLY | OFlag::O_NONBLOCK,
        0,
        Links::StayInside,
    )?;
    let mut out = Vec::new();
    regular(File::from(fd))?.read_to_end(&mut out)?;
    Ok(out)
}

/// Reads at most `max` bytes from the start of `rel` beneath `root`, with
/// the file's whole size: what a Write replaces, as much of it as its
/// record can use.
pub fn read_start(root: &Path, rel: &Path, max: usize) -> std::io::Result<(Vec<u8>, u64)> {
    let dir = beneath::open_dir(root)?;
    let fd = beneath::open(
        &dir,
        rel,
        OFlag::O_RDONLY | OFlag::O_NONBLOCK,
        0,
        Links::StayInside,
    )?;
    let file = regular(File::from(fd))?;
    let size = file.metadata()?.len();
    let mut out = Vec::new();
    file.take(max as u64).read_to_end(&mut out)?;
    Ok((out, size))
}

/// Whether `rel` goes through a `.git` directory (or is `.git` itself).
pub fn in_git_dir(rel: &Path) -> bool {
    rel.components().any(|c| c.as_os_str() == ".git")
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
        Some(libc::EACCES) => format!(
            "{} leads (through a link) into a .git directory, which the sandbox keeps read only to the agent; commit with git instead.",
            path.display()
        ),
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
    use nix::sys::stat::Mode;

    #[test]
    fn writes_stay_beneath_the_root_whatever_the_links_say() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        let outside = dir.path().join("outside");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        write(&root, Path::new("a/b/c.txt"), b"ok", false).unwrap();
        assert_eq!(read(&root, Path::new("a/b/c.txt")).unwrap(), b"ok");
        let start = read_start(&root, Path::new("a/b/c.txt"), 1).unwrap();
        assert_eq!(start, (b"o".to_vec(), 2));
        std::os::unix::fs::symlink(&outside, root.join("out")).unwrap();
        std::os::unix::fs::symlink("../outside/f", root.join("rel")).unwrap();
        for rel in ["out/f", "rel", "out/new/deeper"] {
            let e = write(&root, Path::new(rel), b"x", false).unwrap_err();
            assert_eq!(e.raw_os_error(), Some(libc::EXDEV), "{rel}: {e}");
        }
        assert!(beneath::check_relative(Path::new("../x")).is_err());
        assert!(beneath::check_relative(Path::new("/etc/passwd")).is_err());
        assert!(std::fs::read_dir(&outside).unwrap().next().is_none());
        // A FIFO is refused at once, never waited on.
        nix::unistd::mkfifo(&root.join("fifo"), Mode::from_bits_truncate(0o644)).unwrap();
        let e = write(&root, Path::new("fifo"), b"x", false).unwrap_err();
        assert_eq!(
            e.raw_os_error(),
            Some(libc::ENXIO),
            "no reader: refused at once: {e}"
        );
        let e = read(&root, Path::new("fifo")).unwrap_err();
        assert!(e.to_string().contains("not a regular file"), "{e}");
        let e = read_start(&root, Path::new("fifo"), 10).unwrap_err();
        assert!(e.to_string().contains("not a regular file"), "{e}");
        // What a Write would replace is never read through a link out.
        for rel in ["out/f", "rel"] {
            let e = read_start(&root, Path::new(rel), 10).unwrap_err();
            assert_eq!(e.raw_os_error(), Some(libc::EXDEV), "{rel}: {e}");
        }
        // A link that stays inside is followed.
        std::os::unix::fs::symlink("a/b", root.join("inner")).unwrap();
        write(&root, Path::new("inner/d.txt"), b"in", false).unwrap();
        assert_eq!(std::fs::read(root.join("a/b/d.txt")).unwrap(), b"in");
    }
}
