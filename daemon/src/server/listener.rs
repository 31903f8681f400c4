//! Where the daemon listens: the socket the service manager passed (socket
//! activation), else one it binds itself; and, on the way out, removing
//! the socket it made.

use std::path::{Path, PathBuf};

use tokio::net::UnixListener;

use super::{ServeError, activation, socket};

/// The socket the API is served on.
pub(super) struct Listener {
    pub(super) listener: UnixListener,
    pub(super) path: PathBuf,
    /// Passed by the service manager, which owns it.
    pub(super) activated: bool,
}

impl Listener {
    /// The passed listener if there is one, else `socket` bound afresh
    /// (refused while another daemon serves it).
    pub(super) fn open(
        socket: &Path,
        inherited: Option<activation::Inherited>,
    ) -> Result<Listener, ServeError> {
        let Some(inherited) = inherited else {
            return Ok(Listener {
                listener: socket::bind(socket)?,
                path: socket.to_path_buf(),
                activated: false,
            });
        };
        if inherited.path != socket {
            tracing::info!(passed = %inherited.path.display(), "serving the socket the service manager passed");
        }
        let listener = UnixListener::from_std(inherited.listener).map_err(|source| {
            socket::SocketError::Io {
                path: inherited.path.clone(),
                source,
            }
        })?;
        Ok(Listener {
            listener,
            path: inherited.path,
            activated: true,
        })
    }
}

/// Removes the socket the daemon bound. A passed socket belongs to the
/// service manager, which keeps listening on it to start the next daemon.
pub(super) fn remove_socket(path: &Path, activated: bool) {
    if !activated
        && let Err(e) = std::fs::remove_file(path)
        && e.kind() != std::io::ErrorKind::NotFound
    {
        tracing::warn!(error = %e, "could not remove the socket");
    }
}
