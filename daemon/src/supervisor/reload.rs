//! Re-reading config.toml while agents run (SIGHUP, `ReloadConfig`).
//! What the supervisor reads when it needs it — limits, defaults for new
//! agents, the sandbox, prices — changes at once; what was built into
//! long-lived parts at start (provider connections, the store, the tools'
//! secret list) waits for a restart, and the report says which is which.

use std::path::Path;

use crate::config::entries::{Entry, entries};
use crate::config::{Config, ConfigError};

use super::Supervisor;

/// What a reload changed.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct ReloadReport {
    /// Keys whose new value is in force now.
    pub applied: Vec<String>,
    /// Keys whose new value waits for a restart (the old one stays).
    pub needs_restart: Vec<String>,
}

/// The keys whose value differs between two configurations.
fn changed(old: &[Entry], new: &[Entry]) -> Vec<(String, bool)> {
    let mut keys: Vec<(String, bool)> = Vec::new();
    for e in new {
        if old.iter().find(|o| o.key == e.key).map(|o| &o.value) != Some(&e.value) {
            keys.push((e.key.clone(), e.reloadable));
        }
    }
    for o in old {
        if !new.iter().any(|e| e.key == o.key) {
            keys.push((o.key.clone(), o.reloadable));
        }
    }
    keys
}

impl Supervisor {
    /// Reads `path` again and puts what it can in force. An invalid file
    /// changes nothing and is the error.
    pub fn reload_config(&self, path: &Path) -> Result<ReloadReport, ConfigError> {
        let mut new = Config::load(path)?;
        let old = self.config();
        // The environment the daemon started with still decides; the
        // secrets in it are gone from the process by now.
        new.env_set = old.env_set.clone();
        let mut report = ReloadReport::default();
        for (key, reloadable) in changed(&entries(&old), &entries(&new)) {
            if reloadable {
                report.applied.push(key);
            } else {
                // Keeps its old value and source, so that what `config`
                // shows is what is in force.
                if old.file_keys.contains(&key) {
                    new.file_keys.insert(key.clone());
                } else {
                    new.file_keys.remove(&key);
                }
                report.needs_restart.push(key);
            }
        }
        new.stream_idle_timeout_secs = old.stream_idle_timeout_secs;
        new.store_min_free_mb = old.store_min_free_mb;
        new.anthropic = old.anthropic.clone();
        new.openai = old.openai.clone();
        new.retry = old.retry;
        new.secrets = old.secrets.clone();
        self.runs.resize(new.max_running_agents);
        self.settings.replace(new);
        Ok(report)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_changed_key_is_reported_once_with_its_kind() {
        let old = Config::default();
        let new = Config {
            max_turns: 7,
            store_min_free_mb: 1,
            ..Config::default()
        };
        let keys = changed(&entries(&old), &entries(&new));
        assert_eq!(
            keys,
            vec![
                ("max_turns".to_string(), true),
                ("store_min_free_mb".to_string(), false)
            ]
        );
        assert!(changed(&entries(&old), &entries(&old)).is_empty());
    }
}
