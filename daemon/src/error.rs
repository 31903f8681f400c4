//! What a request can fail with, in the daemon's own words: each variant
//! says what went wrong, not which wire code carries it. The server maps
//! them to gRPC status codes once, at the edge (`server::status`); nothing
//! below the server knows gRPC.

use crate::store::StoreError;

pub use crate::domain::text::quote;

/// Everything a request can fail with. Messages say what to do, not only
/// what went wrong, and quote what was sent at most as a short prefix
/// ([`quote`]).
#[derive(Debug, thiserror::Error)]
pub enum AgentdError {
    /// The request asks for something that cannot be: malformed input, an
    /// unknown model, a name that reads as an id.
    #[error("{0}")]
    Invalid(String),
    /// What the request names does not exist.
    #[error("{0}")]
    NotFound(String),
    /// The state of an agent, a repository or the machine refuses it now
    /// (a live agent, a dirty checkout, a link where a directory should be).
    #[error("{0}")]
    Refused(String),
    /// What the request would make exists already.
    #[error("{0}")]
    Exists(String),
    /// A method a later version of agentd implements.
    #[error("{0}")]
    NotYet(String),
    /// The daemon is going down: try again once it is back.
    #[error("{0}")]
    ShuttingDown(String),
    /// The store could not read or write (a full disk among the causes).
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl AgentdError {
    pub fn invalid(msg: impl Into<String>) -> Self {
        Self::Invalid(msg.into())
    }

    pub fn refused(msg: impl Into<String>) -> Self {
        Self::Refused(msg.into())
    }

    /// For methods of the v1 API that a later version of agentd implements.
    pub fn not_yet(what: &str) -> Self {
        Self::NotYet(format!(
            "{what} is not implemented in agentd {} yet",
            agentd_shared::VERSION
        ))
    }

    /// The store refused for want of disk space (the request may be tried
    /// again once space is back).
    pub fn is_disk_full(&self) -> bool {
        matches!(
            self,
            AgentdError::Store(
                StoreError::DiskFull { .. } | StoreError::NoSpace(_) | StoreError::NotOnDisk { .. }
            )
        )
    }
}

impl From<crate::worktree::WorktreeError> for AgentdError {
    fn from(e: crate::worktree::WorktreeError) -> Self {
        match e {
            crate::worktree::WorktreeError::Invalid(m) => AgentdError::Invalid(m),
            crate::worktree::WorktreeError::Refused(m) => AgentdError::Refused(m),
        }
    }
}

impl From<crate::model::SpecError> for AgentdError {
    fn from(e: crate::model::SpecError) -> Self {
        match e {
            crate::model::SpecError::Invalid(m) => AgentdError::Invalid(m),
            crate::model::SpecError::Unusable(m) => AgentdError::Refused(m),
        }
    }
}

impl From<crate::config::ConfigError> for AgentdError {
    /// A file that does not parse is the request's problem to fix; one
    /// that cannot be read, the machine's.
    fn from(e: crate::config::ConfigError) -> Self {
        match e {
            crate::config::ConfigError::Invalid { .. }
            | crate::config::ConfigError::Value { .. } => AgentdError::invalid(e.to_string()),
            _ => AgentdError::refused(e.to_string()),
        }
    }
}
