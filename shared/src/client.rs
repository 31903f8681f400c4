//! Connecting to the daemon's Unix socket, safely (DESIGN §16).
//!
//! Before a byte is sent, the client makes sure it is talking to its own
//! user's daemon: the socket and its directory must belong to this user
//! (the directory may also be root's) and must not be writable by others
//! (a world-writable directory is accepted only if it is root's and sticky,
//! like /tmp, where others cannot replace the socket). Then, on the
//! connected socket itself, the peer's uid (SO_PEERCRED) must be this
//! user's: a socket swapped in between the check and the connect is still
//! caught. Otherwise a prompt, a model name and a working directory would go
//! to whoever made `/tmp/agentd-<uid>/` first.

use std::io::ErrorKind;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hyper_util::rt::TokioIo;
use tokio::net::UnixStream;
use tonic::transport::{Channel, Endpoint, Uri};

use crate::proto::agent_service_client::AgentServiceClient;

/// Why a connection to the daemon could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    #[error("no agentd is listening on {path}: {source}")]
    Unreachable {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "refusing to talk to {path}: {reason}. Someone else may be listening there; remove it if it is stale, or use another socket (--socket, AGENTD_SOCKET or XDG_RUNTIME_DIR)"
    )]
    Unsafe { path: PathBuf, reason: String },
    #[error("cannot open a gRPC channel on {path}: {source}")]
    Transport {
        path: PathBuf,
        #[source]
        source: tonic::transport::Error,
    },
}

impl ConnectError {
    /// True when nothing answers there (autostart may start a daemon);
    /// false when what is there must not be used.
    pub fn is_unreachable(&self) -> bool {
        matches!(self, ConnectError::Unreachable { .. })
    }
}

fn me() -> u32 {
    nix::unistd::getuid().as_raw()
}

/// Checks the socket's directory and, if it exists, the socket file.
/// Ok(false): the socket does not exist (nothing to connect to yet).
pub fn check_socket_path(path: &Path) -> Result<bool, ConnectError> {
    let unsafe_ = |reason: String| ConnectError::Unsafe {
        path: path.to_path_buf(),
        reason,
    };
    let me = me();
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        match std::fs::metadata(dir) {
            Ok(meta) => {
                let mode = meta.permissions().mode();
                if meta.uid() != me && meta.uid() != 0 {
                    return Err(unsafe_(format!(
                        "its directory {} belongs to uid {}, not to you (uid {me})",
                        dir.display(),
                        meta.uid()
                    )));
                }
                let writable_by_others = mode & 0o022 != 0;
                let shared_sticky = meta.uid() == 0 && mode & 0o1000 != 0;
                if writable_by_others && !shared_sticky {
                    return Err(unsafe_(format!(
                        "its directory {} is writable by other users (mode {:o})",
                        dir.display(),
                        mode & 0o7777
                    )));
                }
            }
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(false),
            Err(e) => return Err(unsafe_(format!("cannot check {}: {e}", dir.display()))),
        }
    }
    match std::fs::symlink_metadata(path) {
        Ok(meta) => {
            if !meta.file_type().is_socket() {
                return Err(unsafe_("it is not a socket".into()));
            }
            if meta.uid() != me {
                return Err(unsafe_(format!(
                    "the socket belongs to uid {}, not to you (uid {me})",
                    meta.uid()
                )));
            }
            if meta.permissions().mode() & 0o022 != 0 {
                return Err(unsafe_(format!(
                    "the socket is writable by other users (mode {:o})",
                    meta.permissions().mode() & 0o777
                )));
            }
            Ok(true)
        }
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(false),
        Err(e) => Err(unsafe_(format!("cannot check it: {e}"))),
    }
}

/// Connects to `path` and checks who is listening, before sending anything.
async fn connect_checked(path: &Path) -> Result<UnixStream, ConnectError> {
    let stream = UnixStream::connect(path)
        .await
        .map_err(|source| ConnectError::Unreachable {
            path: path.to_path_buf(),
            source,
        })?;
    let peer = stream.peer_cred().map_err(|e| ConnectError::Unsafe {
        path: path.to_path_buf(),
        reason: format!("cannot tell who listens there: {e}"),
    })?;
    if peer.uid() != me() {
        return Err(ConnectError::Unsafe {
            path: path.to_path_buf(),
            reason: format!(
                "the process listening there runs as uid {}, not as you (uid {})",
                peer.uid(),
                me()
            ),
        });
    }
    Ok(stream)
}

/// Opens a gRPC channel over the Unix socket at `path`, after the checks
/// above. The connection is made eagerly, so an absent daemon is reported
/// here and not on first use.
pub async fn connect(path: &Path) -> Result<Channel, ConnectError> {
    if !check_socket_path(path)? {
        return Err(ConnectError::Unreachable {
            path: path.to_path_buf(),
            source: std::io::Error::from(ErrorKind::NotFound),
        });
    }
    let first = connect_checked(path).await?;
    // The first connection is the one just checked; any later one (a
    // reconnect) is checked the same way.
    let first = Arc::new(Mutex::new(Some(first)));
    let socket = path.to_path_buf();
    // The URI is required by the API but unused: the connector ignores it.
    let endpoint = Endpoint::from_static("http://agentd.local")
        .connect_timeout(Duration::from_secs(5))
        .http2_keep_alive_interval(Duration::from_secs(30))
        .keep_alive_while_idle(true);
    endpoint
        .connect_with_connector(tower::service_fn(move |_: Uri| {
            let socket = socket.clone();
            let first = first.lock().ok().and_then(|mut f| f.take());
            async move {
                let stream = match first {
                    Some(s) => s,
                    None => connect_checked(&socket)
                        .await
                        .map_err(std::io::Error::other)?,
                };
                Ok::<_, std::io::Error>(TokioIo::new(stream))
            }
        }))
        .await
        .map_err(|source| ConnectError::Transport {
            path: path.to_path_buf(),
            source,
        })
}

/// A client of the agent service over the socket at `path`.
pub async fn agent_client(path: &Path) -> Result<AgentServiceClient<Channel>, ConnectError> {
    Ok(AgentServiceClient::new(connect(path).await?).max_decoding_message_size(64 * 1024 * 1024))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_private_directory_passes_and_a_world_writable_one_does_not() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("run");
        std::fs::create_dir(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        let sock = dir.join("agentd.sock");
        assert!(!check_socket_path(&sock).unwrap(), "no socket yet");
        let _listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
        std::fs::set_permissions(&sock, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert!(check_socket_path(&sock).unwrap());
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        let err = check_socket_path(&sock).unwrap_err();
        assert!(err.to_string().contains("writable by other users"), "{err}");
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        std::fs::set_permissions(&sock, std::fs::Permissions::from_mode(0o666)).unwrap();
        assert!(check_socket_path(&sock).is_err());
    }

    #[test]
    fn a_regular_file_is_not_a_socket() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("agentd.sock");
        std::fs::write(&path, "x").unwrap();
        std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        assert!(matches!(
            check_socket_path(&path),
            Err(ConnectError::Unsafe { .. })
        ));
    }
}
