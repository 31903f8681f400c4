//! HTTP plumbing shared by the providers: API keys that never print, error
//! bodies turned into messages, and which failures are worth a retry.

use std::time::Duration;

use reqwest::header::HeaderValue;
use serde::Deserialize;

use super::ModelError;
use super::retry::status_is_retryable;

/// An API key. It has no `Display`, its `Debug` is redacted, and the header
/// built from it is marked sensitive so HTTP-level logging skips it.
#[derive(Clone, Deserialize, PartialEq, Eq)]
#[serde(transparent)]
pub struct ApiKey(String);

impl ApiKey {
    pub fn new(key: impl Into<String>) -> Option<ApiKey> {
        let key = key.into().trim().to_string();
        (!key.is_empty()).then_some(ApiKey(key))
    }

    pub fn header_value(&self) -> Result<HeaderValue, ModelError> {
        self.prefixed_header_value("")
    }

    /// e.g. `Bearer <key>`.
    pub fn prefixed_header_value(&self, prefix: &str) -> Result<HeaderValue, ModelError> {
        let mut value = HeaderValue::from_str(&format!("{prefix}{}", self.0)).map_err(|_| {
            ModelError::Fatal(
                "the API key contains characters not allowed in an HTTP header".into(),
            )
        })?;
        value.set_sensitive(true);
        Ok(value)
    }
}

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApiKey(<redacted>)")
    }
}

/// Both APIs wrap errors as `{"error": {"type"|"code", "message"}}`
/// (Anthropic adds a top-level `"type": "error"`).
#[derive(Debug, Deserialize)]
struct ErrorEnvelope {
    error: ErrorDetail,
}

#[derive(Debug, Deserialize)]
struct ErrorDetail {
    #[serde(rename = "type", default)]
    kind: Option<String>,
    #[serde(default)]
    code: Option<serde_json::Value>,
    #[serde(default)]
    message: String,
}

/// Longest error body read from a failed response.
const MAX_ERROR_BODY: usize = 64 * 1024;

/// Turns a non-2xx response into an error carrying the provider's own message.
pub async fn read_error(provider: &str, response: reqwest::Response) -> ModelError {
    let status = response.status().as_u16();
    let retry_after = response
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s >= 0.0)
        .map(Duration::from_secs_f64);
    let bytes = response.bytes().await.unwrap_or_default();
    let body = &bytes[..bytes.len().min(MAX_ERROR_BODY)];
    let mut overflow = false;
    let detail = match serde_json::from_slice::<ErrorEnvelope>(body) {
        Ok(env) => {
            let code = env
                .error
                .code
                .map(|c| c.as_str().map_or(c.to_string(), str::to_string));
            overflow = status == 400
                && is_context_overflow(
                    env.error.kind.as_deref(),
                    code.as_deref(),
                    &env.error.message,
                );
            let kind = env.error.kind.or(code).unwrap_or_default();
            if kind.is_empty() {
                env.error.message
            } else {
                format!("{kind}: {}", env.error.message)
            }
        }
        Err(_) => String::from_utf8_lossy(body).trim().to_string(),
    };
    let message = format!("{provider} API error {status}: {detail}");
    if overflow {
        ModelError::ContextOverflow(message)
    } else if status_is_retryable(status) {
        ModelError::Transient {
            message,
            retry_after,
        }
    } else {
        ModelError::Fatal(message)
    }
}

/// The provider refused the request for its length (DESIGN §17):
/// Anthropic's `invalid_request_error` "prompt is too long: N tokens > W
/// maximum" (or "input length and `max_tokens` exceed context limit"),
/// OpenAI's `context_length_exceeded`.
fn is_context_overflow(kind: Option<&str>, code: Option<&str>, message: &str) -> bool {
    code == Some("context_length_exceeded")
        || (kind == Some("invalid_request_error")
            && (message.starts_with("prompt is too long")
                || message.contains("exceed context limit")))
}

/// Sends a request; a non-2xx answer becomes the provider's error.
pub async fn send(
    request: reqwest::RequestBuilder,
    url: &str,
    provider: &str,
) -> Result<reqwest::Response, ModelError> {
    let response = request
        .send()
        .await
        .map_err(|e| ModelError::transient(format!("cannot reach {url}: {}", describe(&e))))?;
    if response.status().is_success() {
        Ok(response)
    } else {
        Err(read_error(provider, response).await)
    }
}

type ByteStream =
    std::pin::Pin<Box<dyn futures::Stream<Item = Result<bytes::Bytes, reqwest::Error>> + Send>>;

/// A streamed response body read chunk by chunk; a body silent for longer
/// than the idle timeout, or broken, is a transient error.
pub struct BodyStream {
    inner: ByteStream,
    idle: Duration,
}

impl BodyStream {
    pub fn new(response: reqwest::Response, idle: Duration) -> BodyStream {
        BodyStream {
            inner: Box::pin(response.bytes_stream()),
            idle,
        }
    }

    /// The next chunk; None at the end of the body.
    pub async fn next(&mut self) -> Result<Option<bytes::Bytes>, ModelError> {
        use futures::StreamExt;
        match tokio::time::timeout(self.idle, self.inner.next()).await {
            Err(_) => Err(ModelError::transient(format!(
                "the stream was silent for {}s",
                self.idle.as_secs()
            ))),
            Ok(None) => Ok(None),
            Ok(Some(Err(e))) => Err(ModelError::transient(format!(
                "the stream broke: {}",
                describe(&e)
            ))),
            Ok(Some(Ok(bytes))) => Ok(Some(bytes)),
        }
    }
}

/// A transport error in words, with its causes (reqwest's own message is
/// often just "error sending request").
pub fn describe(e: &reqwest::Error) -> String {
    let mut out = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_never_print() {
        let key = ApiKey::new("sk-secret-123").unwrap();
        assert!(!format!("{key:?}").contains("secret"));
        assert!(key.header_value().unwrap().is_sensitive());
        assert!(ApiKey::new("  ").is_none());
    }

    #[test]
    fn both_apis_overflow_errors_are_told_apart_from_other_bad_requests() {
        let inv = Some("invalid_request_error");
        assert!(is_context_overflow(
            inv,
            None,
            "prompt is too long: 210000 tokens > 200000 maximum"
        ));
        assert!(is_context_overflow(
            inv,
            None,
            "input length and `max_tokens` exceed context limit: 188240 + 21333 > 200000"
        ));
        assert!(is_context_overflow(
            inv,
            Some("context_length_exceeded"),
            "This model's maximum context length is 128000 tokens."
        ));
        assert!(!is_context_overflow(inv, None, "messages: field required"));
        assert!(!is_context_overflow(
            Some("authentication_error"),
            None,
            "prompt is too long"
        ));
    }
}
