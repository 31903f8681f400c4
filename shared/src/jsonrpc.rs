//! JSON-RPC 2.0 errors as ACP uses them, one definition for both of
//! agentd's ACP sides: the bridge (`agentctl acp`, an ACP agent for
//! editors) and the daemon's ACP client of external agents.

use serde_json::{Value, json};

/// JSON-RPC and ACP error codes.
pub mod code {
    pub const PARSE_ERROR: i64 = -32700;
    pub const INVALID_REQUEST: i64 = -32600;
    pub const METHOD_NOT_FOUND: i64 = -32601;
    pub const INVALID_PARAMS: i64 = -32602;
    pub const INTERNAL: i64 = -32603;
    /// ACP: authentication is required first.
    pub const AUTH_REQUIRED: i64 = -32000;
    /// ACP: a session (or other resource) that does not exist.
    pub const RESOURCE_NOT_FOUND: i64 = -32002;
}

/// A JSON-RPC error object.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
    pub data: Option<Value>,
}

impl std::fmt::Display for RpcError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.message, self.code)
    }
}

impl RpcError {
    pub fn new(code: i64, message: impl Into<String>) -> RpcError {
        RpcError {
            code,
            message: message.into(),
            data: None,
        }
    }

    pub fn invalid_params(message: impl Into<String>) -> RpcError {
        RpcError::new(code::INVALID_PARAMS, message)
    }

    /// ACP's answer for a session that does not exist. Quotes at most a
    /// short prefix of what was sent (a 1 MB id must not come back as a
    /// 1 MB answer).
    pub fn session_not_found(id: &str) -> RpcError {
        let shown: String = id.chars().take(64).collect();
        RpcError {
            code: code::RESOURCE_NOT_FOUND,
            message: format!("no session {shown}"),
            data: Some(json!({"sessionId": shown})),
        }
    }

    /// The error object as JSON-RPC writes it.
    pub fn to_json(&self) -> Value {
        let mut error = json!({"code": self.code, "message": self.message});
        if let Some(data) = &self.data {
            error["data"] = data.clone();
        }
        error
    }
}

/// The JSON-RPC code for a daemon status: what the person asked for
/// cannot be (a malformed or unusable value, a state that refuses it now,
/// a name taken) is invalid params, with the daemon's message saying what
/// to do; only what went wrong inside agentd or the machine is internal.
pub fn code_for(status: tonic::Code) -> i64 {
    use tonic::Code;
    match status {
        Code::NotFound => code::RESOURCE_NOT_FOUND,
        Code::InvalidArgument
        | Code::FailedPrecondition
        | Code::AlreadyExists
        | Code::OutOfRange => code::INVALID_PARAMS,
        _ => code::INTERNAL,
    }
}

impl From<tonic::Status> for RpcError {
    fn from(s: tonic::Status) -> RpcError {
        RpcError::new(code_for(s.code()), format!("agentd: {}", s.message()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_the_person_can_fix_is_invalid_params() {
        use tonic::Code;
        for c in [
            Code::InvalidArgument,
            Code::FailedPrecondition,
            Code::AlreadyExists,
            Code::OutOfRange,
        ] {
            assert_eq!(code_for(c), code::INVALID_PARAMS, "{c:?}");
        }
        assert_eq!(code_for(Code::NotFound), code::RESOURCE_NOT_FOUND);
        for c in [
            Code::Internal,
            Code::Unavailable,
            Code::ResourceExhausted,
            Code::Unknown,
        ] {
            assert_eq!(code_for(c), code::INTERNAL, "{c:?}");
        }
        let e = RpcError::from(tonic::Status::failed_precondition("no Anthropic API key"));
        assert_eq!(e.code, code::INVALID_PARAMS);
        assert_eq!(e.message, "agentd: no Anthropic API key");
    }

    #[test]
    fn a_long_session_id_is_quoted_short() {
        let e = RpcError::session_not_found(&"x".repeat(1_000_000));
        assert!(e.message.len() < 100);
        assert_eq!(e.to_json()["code"], code::RESOURCE_NOT_FOUND);
        assert_eq!(e.to_json()["data"]["sessionId"].as_str().unwrap().len(), 64);
    }
}
