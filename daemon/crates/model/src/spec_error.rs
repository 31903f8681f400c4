//! What choosing a model can fail with: a spec that names no model, or a
//! model that cannot be used here (no key, an unreadable script).

/// Why a model spec (`<scheme>:<model>`) cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum SpecError {
    /// The spec or the script it names is malformed.
    #[error("{0}")]
    Invalid(String),
    /// It is well formed but cannot be used on this machine now (a
    /// missing key, a script that cannot be read).
    #[error("{0}")]
    Unusable(String),
}

impl SpecError {
    pub fn invalid(msg: impl Into<String>) -> Self {
        Self::Invalid(msg.into())
    }

    pub fn unusable(msg: impl Into<String>) -> Self {
        Self::Unusable(msg.into())
    }
}
