//! What the supervisor is configured with: the configuration and price
//! table in force (replaced whole by a reload: readers take the current
//! one), and what was fixed at start — provider settings, what every tool
//! process's environment lacks and carries, where the daemon serves.

use std::sync::{Arc, RwLock};
use std::time::Instant;

use crate::config::Config;
use crate::model::ModelSettings;
use crate::pricing::PriceTable;
use crate::tools::ToolEnv;

use super::DaemonInfo;
use agentd_shared::sync::UnpoisonedRw as _;

pub(super) struct Settings {
    config: RwLock<Arc<Config>>,
    prices: RwLock<Arc<PriceTable>>,
    models: ModelSettings,
    tool_env: Arc<ToolEnv>,
    info: DaemonInfo,
    started: Instant,
}

impl Settings {
    pub(super) fn new(
        config: Config,
        models: ModelSettings,
        info: DaemonInfo,
        tool_env: ToolEnv,
    ) -> Settings {
        Settings {
            prices: RwLock::new(Arc::new(PriceTable::new(
                &config.prices,
                config.anthropic.cache_ttl,
            ))),
            config: RwLock::new(Arc::new(config)),
            models,
            tool_env: Arc::new(tool_env),
            info,
            started: Instant::now(),
        }
    }

    /// The configuration in force now.
    pub(super) fn config(&self) -> Arc<Config> {
        self.config.read_locked().clone()
    }

    /// The price table in force now.
    pub(super) fn prices(&self) -> Arc<PriceTable> {
        self.prices.read_locked().clone()
    }

    /// Puts a reloaded configuration (and its prices) in force.
    pub(super) fn replace(&self, config: Config) {
        let prices = PriceTable::new(&config.prices, config.anthropic.cache_ttl);
        *self.prices.write_locked() = Arc::new(prices);
        *self.config.write_locked() = Arc::new(config);
    }

    pub(super) fn models(&self) -> &ModelSettings {
        &self.models
    }

    pub(super) fn tool_env(&self) -> &Arc<ToolEnv> {
        &self.tool_env
    }

    pub(super) fn info(&self) -> &DaemonInfo {
        &self.info
    }

    pub(super) fn uptime(&self) -> std::time::Duration {
        self.started.elapsed()
    }
}
