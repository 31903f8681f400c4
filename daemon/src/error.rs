//! The daemon's error type, mapped once to gRPC status codes at the edge.

use tonic::{Code, Status};

use crate::store::StoreError;

/// Everything a request can fail with. Messages say what to do, not only
/// what went wrong, and quote what was sent at most as a short prefix
/// ([`quote`]).
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

    pub fn code(&self) -> Code {
        match self {
            AgentdError::InvalidArgument(_) => Code::InvalidArgument,
            AgentdError::NotFound(_) => Code::NotFound,
            AgentdError::FailedPrecondition(_) => Code::FailedPrecondition,
            AgentdError::AlreadyExists(_) => Code::AlreadyExists,
            AgentdError::Unimplemented(_) => Code::Unimplemented,
            AgentdError::Unavailable(_) => Code::Unavailable,
            // gRPC's own words: "the entire file system is out of space".
            AgentdError::Store(
                StoreError::DiskFull { .. } | StoreError::NoSpace(_) | StoreError::NotOnDisk { .. },
            ) => Code::ResourceExhausted,
            AgentdError::Store(StoreError::Reopening) => Code::Unavailable,
            AgentdError::Store(_) => Code::Internal,
        }
    }
}

impl From<crate::config::ConfigError> for AgentdError {
    /// A file that does not parse is the request's problem to fix; one
    /// that cannot be read, the machine's.
    fn from(e: crate::config::ConfigError) -> Self {
        match e {
            crate::config::ConfigError::Invalid { .. } => AgentdError::invalid(e.to_string()),
            _ => AgentdError::precondition(e.to_string()),
        }
    }
}

impl From<AgentdError> for Status {
    fn from(err: AgentdError) -> Status {
        let code = err.code();
        if code == Code::Internal {
            tracing::error!(error = %err, "request failed in the store");
        }
        Status::new(code, err.to_string())
    }
}

/// Characters of user input an error message quotes.
const QUOTED_CHARS: usize = 160;

/// `text` as an error message may quote it: its first 160 characters, and
/// how much more there was. Messages travel in gRPC trailers, which are
/// limited; a 100,000-character id must not turn NOT_FOUND into a
/// transport error.
pub fn quote(text: &str) -> String {
    let mut chars = text.chars();
    let head: String = chars.by_ref().take(QUOTED_CHARS).collect();
    let rest = chars.count();
    if rest == 0 {
        head
    } else {
        format!("{head}… ({rest} more characters)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_are_short_prefixes() {
        assert_eq!(quote("abc"), "abc");
        let long = "x".repeat(100_000);
        let q = quote(&long);
        assert!(q.len() < 220, "{q}");
        assert!(q.ends_with("(99840 more characters)"), "{q}");
        assert_eq!(quote(&"é".repeat(160)), "é".repeat(160));
    }
}
