//! Model providers (DESIGN §10): each turns a request built from stored bytes
//! into a stream of deltas and one final assistant message.

mod scripted;

use std::path::Path;
use std::sync::Arc;

use serde_json::Value;

use crate::error::AgentdError;
use crate::store::Usage;

pub use scripted::Script;

/// One message of the conversation, as stored: role and the exact JSON bytes
/// of its content blocks.
#[derive(Debug, Clone)]
pub struct MessageBytes {
    pub role: &'static str,
    pub content_json: Arc<[u8]>,
}

/// Everything a provider needs for one model call. Byte fields are sent as
/// they are, never re-serialized, so the provider's prompt cache can match.
#[derive(Debug, Clone)]
pub struct ModelRequest {
    pub model: String,
    pub system_json: Arc<[u8]>,
    pub tools_json: Arc<[u8]>,
    pub messages: Vec<MessageBytes>,
    pub max_tokens: u32,
}

/// Streaming output of a response in progress.
#[derive(Debug, Clone, PartialEq)]
pub enum StreamDelta {
    Text { index: u32, text: String },
    Thinking { index: u32, thinking: String },
    ToolUseStart { index: u32, name: String },
    InputJson { index: u32, json: String },
}

/// A complete assistant message.
#[derive(Debug, Clone)]
pub struct ModelResponse {
    /// Content blocks in the Anthropic Messages format.
    pub content: Vec<Value>,
    pub stop_reason: String,
    pub usage: Usage,
}

/// Why a model call failed; the message is shown to the user as the agent's error.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct ModelError(pub String);

/// A configured model connection. An enum, not a trait object: the set of
/// providers is closed and known to the daemon.
#[derive(Debug, Clone)]
pub enum Provider {
    Scripted(Arc<Script>),
}

/// A parsed `--model` value: `<scheme>:<rest>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelSpec {
    pub scheme: String,
    pub name: String,
}

impl ModelSpec {
    pub fn parse(spec: &str) -> Result<ModelSpec, AgentdError> {
        let (scheme, name) = spec.split_once(':').ok_or_else(|| {
            AgentdError::invalid(format!(
                "model '{spec}' has no scheme; use anthropic:<model>, openai:<model> or scripted:<file>"
            ))
        })?;
        if name.trim().is_empty() {
            return Err(AgentdError::invalid(format!(
                "model '{spec}' names no model after '{scheme}:'"
            )));
        }
        match scheme {
            "scripted" | "anthropic" | "openai" => Ok(ModelSpec {
                scheme: scheme.to_string(),
                name: name.to_string(),
            }),
            other => Err(AgentdError::invalid(format!(
                "unknown model scheme '{other}' in '{spec}'; known schemes: anthropic, openai, scripted"
            ))),
        }
    }
}

impl Provider {
    /// Builds the provider for `spec`. Relative script paths resolve against
    /// `cwd`. Errors here are the caller's to report at creation, so a bad
    /// model is refused up front rather than failing the agent later.
    pub fn from_spec(spec: &ModelSpec, cwd: &Path) -> Result<Provider, AgentdError> {
        match spec.scheme.as_str() {
            "scripted" => Ok(Provider::Scripted(Arc::new(Script::load(
                &cwd.join(&spec.name),
            )?))),
            other => Err(AgentdError::Unimplemented(format!(
                "the {other} provider is not available in agentd {} yet; use scripted:<file>",
                agentd_shared::VERSION
            ))),
        }
    }

    /// Runs one model call, reporting deltas through `on_delta` as they arrive.
    /// Dropping the future aborts the call.
    pub async fn complete(
        &self,
        request: &ModelRequest,
        on_delta: &(dyn Fn(StreamDelta) + Send + Sync),
    ) -> Result<ModelResponse, ModelError> {
        match self {
            Provider::Scripted(script) => script.complete(request, on_delta).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_specs_need_a_known_scheme_and_a_name() {
        let spec = ModelSpec::parse("scripted:demo.json").unwrap();
        assert_eq!(spec.scheme, "scripted");
        assert_eq!(spec.name, "demo.json");
        assert!(matches!(
            ModelSpec::parse("gpt4"),
            Err(AgentdError::InvalidArgument(_))
        ));
        assert!(matches!(
            ModelSpec::parse("bogus:x"),
            Err(AgentdError::InvalidArgument(m)) if m.contains("unknown model scheme")
        ));
        assert!(matches!(
            ModelSpec::parse("anthropic: "),
            Err(AgentdError::InvalidArgument(_))
        ));
    }
}
