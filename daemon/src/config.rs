//! The daemon's configuration: `$XDG_CONFIG_HOME/agentd/config.toml`, all
//! keys optional.

use std::path::Path;
use std::time::Duration;

use serde::Deserialize;

/// Settings read once at start.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// Model used when a request names none, e.g. "anthropic:claude-sonnet-4-5".
    pub default_model: Option<String>,
    /// Model turns an agent may take before it is stopped.
    pub max_turns: u32,
    /// How long shutdown waits for running turns to reach a safe point.
    pub shutdown_grace_secs: u64,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            default_model: None,
            max_turns: 100,
            shutdown_grace_secs: 10,
        }
    }
}

impl Config {
    /// Reads `path`; a missing file means all defaults, a malformed one is an
    /// error naming the file.
    pub fn load(path: &Path) -> anyhow::Result<Config> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Config::default()),
            Err(e) => return Err(anyhow::anyhow!("cannot read {}: {e}", path.display())),
        };
        toml::from_str(&text).map_err(|e| anyhow::anyhow!("invalid config {}: {e}", path.display()))
    }

    pub fn shutdown_grace(&self) -> Duration {
        Duration::from_secs(self.shutdown_grace_secs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
            "max_turns = 7\ndefault_model = \"scripted:x.json\"\n",
        )
        .unwrap();
        let cfg = Config::load(&good).unwrap();
        assert_eq!(cfg.max_turns, 7);
        assert_eq!(cfg.default_model.as_deref(), Some("scripted:x.json"));
    }
}
