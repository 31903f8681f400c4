//! How many tokens a model's context window holds (DESIGN §17): a built-in
//! table of the models agentd knows, which `[models."<scheme>:<model>"]
//! context_window` in config.toml overrides and extends. Unknown models have
//! no known window: they are compacted only when the provider says a
//! request is too long.

use super::ModelScheme;

/// The share of the window past which a request is compacted first,
/// unless configured otherwise.
pub const DEFAULT_COMPACT_AT: f64 = 0.85;

/// When an agent's conversation is compacted before a request.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ContextLimits {
    /// Tokens the model's window holds; None: not known (compacted only
    /// when the provider refuses a request as too long).
    pub window: Option<u64>,
    /// The share of the window a request may fill, in (0, 1].
    pub compact_at: f64,
}

impl ContextLimits {
    /// The most input tokens a request is sent with before compacting.
    pub fn threshold(&self) -> Option<u64> {
        self.window.map(|w| (w as f64 * self.compact_at) as u64)
    }
}

/// The window of `name` (a model of `scheme`), as its provider documents
/// it, if agentd knows the model. Dated snapshots match their family.
pub fn known_window(scheme: ModelScheme, name: &str) -> Option<u64> {
    match scheme {
        ModelScheme::Anthropic => name.starts_with("claude-").then_some(200_000),
        ModelScheme::OpenAi => openai_window(name),
        ModelScheme::Scripted => None,
    }
}

fn openai_window(name: &str) -> Option<u64> {
    // Longest prefix first: "gpt-4.1" before "gpt-4", "gpt-4o" before "gpt-4".
    const TABLE: [(&str, u64); 10] = [
        ("gpt-5", 400_000),
        ("gpt-4.1", 1_047_576),
        ("gpt-4o", 128_000),
        ("gpt-4-turbo", 128_000),
        ("gpt-4", 8_192),
        ("gpt-3.5-turbo", 16_385),
        ("o4-mini", 200_000),
        ("o3", 200_000),
        ("o1", 200_000),
        ("codex-mini", 200_000),
    ];
    TABLE
        .iter()
        .find(|(prefix, _)| name.starts_with(prefix))
        .map(|(_, w)| *w)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_families_have_windows_and_unknown_models_none() {
        assert_eq!(
            known_window(ModelScheme::Anthropic, "claude-sonnet-4-5-20250929"),
            Some(200_000)
        );
        assert_eq!(
            known_window(ModelScheme::OpenAi, "gpt-4o-mini"),
            Some(128_000)
        );
        assert_eq!(
            known_window(ModelScheme::OpenAi, "gpt-4.1-nano"),
            Some(1_047_576)
        );
        assert_eq!(known_window(ModelScheme::OpenAi, "gpt-4-0613"), Some(8_192));
        assert_eq!(known_window(ModelScheme::OpenAi, "llama3:70b"), None);
        assert_eq!(known_window(ModelScheme::Scripted, "x.json"), None);
    }
}
