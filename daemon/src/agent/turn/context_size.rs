//! How many tokens a request will carry, estimated before it is sent
//! (DESIGN §17): proactive compaction compares it with the share of the
//! window a request may fill, and a summary request known to be over it
//! is shrunk before it is sent. The provider's own count of the newest
//! request is the base; what was added since, and any request built
//! otherwise, is counted from its bytes at the rate the provider counted
//! that request (never below agentd's floor of four bytes a token).

use super::ModelDriver;
use crate::domain::Role;
use crate::model::ModelRequest;

/// Tokens of `bytes` at agentd's floor rate: four bytes a token.
pub fn estimate(bytes: usize) -> u64 {
    bytes.div_ceil(4) as u64
}

impl ModelDriver {
    /// The input tokens the next request carries: the newest response's
    /// reported input and output, plus what was added after it; without a
    /// reported response, an estimate of all of it.
    pub(super) fn next_request_tokens(&self) -> u64 {
        match self.reported() {
            Some((i, tokens)) => {
                let since: usize = self.messages[i + 1..]
                    .iter()
                    .map(|(_, m)| m.content_json.len())
                    .sum();
                tokens + self.at_rate(since)
            }
            None => {
                let all: usize = self
                    .messages
                    .iter()
                    .map(|(_, m)| m.content_json.len())
                    .sum();
                self.at_rate(all + self.system_json.len() + self.tools_json.len())
            }
        }
    }

    /// The input tokens `request` carries, from its bytes.
    pub(super) fn request_tokens(&self, request: &ModelRequest) -> u64 {
        let bytes: usize = request
            .messages
            .iter()
            .map(|m| m.content_json.len())
            .sum::<usize>()
            + request.system_json.len()
            + request.tools_json.len();
        self.at_rate(bytes)
    }

    /// The newest assistant message the provider reported a count for:
    /// its index, and the tokens of the request plus the answer.
    fn reported(&self) -> Option<(usize, u64)> {
        let i = self
            .messages
            .iter()
            .rposition(|(_, m)| m.role == Role::Assistant)?;
        let seq = self.messages[i].0;
        self.usage_at
            .filter(|(s, _)| *s == seq)
            .map(|(_, tokens)| (i, tokens))
    }

    /// `bytes` in tokens, at the rate the provider counted the newest
    /// request (a tokenizer that makes more of code than a quarter of its
    /// bytes is followed), never below four bytes a token.
    fn at_rate(&self, bytes: usize) -> u64 {
        let Some((i, tokens)) = self.reported() else {
            return estimate(bytes);
        };
        let counted: usize = self.messages[..=i]
            .iter()
            .map(|(_, m)| m.content_json.len())
            .sum::<usize>()
            + self.system_json.len()
            + self.tools_json.len();
        let floor = estimate(bytes);
        if counted == 0 {
            return floor;
        }
        let scaled = (bytes as u128 * tokens as u128).div_ceil(counted as u128);
        floor.max(u64::try_from(scaled).unwrap_or(u64::MAX))
    }
}
