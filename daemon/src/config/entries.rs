//! The configuration as `agentctl config` shows it: every key, its value
//! in force (keys only as set / not set), where it came from, and whether
//! a reload can change it without a restart.

use std::collections::BTreeSet;

use super::Config;
use crate::model::CacheTtl;

/// Environment variables that set a configuration value.
pub const ENV_VARS: [&str; 6] = [
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "AGENTD_AUTO_BACKGROUND_SECS",
    "AGENTD_MODEL",
];

/// Which of `ENV_VARS` are set (non-empty) now.
pub fn env_set() -> BTreeSet<&'static str> {
    ENV_VARS
        .into_iter()
        .filter(|v| std::env::var(v).is_ok_and(|s| !s.trim().is_empty()))
        .collect()
}

/// Where a value came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    Default,
    File,
    Environment(&'static str),
}

/// One key of the configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub key: String,
    pub value: String,
    pub source: Source,
    /// A reload (SIGHUP, `agentctl daemon reload`) applies a change of it;
    /// otherwise the daemon must restart.
    pub reloadable: bool,
}

/// A base URL as shown: credentials in it (user info, a query string) are
/// replaced, like keys are.
fn redacted_url(url: &str) -> String {
    let (without_query, had_query) = match url.split_once('?') {
        Some((u, _)) => (u, true),
        None => (url, false),
    };
    let shown = match without_query.split_once("://") {
        Some((scheme, rest)) => match rest.split_once('/') {
            Some((authority, path)) => match authority.rsplit_once('@') {
                Some((_, host)) => format!("{scheme}://(credentials)@{host}/{path}"),
                None => without_query.to_string(),
            },
            None => match rest.rsplit_once('@') {
                Some((_, host)) => format!("{scheme}://(credentials)@{host}"),
                None => without_query.to_string(),
            },
        },
        None => without_query.to_string(),
    };
    if had_query {
        format!("{shown}?(query not shown)")
    } else {
        shown
    }
}

fn set_or_not(set: bool) -> String {
    if set { "set" } else { "not set" }.to_string()
}

fn ttl(t: CacheTtl) -> &'static str {
    match t {
        CacheTtl::FiveMinutes => "5m",
        CacheTtl::OneHour => "1h",
    }
}

/// Every key of `config`, in a stable order. `env` says which variables
/// win over the file for a key (the environment the daemon started with).
pub fn entries(config: &Config) -> Vec<Entry> {
    let mut out = Collected {
        config,
        entries: Vec::new(),
    };
    // default_model wins over AGENTD_MODEL, which is only a fallback.
    let model_env = config
        .default_model
        .as_ref()
        .is_none_or(|m| m.is_empty())
        .then_some("AGENTD_MODEL");
    let model = match (&config.default_model, model_env) {
        (Some(m), _) if !m.is_empty() => m.clone(),
        (_, Some(var)) if config.env_set.contains(var) => {
            std::env::var(var).unwrap_or_default().trim().to_string()
        }
        _ => "(none)".to_string(),
    };
    out.push("default_model", model, model_env, true);
    for (key, value) in [
        ("max_turns", config.max_turns.to_string()),
        ("max_running_agents", config.max_running_agents.to_string()),
        ("max_subagent_depth", config.max_subagent_depth.to_string()),
        ("max_children", or_none(config.max_children)),
        (
            "max_concurrent_requests",
            or_none(config.max_concurrent_requests),
        ),
        ("max_output_tokens", config.max_output_tokens.to_string()),
        (
            "shutdown_grace_secs",
            config.shutdown_grace_secs.to_string(),
        ),
    ] {
        out.push(key, value, None, true);
    }
    out.push(
        "auto_background_secs",
        config.auto_background_secs().to_string(),
        Some("AGENTD_AUTO_BACKGROUND_SECS"),
        true,
    );
    for (key, value) in [
        ("resume_on_start", config.resume_on_start.to_string()),
        ("implicit_fork", config.implicit_fork.to_string()),
        ("sandbox", config.sandbox.mode.to_string()),
        ("network", config.network.mode.to_string()),
        (
            "network.allow",
            config
                .network
                .allow
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", "),
        ),
        ("instructions", config.instructions.to_string()),
        ("checkpoints.keep", config.checkpoints.keep.to_string()),
    ] {
        out.push(key, value, None, true);
    }
    let paths = |list: &[std::path::PathBuf]| {
        list.iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    };
    for (key, value) in [
        ("sandbox.deny_read", paths(&config.sandbox.deny_read)),
        ("sandbox.allow_read", paths(&config.sandbox.allow_read)),
    ] {
        out.push(key, value, None, false);
    }
    for (key, value) in [
        (
            "stream_idle_timeout_secs",
            config.stream_idle_timeout_secs.to_string(),
        ),
        ("store_min_free_mb", config.store_min_free_mb.to_string()),
    ] {
        out.push(key, value, None, false);
    }
    out.providers();
    for (key, value) in [
        (
            "anthropic.cache_ttl",
            ttl(config.anthropic.cache_ttl).to_string(),
        ),
        ("retry.max_attempts", config.retry.max_attempts.to_string()),
        (
            "retry.initial_backoff_ms",
            config.retry.initial_backoff_ms.to_string(),
        ),
        (
            "retry.max_backoff_ms",
            config.retry.max_backoff_ms.to_string(),
        ),
        ("secrets.env", config.secrets.env.join(",")),
    ] {
        out.push(key, value, None, false);
    }
    out.prices();
    out.models();
    out.entries
}

/// Entries as they are collected, each told where its value came from.
struct Collected<'a> {
    config: &'a Config,
    entries: Vec<Entry>,
}

impl Collected<'_> {
    fn push(&mut self, key: &str, value: String, env: Option<&'static str>, reloadable: bool) {
        let source = match env.filter(|v| self.config.env_set.contains(v)) {
            Some(var) => Source::Environment(var),
            None if self.config.file_keys.contains(key) => Source::File,
            None => Source::Default,
        };
        self.entries.push(Entry {
            key: key.to_string(),
            value,
            source,
            reloadable,
        });
    }

    /// Each provider's key (set or not, never shown) and endpoint.
    fn providers(&mut self) {
        let config = self.config;
        for (name, p, key_var, url_var) in [
            (
                "anthropic",
                &config.anthropic,
                "ANTHROPIC_API_KEY",
                "ANTHROPIC_BASE_URL",
            ),
            (
                "openai",
                &config.openai,
                "OPENAI_API_KEY",
                "OPENAI_BASE_URL",
            ),
        ] {
            let key_set = p.api_key.is_some() || config.env_set.contains(key_var);
            self.push(
                &format!("{name}.api_key"),
                set_or_not(key_set),
                Some(key_var),
                false,
            );
            let url = if config.env_set.contains(url_var) {
                std::env::var(url_var).unwrap_or_default()
            } else {
                p.base_url
                    .clone()
                    .unwrap_or_else(|| "(provider default)".to_string())
            };
            self.push(
                &format!("{name}.base_url"),
                redacted_url(&url),
                Some(url_var),
                false,
            );
        }
    }

    /// Context windows and compaction shares, from the file only.
    fn models(&mut self) {
        for (model, m) in &self.config.models {
            for (key, value) in [
                ("context_window", m.context_window.map(|w| w.to_string())),
                ("compact_at", m.compact_at.map(|c| c.to_string())),
            ] {
                if let Some(value) = value {
                    self.entries.push(Entry {
                        key: format!("models.{model}.{key}"),
                        value,
                        source: Source::File,
                        reloadable: true,
                    });
                }
            }
        }
    }

    /// The price table, from the file only.
    fn prices(&mut self) {
        for (model, p) in &self.config.prices {
            let mut value = format!("input {} output {}", p.input, p.output);
            if let Some(w) = p.cache_write {
                value.push_str(&format!(" cache_write {w}"));
            }
            if let Some(r) = p.cache_read {
                value.push_str(&format!(" cache_read {r}"));
            }
            self.entries.push(Entry {
                key: format!("prices.{model}"),
                value,
                source: Source::File,
                reloadable: true,
            });
        }
    }
}

/// An optional limit as `agentctl config` shows it.
fn or_none(limit: Option<u32>) -> String {
    limit.map_or_else(|| "none".to_string(), |v| v.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_in_base_urls_are_not_shown() {
        assert_eq!(
            redacted_url("https://user:sk-secret@proxy.example/v1"),
            "https://(credentials)@proxy.example/v1"
        );
        assert_eq!(
            redacted_url("http://h.example/v1?key=sk-secret"),
            "http://h.example/v1?(query not shown)"
        );
        assert_eq!(
            redacted_url("http://127.0.0.1:8080"),
            "http://127.0.0.1:8080"
        );
        let config = Config {
            openai: crate::config::ProviderConfig {
                base_url: Some("https://u:pw@x.example/v1?token=t".into()),
                ..Default::default()
            },
            ..Config::default()
        };
        let shown = entries(&config)
            .into_iter()
            .find(|e| e.key == "openai.base_url")
            .unwrap();
        assert!(
            !shown.value.contains("pw") && !shown.value.contains("token"),
            "{shown:?}"
        );
    }
}
