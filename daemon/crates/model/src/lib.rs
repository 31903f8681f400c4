//! Model providers (DESIGN §10): each turns a request built from stored bytes
//! into a stream of deltas and one final assistant message.

use agentd_domain as domain;

pub mod anthropic;
pub mod http;
pub mod openai;
pub mod retry;
mod scripted;
mod spec_error;
pub mod sse;
pub mod window;

use std::future::Future;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use crate::domain::text::quote;
use crate::domain::{Role, StopReason, Usage};
pub use spec_error::SpecError;

pub use anthropic::{Anthropic, CacheTtl};
pub use http::ApiKey;
pub use openai::OpenAi;
pub use retry::RetryPolicy;
pub use scripted::Script;

/// One message of the conversation, as stored: role and the exact JSON bytes
/// of its content blocks.
#[derive(Debug, Clone, PartialEq)]
pub struct MessageBytes {
    pub role: Role,
    pub content_json: Arc<[u8]>,
    /// Where a cache breakpoint goes inside the content, besides the usual
    /// ones (see `TranscriptEntry::cache_point`).
    pub cache_point: Option<usize>,
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
    pub stop_reason: StopReason,
    pub usage: Usage,
}

/// What a model call reports while it runs.
#[derive(Debug, Clone, PartialEq)]
pub enum ModelEvent {
    Delta(StreamDelta),
    /// The response so far is void (it will never be persisted); the call
    /// is retried after `delay`.
    Retrying {
        attempt: u32,
        delay: Duration,
        reason: String,
    },
}

/// Why a model call failed; the message is the provider's own, shown to the
/// user as the agent's error.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ModelError {
    /// Overload, rate limit, server error, connection loss, cut stream.
    #[error("{message}")]
    Transient {
        message: String,
        retry_after: Option<Duration>,
    },
    /// Retrying cannot help (bad request, bad key, unknown model, …).
    #[error("{0}")]
    Fatal(String),
    /// The request is longer than the model's context window: compacting
    /// the conversation helps (DESIGN §17).
    #[error("{0}")]
    ContextOverflow(String),
}

impl ModelError {
    pub fn transient(message: String) -> Self {
        ModelError::Transient {
            message,
            retry_after: None,
        }
    }
}

/// How the daemon reaches the real providers: keys, endpoints, retry
/// budget. Built once at start from config.toml and the environment.
#[derive(Debug, Clone)]
pub struct ModelSettings {
    pub http: reqwest::Client,
    pub anthropic_key: Option<ApiKey>,
    pub anthropic_base_url: String,
    pub openai_key: Option<ApiKey>,
    pub openai_base_url: String,
    pub cache_ttl: CacheTtl,
    pub retry: RetryPolicy,
    /// A stream silent for this long is treated as broken.
    pub idle_timeout: Duration,
}

/// A configured model connection. An enum, not a trait object: the set of
/// providers is closed and known to the daemon.
#[derive(Debug, Clone)]
pub enum Provider {
    Scripted(Arc<Script>),
    Anthropic(Arc<Anthropic>, RetryPolicy),
    OpenAi(Arc<OpenAi>, RetryPolicy),
}

/// The kinds of model agentd speaks to (DESIGN §10).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelScheme {
    /// `anthropic:<model>`: the Messages API.
    Anthropic,
    /// `openai:<model>`: Chat Completions, OpenAI's or a local server's.
    OpenAi,
    /// `scripted:<file>`: a replayed script.
    Scripted,
}

/// A parsed `--model` value: `<scheme>:<rest>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelSpec {
    pub scheme: ModelScheme,
    pub name: String,
}

impl ModelSpec {
    pub fn parse(spec: &str) -> Result<ModelSpec, SpecError> {
        // A model is shown in every listing: no character of it may
        // instruct a terminal or hide from a reader.
        if agentd_shared::visible::has_control(spec) {
            return Err(SpecError::invalid(format!(
                "model '{}' holds a control character; models are names, printable only",
                quote(spec)
            )));
        }
        let (scheme, name) = spec.split_once(':').ok_or_else(|| {
            SpecError::invalid(format!(
                "model '{}' has no scheme; use anthropic:<model>, openai:<model> or scripted:<file>",
                quote(spec)
            ))
        })?;
        if name.trim().is_empty() {
            return Err(SpecError::invalid(format!(
                "model '{}' names no model after '{}:'",
                quote(spec),
                quote(scheme)
            )));
        }
        let scheme = match scheme {
            "scripted" => ModelScheme::Scripted,
            "anthropic" => ModelScheme::Anthropic,
            "openai" => ModelScheme::OpenAi,
            other => {
                return Err(SpecError::invalid(format!(
                    "unknown model scheme '{}'; known schemes: anthropic, openai, scripted",
                    quote(other)
                )));
            }
        };
        Ok(ModelSpec {
            scheme,
            name: name.to_string(),
        })
    }
}

impl ModelScheme {
    pub fn as_str(self) -> &'static str {
        match self {
            ModelScheme::Anthropic => "anthropic",
            ModelScheme::OpenAi => "openai",
            ModelScheme::Scripted => "scripted",
        }
    }
}

/// The spec as it was written: `<scheme>:<name>`.
impl std::fmt::Display for ModelSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.scheme.as_str(), self.name)
    }
}

impl Provider {
    /// Builds the provider for `spec`. Relative script paths resolve against
    /// `cwd`. Errors here are the caller's to report at creation, so a bad
    /// model is refused up front rather than failing the agent later.
    pub fn from_spec(
        spec: &ModelSpec,
        cwd: &Path,
        settings: &ModelSettings,
    ) -> Result<Provider, SpecError> {
        match spec.scheme {
            ModelScheme::Scripted => Ok(Provider::Scripted(Arc::new(Script::load(
                &cwd.join(&spec.name),
            )?))),
            ModelScheme::Anthropic => {
                let api_key = settings.anthropic_key.clone().ok_or_else(|| {
                    SpecError::unusable(
                        "no Anthropic API key: set ANTHROPIC_API_KEY in agentd's environment \
                         or api_key under [anthropic] in config.toml, then restart agentd",
                    )
                })?;
                Ok(Provider::Anthropic(
                    Arc::new(Anthropic {
                        http: settings.http.clone(),
                        base_url: settings.anthropic_base_url.clone(),
                        api_key,
                        model: spec.name.clone(),
                        cache_ttl: settings.cache_ttl,
                        idle_timeout: settings.idle_timeout,
                    }),
                    settings.retry,
                ))
            }
            ModelScheme::OpenAi => {
                let is_public = settings.openai_base_url == openai::DEFAULT_BASE_URL;
                if is_public && settings.openai_key.is_none() {
                    return Err(SpecError::unusable(
                        "no OpenAI API key: set OPENAI_API_KEY in agentd's environment or \
                         api_key under [openai] in config.toml (local servers: set \
                         OPENAI_BASE_URL), then restart agentd",
                    ));
                }
                Ok(Provider::OpenAi(
                    Arc::new(OpenAi {
                        http: settings.http.clone(),
                        base_url: settings.openai_base_url.clone(),
                        api_key: settings.openai_key.clone(),
                        model: spec.name.clone(),
                        idle_timeout: settings.idle_timeout,
                    }),
                    settings.retry,
                ))
            }
        }
    }

    /// Runs one model call (with retries), reporting deltas and retries
    /// through `on_event` as they happen. Dropping the future aborts the
    /// call at once, whatever it is doing.
    pub async fn complete(
        &self,
        request: &ModelRequest,
        on_event: &(dyn Fn(ModelEvent) + Send + Sync),
    ) -> Result<ModelResponse, ModelError> {
        let on_delta = |d: StreamDelta| on_event(ModelEvent::Delta(d));
        match self {
            Provider::Scripted(script) => script.complete(request, &on_delta).await,
            Provider::Anthropic(p, retry) => {
                with_retries(retry, on_event, || p.attempt(request, &on_delta)).await
            }
            Provider::OpenAi(p, retry) => {
                with_retries(retry, on_event, || p.attempt(request, &on_delta)).await
            }
        }
    }
}

/// Calls `attempt` until it succeeds, fails for good, or the budget is spent.
async fn with_retries<F, Fut>(
    policy: &RetryPolicy,
    on_event: &(dyn Fn(ModelEvent) + Send + Sync),
    mut attempt: F,
) -> Result<ModelResponse, ModelError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<ModelResponse, ModelError>>,
{
    let mut n = 1;
    loop {
        match attempt().await {
            Err(ModelError::Transient {
                message,
                retry_after,
            }) => match policy.backoff(n, retry_after) {
                Some(delay) => {
                    tracing::warn!(attempt = n, ?delay, reason = %message, "model call failed; retrying");
                    on_event(ModelEvent::Retrying {
                        attempt: n,
                        delay,
                        reason: message,
                    });
                    tokio::time::sleep(delay).await;
                    n += 1;
                }
                None => {
                    return Err(ModelError::Fatal(format!(
                        "{message} (gave up after {n} attempts)"
                    )));
                }
            },
            other => return other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_specs_need_a_known_scheme_and_a_name() {
        let spec = ModelSpec::parse("scripted:demo.json").unwrap();
        assert_eq!(spec.scheme, ModelScheme::Scripted);
        assert_eq!(spec.name, "demo.json");
        assert!(matches!(
            ModelSpec::parse("gpt4"),
            Err(SpecError::Invalid(_))
        ));
        assert!(matches!(
            ModelSpec::parse("bogus:x"),
            Err(SpecError::Invalid(m)) if m.contains("unknown model scheme")
        ));
        assert!(matches!(
            ModelSpec::parse("anthropic: "),
            Err(SpecError::Invalid(_))
        ));
    }
}
