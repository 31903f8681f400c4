//! Connecting to the daemon's Unix socket.

use std::path::{Path, PathBuf};
use std::time::Duration;

use hyper_util::rt::TokioIo;
use tonic::transport::{Channel, Endpoint, Uri};

use crate::proto::agent_service_client::AgentServiceClient;

/// Why a connection to the daemon could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    #[error("no agentd is listening on {path}: {source}")]
    Unreachable {
        path: PathBuf,
        #[source]
        source: tonic::transport::Error,
    },
}

/// Opens a gRPC channel over the Unix socket at `path`. The connection is
/// made eagerly, so an absent daemon is reported here and not on first use.
pub async fn connect(path: &Path) -> Result<Channel, ConnectError> {
    let socket = path.to_path_buf();
    // The URI is required by the API but unused: the connector below ignores it.
    let endpoint = Endpoint::from_static("http://agentd.local")
        .connect_timeout(Duration::from_secs(5))
        .http2_keep_alive_interval(Duration::from_secs(30))
        .keep_alive_while_idle(true);
    endpoint
        .connect_with_connector(tower::service_fn(move |_: Uri| {
            let socket = socket.clone();
            async move {
                let stream = tokio::net::UnixStream::connect(socket).await?;
                Ok::<_, std::io::Error>(TokioIo::new(stream))
            }
        }))
        .await
        .map_err(|source| ConnectError::Unreachable {
            path: path.to_path_buf(),
            source,
        })
}

/// A client of the agent service over the socket at `path`.
pub async fn agent_client(path: &Path) -> Result<AgentServiceClient<Channel>, ConnectError> {
    Ok(AgentServiceClient::new(connect(path).await?).max_decoding_message_size(64 * 1024 * 1024))
}
