//! Binding the daemon's Unix socket safely (DESIGN §11): the directory is
//! created 0700, the socket is 0600 from the moment it exists, a stale
//! socket file is replaced, and a live one means another daemon serves it.

use std::io::ErrorKind;
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use nix::sys::stat::{Mode, umask};
use tokio::net::UnixListener;

#[derive(Debug, thiserror::Error)]
pub enum SocketError {
    #[error("another agentd is already serving on {0}; stop it first (agentctl status shows it)")]
    InUse(PathBuf),
    #[error("{0} exists and is not a socket; refusing to replace it")]
    NotASocket(PathBuf),
    #[error("socket directory {path} belongs to uid {owner}, not to uid {me}; refusing to use it")]
    ForeignDirectory { path: PathBuf, owner: u32, me: u32 },
    #[error(
        "socket directory {path} is root's and writable by other users (mode {mode:o}); keep the socket in a directory of your own (--socket, $AGENTD_SOCKET)"
    )]
    OpenDirectory { path: PathBuf, mode: u32 },
    #[error("cannot prepare socket {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> SocketError + '_ {
    move |source| SocketError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Creates `dir` (and missing parents) as 0700. An existing directory must
/// belong to us (then a looser mode is tightened to 0700, as the data
/// directory's is) or to root without being writable by others (a
/// world-writable one such as /tmp is refused: anyone could replace the
/// socket there).
pub fn ensure_private_dir(dir: &Path) -> Result<(), SocketError> {
    match std::fs::symlink_metadata(dir) {
        Ok(meta) => {
            let me = nix::unistd::getuid().as_raw();
            if meta.uid() != me && meta.uid() != 0 {
                return Err(SocketError::ForeignDirectory {
                    path: dir.to_path_buf(),
                    owner: meta.uid(),
                    me,
                });
            }
            if meta.file_type().is_symlink() {
                return Err(SocketError::Io {
                    path: dir.to_path_buf(),
                    source: std::io::Error::other(
                        "the socket directory is a symbolic link; use the directory itself",
                    ),
                });
            }
            let mode = meta.permissions().mode() & 0o7777;
            if meta.uid() == me && mode & 0o077 != 0 {
                std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
                    .map_err(io_err(dir))?;
                tracing::warn!(dir = %dir.display(), was = format!("{mode:o}"), "the socket directory was open to other users; made it 0700");
            } else if meta.uid() != me && mode & 0o022 != 0 {
                return Err(SocketError::OpenDirectory {
                    path: dir.to_path_buf(),
                    mode,
                });
            }
            Ok(())
        }
        Err(e) if e.kind() == ErrorKind::NotFound => std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(io_err(dir)),
        Err(e) => Err(io_err(dir)(e)),
    }
}

/// Whether the process that listens on the socket `stream` reached is
/// gone (it exited, or is a zombie): then whoever still holds the listener
/// inherited it and will never serve it. `false` when that cannot be told
/// (a listener from another PID namespace reports pid 0): a live daemon is
/// never pushed aside on a guess.
fn listener_is_orphaned(stream: &std::os::unix::net::UnixStream) -> bool {
    let Ok(cred) = nix::sys::socket::getsockopt(stream, nix::sys::socket::sockopt::PeerCredentials)
    else {
        return false;
    };
    if cred.pid() <= 0 {
        return false;
    }
    match std::fs::read_to_string(format!("/proc/{}/stat", cred.pid())) {
        // The state follows the command name, which is in parentheses.
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with(['Z', 'X'])),
        Err(e) => e.kind() == ErrorKind::NotFound,
    }
}

/// Binds the listener at `path`.
pub fn bind(path: &Path) -> Result<UnixListener, SocketError> {
    if let Some(dir) = path.parent() {
        ensure_private_dir(dir)?;
    }
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_socket() => {
            match std::os::unix::net::UnixStream::connect(path) {
                Ok(stream) if listener_is_orphaned(&stream) => {
                    // A daemon killed while it was starting a tool: the
                    // child it had forked holds a copy of the listener
                    // until it execs, and nobody will ever accept.
                    tracing::info!(
                        socket = %path.display(),
                        "replacing a socket whose daemon is gone"
                    );
                    std::fs::remove_file(path).map_err(io_err(path))?;
                }
                Ok(_) => return Err(SocketError::InUse(path.to_path_buf())),
                Err(e) if e.kind() == ErrorKind::ConnectionRefused => {
                    tracing::info!(socket = %path.display(), "replacing a stale socket");
                    std::fs::remove_file(path).map_err(io_err(path))?;
                }
                Err(e) => return Err(io_err(path)(e)),
            }
        }
        Ok(_) => return Err(SocketError::NotASocket(path.to_path_buf())),
        Err(e) if e.kind() == ErrorKind::NotFound => {}
        Err(e) => return Err(io_err(path)(e)),
    }
    // The umask makes the socket 0600 at creation: there is no window in
    // which another user could connect before a chmod.
    let old = umask(Mode::from_bits_truncate(0o177));
    let bound = UnixListener::bind(path);
    umask(old);
    let listener = bound.map_err(io_err(path))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).map_err(io_err(path))?;
    Ok(listener)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn bind_creates_a_private_dir_and_replaces_stale_sockets() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("run/agentd/agentd.sock");
        let listener = bind(&path).unwrap();
        let dir_mode = std::fs::metadata(path.parent().unwrap())
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(dir_mode & 0o777, 0o700);
        let sock_mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(sock_mode & 0o777, 0o600);
        // Live: refused.
        assert!(matches!(bind(&path), Err(SocketError::InUse(_))));
        drop(listener);
        // Stale (file left, nobody listening): replaced. Another test of
        // this process may fork while the listener is open; its child holds
        // a copy until it execs, so the socket can look live for a moment.
        assert!(path.exists());
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            match bind(&path) {
                Ok(_again) => break,
                Err(SocketError::InUse(_)) if std::time::Instant::now() < deadline => {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                Err(e) => panic!("a stale socket is not replaced: {e}"),
            }
        }
    }

    #[test]
    fn a_regular_file_is_never_replaced() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("agentd.sock");
        std::fs::write(&path, "precious").unwrap();
        assert!(matches!(bind(&path), Err(SocketError::NotASocket(_))));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "precious");
    }
}
