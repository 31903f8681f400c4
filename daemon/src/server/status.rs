//! The daemon's errors as gRPC statuses: the one place a domain error
//! becomes a wire code (DESIGN §11).

use tonic::{Code, Status};

use crate::error::AgentdError;
use crate::store::StoreError;

/// The gRPC code that carries `err`.
pub fn code(err: &AgentdError) -> Code {
    match err {
        AgentdError::Invalid(_) => Code::InvalidArgument,
        AgentdError::NotFound(_) => Code::NotFound,
        AgentdError::Refused(_) => Code::FailedPrecondition,
        AgentdError::Exists(_) => Code::AlreadyExists,
        AgentdError::NotYet(_) => Code::Unimplemented,
        AgentdError::ShuttingDown(_) => Code::Unavailable,
        // gRPC's own words: "the entire file system is out of space".
        e if e.is_disk_full() => Code::ResourceExhausted,
        AgentdError::Store(StoreError::Reopening) => Code::Unavailable,
        AgentdError::Store(_) => Code::Internal,
    }
}

impl From<AgentdError> for Status {
    fn from(err: AgentdError) -> Status {
        let code = code(&err);
        if code == Code::Internal {
            tracing::error!(error = %err, "request failed in the store");
        }
        Status::new(code, err.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_of_error_has_its_code() {
        assert_eq!(code(&AgentdError::invalid("x")), Code::InvalidArgument);
        assert_eq!(code(&AgentdError::refused("x")), Code::FailedPrecondition);
        assert_eq!(code(&AgentdError::NotFound("x".into())), Code::NotFound);
        assert_eq!(code(&AgentdError::not_yet("x")), Code::Unimplemented);
        assert_eq!(
            code(&AgentdError::ShuttingDown("x".into())),
            Code::Unavailable
        );
        assert_eq!(
            code(&AgentdError::Store(StoreError::Reopening)),
            Code::Unavailable
        );
    }
}
