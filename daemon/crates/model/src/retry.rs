//! When and how long to wait before calling the model again.
//!
//! Overload, rate limits, server errors, connection loss and streams cut
//! before their end are retried with exponential backoff and full jitter;
//! request errors (400, 401, 403, 404, …) fail at once. A `retry-after`
//! from the provider is honoured when it asks for longer than the backoff.

use std::time::Duration;

use serde::Deserialize;

/// Retry budget, from `[retry]` in config.toml.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct RetryPolicy {
    /// Calls in all, the first included.
    pub max_attempts: u32,
    /// Backoff before the first retry; doubles each time.
    pub initial_backoff_ms: u64,
    /// Cap of one backoff (and of an honoured retry-after).
    pub max_backoff_ms: u64,
}

impl Default for RetryPolicy {
    /// 6 attempts with waits of about 3, 6, 12, 24 and 48 s: about 1.5 to
    /// 2 minutes in all, past most overload episodes.
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 6,
            initial_backoff_ms: 3_000,
            max_backoff_ms: 60_000,
        }
    }
}

impl RetryPolicy {
    /// The wait before attempt `attempt + 1` (attempt counts from 1), or None
    /// when the budget is spent.
    pub fn backoff(&self, attempt: u32, retry_after: Option<Duration>) -> Option<Duration> {
        if attempt >= self.max_attempts {
            return None;
        }
        let exp = self
            .initial_backoff_ms
            .saturating_mul(1u64 << (attempt - 1).min(20))
            .min(self.max_backoff_ms);
        // Jitter in [exp/2, exp]: spreads clients that failed together.
        let jittered = exp / 2 + rand::random_range(0..=exp / 2);
        let mut wait = Duration::from_millis(jittered);
        if let Some(after) = retry_after {
            wait = wait.max(after.min(Duration::from_millis(self.max_backoff_ms)));
        }
        Some(wait)
    }
}

/// Whether an HTTP status is worth retrying.
pub fn status_is_retryable(status: u16) -> bool {
    matches!(status, 408 | 409 | 429 | 500 | 502 | 503 | 504 | 529)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_with_jitter_and_stops_at_the_budget() {
        let p = RetryPolicy {
            max_attempts: 4,
            initial_backoff_ms: 1000,
            max_backoff_ms: 3000,
        };
        for _ in 0..100 {
            let w1 = p.backoff(1, None).unwrap().as_millis();
            assert!((500..=1000).contains(&w1), "{w1}");
            let w2 = p.backoff(2, None).unwrap().as_millis();
            assert!((1000..=2000).contains(&w2), "{w2}");
            let w3 = p.backoff(3, None).unwrap().as_millis();
            assert!((1500..=3000).contains(&w3), "capped: {w3}");
        }
        assert_eq!(p.backoff(4, None), None);
    }

    #[test]
    fn retry_after_is_honoured_up_to_the_cap() {
        let p = RetryPolicy {
            max_attempts: 3,
            initial_backoff_ms: 10,
            max_backoff_ms: 5000,
        };
        assert_eq!(
            p.backoff(1, Some(Duration::from_secs(2))),
            Some(Duration::from_secs(2))
        );
        assert_eq!(
            p.backoff(1, Some(Duration::from_secs(60))),
            Some(Duration::from_secs(5))
        );
    }

    #[test]
    fn only_transient_statuses_are_retried() {
        for s in [429, 500, 502, 503, 529] {
            assert!(status_is_retryable(s), "{s}");
        }
        for s in [400, 401, 403, 404, 413, 422] {
            assert!(!status_is_retryable(s), "{s}");
        }
    }
}
