//! Exit codes (DESIGN §12) and how failures become them.

pub const SUCCESS: u8 = 0;
/// The operation failed (including an agent that did not complete).
pub const FAILURE: u8 = 1;
/// The daemon could not be reached (with --no-autostart, or autostart failed).
pub const UNREACHABLE: u8 = 3;
/// `wait --timeout` ran out, like timeout(1).
pub const TIMEOUT: u8 = 124;
/// Interrupted by Ctrl-C (128 + SIGINT).
pub const INTERRUPTED: u8 = 130;

/// A failure with the exit code it maps to and a message for stderr.
#[derive(Debug)]
pub struct Failure {
    pub code: u8,
    pub message: String,
}

impl Failure {
    pub fn new(code: u8, message: impl Into<String>) -> Self {
        Failure {
            code,
            message: message.into(),
        }
    }

    pub fn failed(message: impl Into<String>) -> Self {
        Failure::new(FAILURE, message)
    }
}

impl From<tonic::Status> for Failure {
    fn from(status: tonic::Status) -> Self {
        let code = match status.code() {
            tonic::Code::Unavailable => UNREACHABLE,
            _ => FAILURE,
        };
        let what = match status.code() {
            tonic::Code::NotFound => "not found",
            tonic::Code::InvalidArgument => "invalid argument",
            tonic::Code::FailedPrecondition => "failed precondition",
            tonic::Code::PermissionDenied => "permission denied",
            tonic::Code::AlreadyExists => "already exists",
            tonic::Code::Unimplemented => "not implemented",
            tonic::Code::Unavailable => "daemon unavailable",
            tonic::Code::ResourceExhausted => "resource exhausted",
            tonic::Code::DataLoss => "data loss",
            _ => "error",
        };
        Failure::new(code, format!("{what}: {}", status.message()))
    }
}
