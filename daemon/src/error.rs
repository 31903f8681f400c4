//! The daemon's error type, mapped once to gRPC status codes at the edge.

use tonic::{Code, Status};

use crate::store::StoreError;

/// Everything a request can fail with. Messages say what to do, not only
/// what went wrong.
#[derive(Debug, thiserror::Error)]
pub enum AgentdError {
    #[error("{0}")]
    InvalidArgument(String),
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    FailedPrecondition(String),
    #[error("{0}")]
    AlreadyExists(String),
    #[error("{0}")]
    Unimplemented(String),
    #[error("{0}")]
    Unavailable(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl AgentdError {
    pub fn invalid(msg: impl Into<String>) -> Self {
        Self::InvalidArgument(msg.into())
    }

    pub fn precondition(msg: impl Into<String>) -> Self {
        Self::FailedPrecondition(msg.into())
    }

    /// For methods of the v1 API that a later version of agentd implements.
    pub fn not_yet(what: &str) -> Self {
        Self::Unimplemented(format!(
            "{what} is not implemented in agentd {} yet",
            agentd_shared::VERSION
        ))
    }
}

impl From<AgentdError> for Status {
    fn from(err: AgentdError) -> Status {
        let code = match &err {
            AgentdError::InvalidArgument(_) => Code::InvalidArgument,
            AgentdError::NotFound(_) => Code::NotFound,
            AgentdError::FailedPrecondition(_) => Code::FailedPrecondition,
            AgentdError::AlreadyExists(_) => Code::AlreadyExists,
            AgentdError::Unimplemented(_) => Code::Unimplemented,
            AgentdError::Unavailable(_) => Code::Unavailable,
            AgentdError::Store(StoreError::Corrupt { .. }) => Code::DataLoss,
            AgentdError::Store(_) => Code::Internal,
        };
        if code == Code::Internal || code == Code::DataLoss {
            tracing::error!(error = %err, "request failed in the store");
        }
        Status::new(code, err.to_string())
    }
}
