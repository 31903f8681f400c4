//! Shared by the daemon and its clients: the generated v1 API, where the
//! socket and the data live, and how to connect to the daemon.

pub mod attach;
pub mod client;
pub mod durable_file;
pub mod ids;
pub mod jsonrpc;
pub mod list_response;
pub mod paths;
pub mod sync;
pub mod tool_summary;
pub mod visible;

/// The generated `agentd.v1` API (messages, client and server).
pub mod proto {
    #![allow(clippy::all, missing_docs)]
    tonic::include_proto!("agentd.v1");

    pub use crate::list_response::ListAgentsResponse;

    /// Encoded file descriptor set, for gRPC server reflection.
    pub const FILE_DESCRIPTOR_SET: &[u8] =
        tonic::include_file_descriptor_set!("agentd_v1_descriptor");
}

/// The daemon's and client's version, exchanged in `GetStatus`.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
