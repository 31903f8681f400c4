//! The daemon's configuration: `$XDG_CONFIG_HOME/agentd/config.toml`, all
//! keys optional. `entries` renders it for `agentctl config`, with where
//! each value came from and whether a reload (SIGHUP) can change it.
//! Beside it, what people write for agents in other files: agent types
//! and fork profiles (`definitions`), and the external agents agentd can
//! run (`external_agents`, config.toml's `[agents.NAME]` and the built-in
//! entries).

pub mod agent_hosts;
pub mod definitions;
pub mod entries;
pub mod external_agents;
pub mod network;
pub mod sandbox;

pub use definitions::{agent_types, fork_profile};

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

/// Why the configuration cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// Only the message and the line: the parser's own rendering quotes
    /// the line, which could hold an API key.
    #[error("invalid config {path} (line {line}): {message}")]
    Invalid {
        path: PathBuf,
        line: usize,
        message: String,
    },
    /// A value the file gives is out of range (it parsed).
    #[error("invalid config {path}: {message}")]
    Value { path: PathBuf, message: String },
    #[error("cannot set up the HTTP client: {0}")]
    Http(String),
}

/// Provider keys, always removed from the environment of tool processes.
const PROVIDER_KEY_VARS: [&str; 4] = [
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "OPENAI_API_KEY",
    "OPENAI_ORG_ID",
];

use crate::model::window::{self, ContextLimits};
use crate::model::{ApiKey, CacheTtl, ModelSettings, RetryPolicy, anthropic, openai};
use crate::pricing::Price;

/// The daemon's settings: read at start, and again on a reload
/// (`Supervisor::reload_config` says which take effect then).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// Model used when a request names none, e.g. "anthropic:claude-sonnet-4-5".
    pub default_model: Option<String>,
    /// Model turns one run of an agent may take before it is stopped (a
    /// revival by a message starts a new count).
    pub max_turns: u32,
    /// How long shutdown waits for running turns to reach a safe point.
    pub shutdown_grace_secs: u64,
    /// A model stream silent for this long is treated as broken and retried.
    pub stream_idle_timeout_secs: u64,
    /// Output tokens requested per model call (`max_tokens`).
    pub max_output_tokens: u32,
    /// Agents running at once; more wait as `pending` and start in order.
    pub max_running_agents: u32,
    /// How deep subagents may nest (a client's agent is depth 0): every
    /// family's `max_depth` (DESIGN §24), also written `max_depth`.
    #[serde(alias = "max_depth")]
    pub max_subagent_depth: u32,
    /// Every family's limits besides its depth (DESIGN §24): descendants
    /// of a client's agent running at once, and model requests in flight
    /// at once across it and them. None: no limit but the daemon's.
    pub max_children: Option<u32>,
    pub max_concurrent_requests: Option<u32>,
    /// The budget a client's agent started without one gets (DESIGN §24):
    /// USD for it and every descendant; tokens for models without a price.
    pub budget_usd: Option<f64>,
    pub budget_tokens: Option<u64>,
    /// Resume agents that were live when the daemon stopped.
    pub resume_on_start: bool,
    /// An `Agent` call without `subagent_type` forks (DESIGN §7). Off by
    /// default: models trained on Claude Code's schema leave it out
    /// expecting `general-purpose`.
    pub implicit_fork: bool,
    /// Seconds before a foreground agent is moved to the background
    /// (0: never). `AGENTD_AUTO_BACKGROUND_SECS` overrides it.
    pub auto_background_secs: u64,
    /// Writes are refused (and agents wait) when less than this many MiB
    /// are free where the data directory is.
    pub store_min_free_mb: u64,
    /// How tools are confined unless an agent asks for another mode
    /// (DESIGN §14): "workspace-write", "read-only" or "off"; and what
    /// confined processes may not read besides the built-in list (§22).
    pub sandbox: sandbox::SandboxSetting,
    /// How confined tools reach the network unless an agent asks for
    /// another mode ("proxy", "full", "none"), and the hosts every
    /// agent's proxy allows (§22).
    pub network: network::NetworkSetting,
    /// false: agents are made without the project instructions
    /// (AGENTS.md, CLAUDE.md) in their system prompt (DESIGN §17).
    pub instructions: bool,
    pub anthropic: ProviderConfig,
    pub openai: ProviderConfig,
    pub retry: RetryPolicy,
    /// Checkpoints of agents' workspaces (DESIGN §23).
    pub checkpoints: CheckpointsConfig,
    /// Permission rules in Claude Code's syntax (DESIGN §24), besides
    /// those of `~/.claude/settings.json`.
    pub permissions: PermissionsConfig,
    pub secrets: SecretsConfig,
    /// Prices by `"<scheme>:<model>"` (or a prefix ending in `*`), USD per
    /// million tokens:
    /// `input`, `output`, optional `cache_write`, `cache_read`. They
    /// override and extend the built-in list prices (`GetUsage`).
    pub prices: BTreeMap<String, Price>,
    /// Per model (`"<scheme>:<model>"`): its context window in tokens and
    /// the share of it past which the conversation is compacted (DESIGN
    /// §17); they override the built-in table.
    pub models: BTreeMap<String, ModelLimits>,
    /// `[mcp_servers.NAME]`: the MCP servers every agent gets (DESIGN
    /// §18), checked as the file is read.
    #[serde(deserialize_with = "crate::mcp::deserialize_toml_servers")]
    pub mcp_servers: Vec<crate::mcp::ServerDef>,
    /// `[agents.NAME]`: coding agents agentd runs over ACP (DESIGN §19),
    /// besides the built-in ones (`agents`).
    #[serde(deserialize_with = "external_agents::deserialize_agents")]
    pub agents: Vec<external_agents::ExternalAgentDef>,
    /// The dotted keys the file set (`anthropic.base_url`, `prices`…):
    /// where a value came from, for `agentctl config`.
    #[serde(skip)]
    pub file_keys: std::collections::BTreeSet<String>,
    /// The variables of `entries::ENV_VARS` that were set when the daemon
    /// started (read before it forgot the secrets among them).
    #[serde(skip)]
    pub env_set: std::collections::BTreeSet<&'static str>,
}

/// `[models."<scheme>:<model>"]`.
#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ModelLimits {
    /// Tokens the model's context window holds (at least 1024).
    #[serde(deserialize_with = "window_tokens")]
    pub context_window: Option<u64>,
    /// The share of the window past which a request is compacted first:
    /// more than 0, at most 1 (default 0.85).
    #[serde(deserialize_with = "share")]
    pub compact_at: Option<f64>,
}

fn window_tokens<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    let n = u64::deserialize(d)?;
    if n < 1024 {
        return Err(serde::de::Error::custom(format!(
            "context_window is {n}; it must be at least 1024 tokens"
        )));
    }
    Ok(Some(n))
}

fn share<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    let v = f64::deserialize(d)?;
    if !(v > 0.0 && v <= 1.0) {
        return Err(serde::de::Error::custom(format!(
            "compact_at is {v}; it must be more than 0 and at most 1"
        )));
    }
    Ok(Some(v))
}

/// `[secrets]`: environment variables tools never see (DESIGN §16).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SecretsConfig {
    /// Names removed from every tool's environment, besides the provider
    /// keys (which always are).
    pub env: Vec<String>,
}

/// `[anthropic]` / `[openai]`. The environment (`ANTHROPIC_API_KEY`,
/// `ANTHROPIC_BASE_URL`, `OPENAI_API_KEY`, `OPENAI_BASE_URL`) wins over these.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ProviderConfig {
    pub api_key: Option<ApiKey>,
    pub base_url: Option<String>,
    /// Anthropic only: "5m" (default) or "1h".
    pub cache_ttl: CacheTtl,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            default_model: None,
            max_turns: 100,
            shutdown_grace_secs: 10,
            stream_idle_timeout_secs: 300,
            max_output_tokens: 16_384,
            max_running_agents: 16,
            max_subagent_depth: 3,
            max_children: None,
            max_concurrent_requests: None,
            budget_usd: None,
            budget_tokens: None,
            resume_on_start: true,
            implicit_fork: false,
            auto_background_secs: 120,
            store_min_free_mb: 64,
            sandbox: sandbox::SandboxSetting::default(),
            network: network::NetworkSetting::default(),
            instructions: true,
            secrets: SecretsConfig::default(),
            anthropic: ProviderConfig::default(),
            openai: ProviderConfig::default(),
            retry: RetryPolicy::default(),
            checkpoints: CheckpointsConfig::default(),
            permissions: PermissionsConfig::default(),
            prices: BTreeMap::new(),
            models: BTreeMap::new(),
            mcp_servers: Vec::new(),
            agents: Vec::new(),
            file_keys: Default::default(),
            env_set: entries::env_set(),
        }
    }
}

/// `[checkpoints]`: how many turn checkpoints each agent keeps (the
/// oldest are pruned, their objects collected).
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct CheckpointsConfig {
    pub keep: u32,
}

impl Default for CheckpointsConfig {
    fn default() -> Self {
        CheckpointsConfig { keep: 200 }
    }
}

/// `[permissions]`: `allow`, `ask`, `deny` rules (DESIGN §24).
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct PermissionsConfig {
    pub allow: Vec<String>,
    pub ask: Vec<String>,
    pub deny: Vec<String>,
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

impl Config {
    /// Reads `path`; a missing file means all defaults, a malformed one is an
    /// error naming the file.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Config::default()),
            Err(source) => {
                return Err(ConfigError::Read {
                    path: path.to_path_buf(),
                    source,
                });
            }
        };
        let invalid = |e: toml::de::Error| ConfigError::Invalid {
            path: path.to_path_buf(),
            line: e
                .span()
                .map(|s| text[..s.start.min(text.len())].matches('\n').count() + 1)
                .unwrap_or(0),
            message: e.message().to_string(),
        };
        let mut config: Config = toml::from_str(&text).map_err(invalid)?;
        if (config.budget_usd.is_some() || config.budget_tokens.is_some())
            && let Err(why) = crate::domain::Budget::new(config.budget_usd, config.budget_tokens)
        {
            return Err(ConfigError::Value {
                path: path.to_path_buf(),
                message: format!("budget_usd / budget_tokens: {why}"),
            });
        }
        if let Err(why) = crate::domain::FamilyLimits::new(
            config.max_children,
            Some(config.max_subagent_depth),
            config.max_concurrent_requests,
        ) {
            return Err(ConfigError::Value {
                path: path.to_path_buf(),
                message: why,
            });
        }
        config.env_set = entries::env_set();
        let table: toml::Table = toml::from_str(&text).map_err(invalid)?;
        for (key, value) in &table {
            match value {
                toml::Value::Table(inner)
                    if !matches!(key.as_str(), "prices" | "models" | "mcp_servers" | "agents") =>
                {
                    config
                        .file_keys
                        .extend(inner.keys().map(|k| format!("{key}.{k}")));
                }
                _ => {
                    config.file_keys.insert(key.clone());
                }
            }
        }
        // `[sandbox] mode = …` sets what `sandbox = …` does.
        if config.file_keys.contains("sandbox.mode") {
            config.file_keys.insert("sandbox".into());
        }
        if config.file_keys.contains("max_depth") {
            config.file_keys.insert("max_subagent_depth".into());
        }
        if config.file_keys.contains("network.mode") {
            config.file_keys.insert("network".into());
        }
        Ok(config)
    }

    /// The budget of a client's agent started without one (checked when
    /// the file was read).
    pub fn default_budget(&self) -> Option<crate::domain::Budget> {
        crate::domain::Budget::new(self.budget_usd, self.budget_tokens).ok()
    }

    /// The limits every family has, its root holding them (checked when
    /// the file was read).
    pub fn family_limits(&self) -> crate::domain::FamilyLimits {
        crate::domain::FamilyLimits {
            max_children: self.max_children,
            max_depth: Some(self.max_subagent_depth),
            max_concurrent_requests: self.max_concurrent_requests,
        }
    }

    /// Keys and endpoints for the real providers, the environment first.
    pub fn model_settings(&self) -> Result<ModelSettings, ConfigError> {
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(30))
            .user_agent(concat!("agentd/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| ConfigError::Http(e.to_string()))?;
        Ok(ModelSettings {
            http,
            anthropic_key: env("ANTHROPIC_API_KEY")
                .and_then(ApiKey::new)
                .or_else(|| self.anthropic.api_key.clone()),
            anthropic_base_url: env("ANTHROPIC_BASE_URL")
                .or_else(|| self.anthropic.base_url.clone())
                .unwrap_or_else(|| anthropic::DEFAULT_BASE_URL.to_string()),
            openai_key: env("OPENAI_API_KEY")
                .and_then(ApiKey::new)
                .or_else(|| self.openai.api_key.clone()),
            openai_base_url: env("OPENAI_BASE_URL")
                .or_else(|| self.openai.base_url.clone())
                .unwrap_or_else(|| openai::DEFAULT_BASE_URL.to_string()),
            cache_ttl: self.anthropic.cache_ttl,
            retry: self.retry,
            idle_timeout: Duration::from_secs(self.stream_idle_timeout_secs.max(1)),
        })
    }

    /// The auto-background delay, the environment first.
    pub fn auto_background_secs(&self) -> u64 {
        env("AGENTD_AUTO_BACKGROUND_SECS")
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(self.auto_background_secs)
    }

    pub fn shutdown_grace(&self) -> Duration {
        Duration::from_secs(self.shutdown_grace_secs)
    }

    /// When `model` (`"<scheme>:<model>"`) is compacted: the configured
    /// window and share, else the built-in table's window and 0.85.
    pub fn context_limits(&self, model: &crate::model::ModelSpec) -> ContextLimits {
        let configured = self.models.get(&model.to_string());
        ContextLimits {
            window: configured
                .and_then(|m| m.context_window)
                .or_else(|| window::known_window(model.scheme, &model.name)),
            compact_at: configured
                .and_then(|m| m.compact_at)
                .unwrap_or(window::DEFAULT_COMPACT_AT),
        }
    }

    /// Variables removed from every tool's environment.
    pub fn secret_env_names(&self) -> Vec<String> {
        let mut names: Vec<String> = PROVIDER_KEY_VARS.iter().map(|s| s.to_string()).collect();
        for name in &self.secrets.env {
            if !names.contains(name) {
                names.push(name.clone());
            }
        }
        names
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_readmes_example_config_is_valid() {
        let readme = include_str!("../../../README.md");
        let at = readme.find("Example config.toml:").unwrap();
        let block = &readme[at..];
        let start = block.find("```toml\n").unwrap() + "```toml\n".len();
        let end = start + block[start..].find("```").unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        std::fs::write(&path, &block[start..end]).unwrap();
        let cfg = Config::load(&path).unwrap();
        assert!(!cfg.implicit_fork);
        assert_eq!(cfg.prices["openai:my-local-*"].input, 0.0);
    }

    #[test]
    fn family_limits_and_budgets_out_of_range_name_the_key_and_no_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        for (text, key) in [
            ("max_children = 0\n", "max_children"),
            ("max_concurrent_requests = 0\n", "max_concurrent_requests"),
            ("budget_usd = -1\n", "budget_usd"),
        ] {
            std::fs::write(&path, text).unwrap();
            let err = Config::load(&path).unwrap_err().to_string();
            assert!(err.contains(key) && !err.contains("line"), "{err}");
        }
        std::fs::write(&path, "max_depth = 2\nmax_children = 4\n").unwrap();
        let cfg = Config::load(&path).unwrap();
        assert_eq!(
            cfg.family_limits(),
            crate::domain::FamilyLimits::new(Some(4), Some(2), None).unwrap()
        );
        assert!(cfg.file_keys.contains("max_subagent_depth"));
    }

    #[test]
    fn missing_file_is_defaults_and_bad_key_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = Config::load(&dir.path().join("none.toml")).unwrap();
        assert_eq!(cfg.max_turns, 100);
        let bad = dir.path().join("bad.toml");
        std::fs::write(&bad, "max_turn = 3\n").unwrap();
        let err = Config::load(&bad).unwrap_err().to_string();
        assert!(err.contains("max_turn"), "{err}");
        let good = dir.path().join("good.toml");
        std::fs::write(
            &good,
            "max_turns = 7\ndefault_model = \"scripted:x.json\"\n[secrets]\nenv = [\"GITHUB_TOKEN\"]\n",
        )
        .unwrap();
        let cfg = Config::load(&good).unwrap();
        assert_eq!(cfg.max_turns, 7);
        let secrets = cfg.secret_env_names();
        assert!(secrets.contains(&"GITHUB_TOKEN".to_string()));
        assert!(secrets.contains(&"ANTHROPIC_API_KEY".to_string()));
        assert_eq!(cfg.default_model.as_deref(), Some("scripted:x.json"));
    }

    #[test]
    fn provider_sections_parse_and_errors_never_echo_the_key() {
        let dir = tempfile::tempdir().unwrap();
        let good = dir.path().join("p.toml");
        std::fs::write(
            &good,
            "[anthropic]\napi_key = \"sk-ant-xyz\"\ncache_ttl = \"1h\"\n[retry]\nmax_attempts = 2\n",
        )
        .unwrap();
        let cfg = Config::load(&good).unwrap();
        assert_eq!(cfg.anthropic.cache_ttl, CacheTtl::OneHour);
        assert_eq!(cfg.retry.max_attempts, 2);
        assert!(!format!("{cfg:?}").contains("sk-ant-xyz"));
        let bad = dir.path().join("bad.toml");
        std::fs::write(
            &bad,
            "[anthropic]\napi_key = \"sk-ant-secret\"\ncache_ttl = \"2h\"\n",
        )
        .unwrap();
        let err = Config::load(&bad).unwrap_err().to_string();
        assert!(err.contains("line 3"), "{err}");
        assert!(!err.contains("sk-ant-secret"), "{err}");
    }
}
