//! The supervisor owns the live agents. Each concern has its file:
//!
//! - `registry`: the handle of every loaded agent (its event hub and, while
//!   a turn loop runs, that run's controls)
//! - `create`: validating and storing a new agent
//! - `run`: starting a turn loop, recording how it ended, reviving an agent
//! - `release`: moving a foreground run to the background (the race itself
//!   is decided in `agent::foreground`)
//! - `notification`: the task notification a parent gets, written with the
//!   child's end (exactly once: see `store::inbox`)
//! - `control`: send, pause, cancel, remove
//! - `children`: the tools that reach other agents (`Agent`, `SendMessage`,
//!   `ListAgents`, `TaskStop`), and `host`: what turn loops may ask of us
//! - `asks`: open permission asks and who may answer them
//! - `queries`, `resolve`: reading agents, finding one by id, prefix or name
//! - `recovery`: what happens after a crash or restart
//! - `housekeeping`: timers (idle handles, healing after a full disk)
//! - `fork`: forking an agent, and `fanout`: forks launched together
//! - `usage`: what agents cost
//! - `worktrees`: agents' git worktrees through their lives, and
//!   `worktree_admin`: listing, pruning, diff, merge and `rm` of trees

mod asks;
mod children;
mod control;
mod create;
mod fanout;
mod fork;
mod host;
mod housekeeping;
mod moved_checkouts;
mod notification;
mod queries;
mod recovery;
mod registry;
mod release;
mod reload;
mod resolve;
mod run;
#[cfg(test)]
mod tests;
mod usage;
mod worktree_admin;
mod worktrees;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use tokio::sync::{Semaphore, broadcast};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::agent::lifecycle::Lifecycle;
use crate::config::Config;
use crate::domain::AgentRecord;
use crate::model::ModelSettings;
use crate::pricing::PriceTable;
use crate::store::Store;
use crate::tools::ToolEnv;

pub use control::MAX_MESSAGE_BYTES;
pub use create::{MAX_PROMPT_BYTES, NewAgent};
pub use fork::ForkRequest;
pub use registry::AgentHandle;
pub use reload::ReloadReport;
pub use usage::{AgentUsage, UsageReport};
pub use worktree_admin::{RemovedTree, WorktreeReport};

/// Where the daemon serves, for `status`.
#[derive(Debug, Clone)]
pub struct DaemonInfo {
    pub socket: PathBuf,
    pub data_dir: PathBuf,
    /// The config file, read again on reload.
    pub config_path: PathBuf,
    /// The listener came from the service manager (socket activation).
    pub socket_activated: bool,
}

pub struct Supervisor {
    store: Store,
    /// Replaced whole by a reload (SIGHUP); readers take the current one.
    config: std::sync::RwLock<Arc<Config>>,
    models: ModelSettings,
    info: DaemonInfo,
    started: Instant,
    registry: registry::Registry,
    shutdown: CancellationToken,
    tasks: TaskTracker,
    /// Agents running at once; beyond it they wait as `pending`, in order.
    slots: Arc<Semaphore>,
    /// What `slots` holds in all, so a reload can grow or shrink it.
    slot_limit: std::sync::Mutex<u32>,
    lifecycle: broadcast::Sender<Lifecycle>,
    asks: asks::Asks,
    /// What every tool process's environment lacks and carries.
    tool_env: Arc<ToolEnv>,
    /// Agents a full disk kept from resuming at start: resumed once the
    /// store is writable again (`housekeeping`).
    resume_later: std::sync::Mutex<Vec<crate::domain::AgentId>>,
    /// Forks launched together, until the first one's response starts.
    fan_outs: fanout::FanOuts,
    prices: std::sync::RwLock<Arc<PriceTable>>,
    /// Held by every settlement, removal and merge of a worktree, so two
    /// never race on one tree.
    worktree_lock: tokio::sync::Mutex<()>,
    /// Trees being made for agents not stored yet: never orphans.
    making: std::sync::Mutex<std::collections::HashSet<String>>,
}

impl Supervisor {
    pub fn new(
        store: Store,
        config: Config,
        models: ModelSettings,
        info: DaemonInfo,
    ) -> Arc<Supervisor> {
        let slots = Arc::new(Semaphore::new(config.max_running_agents.max(1) as usize));
        let tool_env = Arc::new(ToolEnv {
            secrets: config.secret_env_names(),
            marker: Some((
                crate::tools::reap::MARKER_VAR.to_string(),
                store.instance_id().to_string(),
            )),
            protected: [
                Some(info.data_dir.clone()),
                info.socket.parent().map(PathBuf::from),
                Some(crate::sandbox::tmp_root()),
                Some(agentd_shared::paths::config_dir()),
            ]
            .into_iter()
            .flatten()
            .map(|p| p.canonicalize().unwrap_or(p))
            .collect(),
        });
        Arc::new(Supervisor {
            store,
            models,
            info,
            started: Instant::now(),
            registry: registry::Registry::default(),
            shutdown: CancellationToken::new(),
            tasks: TaskTracker::new(),
            slots,
            lifecycle: broadcast::channel(4096).0,
            asks: asks::Asks::default(),
            tool_env,
            resume_later: std::sync::Mutex::new(Vec::new()),
            fan_outs: fanout::FanOuts::default(),
            prices: std::sync::RwLock::new(Arc::new(PriceTable::new(
                &config.prices,
                config.anthropic.cache_ttl,
            ))),
            slot_limit: std::sync::Mutex::new(config.max_running_agents.max(1)),
            worktree_lock: tokio::sync::Mutex::new(()),
            making: std::sync::Mutex::new(std::collections::HashSet::new()),
            config: std::sync::RwLock::new(Arc::new(config)),
        })
    }

    /// The configuration in force now.
    pub fn config(&self) -> Arc<Config> {
        self.config
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// The price table in force now.
    pub fn prices(&self) -> Arc<PriceTable> {
        self.prices
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    pub fn info(&self) -> &DaemonInfo {
        &self.info
    }

    pub fn uptime(&self) -> std::time::Duration {
        self.started.elapsed()
    }

    /// The daemon-wide lifecycle stream (`Watch`).
    pub fn watch(&self) -> broadcast::Receiver<Lifecycle> {
        self.lifecycle.subscribe()
    }

    /// Cancelled when the daemon begins to shut down; long-lived streams end.
    pub fn shutdown_token(&self) -> CancellationToken {
        self.shutdown.clone()
    }

    /// Stops every agent: running turns get the grace period to reach a
    /// safe point (they then stop as `interrupted`); loops still running
    /// after that are dropped and their agents marked `interrupted`.
    /// Flushes the store.
    pub async fn shutdown(&self) {
        self.shutdown.cancel();
        self.tasks.close();
        let grace = self.config().shutdown_grace();
        if tokio::time::timeout(grace, self.tasks.wait())
            .await
            .is_err()
        {
            let killed = self.registry.kill_all();
            tracing::warn!(
                killed,
                ?grace,
                "turns did not reach a safe point in time; stopping them"
            );
            self.tasks.wait().await;
            if let Err(e) = self.mark_interrupted().await {
                tracing::error!(error = %e, "could not mark stopped agents interrupted");
            }
        }
        match self.store.flush().await {
            Ok(()) => {}
            Err(e) if e.is_disk_full() => tracing::warn!(
                deferred = self.store.deferred_count(),
                "the disk is full: status changes not yet written are lost, and those agents resume from their transcripts on the next start"
            ),
            Err(e) => tracing::error!(error = %e, "final store flush failed"),
        }
    }
}

/// The short id of a record, for messages.
fn short(record: &AgentRecord) -> String {
    record.short_id.to_string()
}
