//! The supervisor owns the live agents. Each concern has its file:
//!
//! - `registry`: the handle of every loaded agent (its event hub and, while
//!   a turn loop runs, that run's controls)
//! - `admission`: the checks every new agent passes; `create`: building
//!   and storing a new agent
//! - `run`: starting a turn loop, recording how it ended, reviving an agent
//! - `release`: moving a foreground run to the background (the race itself
//!   is decided in `agent::foreground`)
//! - `notification`: the task notification a parent gets, written with the
//!   child's end (exactly once: see `store::inbox`)
//! - `control`: send, pause, cancel, remove
//! - `children`: the `Agent` tool; `family`: the tools that reach the
//!   family (`SendMessage`, `ListAgents`, `TaskStop`) and the message rule;
//!   `host`: what turn loops may ask of us
//! - `asks`: open permission asks and who may answer them
//! - `queries`, `resolve`: reading agents, finding one by id, prefix or name
//! - `recovery`: what happens after a crash or restart
//! - `housekeeping`: timers (idle handles, healing after a full disk)
//! - `fork`: forking an agent, and `fanout`: forks launched together
//! - `settings`, `run_tasks`, `tree_keeping`: the configuration in force; run
//!   slots, tasks and shutdown; who may touch worktrees — each its own
//!   state behind a narrow interface, composed by `Supervisor`
//! - `usage`: what agents cost
//! - `mcp_sources`: which MCP servers an agent gets, and the approval of a
//!   repository's; `mcp`: listing their tools into a new agent
//! - `worktrees`: agents' git worktrees through their lives, and
//!   `worktree_admin`: listing, pruning, diff, merge and `rm` of trees

mod admission;
mod asks;
mod budgets;
mod checkpoints;
mod children;
mod compact_once;
mod compaction;
mod control;
mod create;
mod egress;
mod external_agents;
mod family;
mod family_gates;
mod family_limits;
mod fanout;
mod fork;
mod host;
mod housekeeping;
mod mcp;
mod mcp_approvals;
mod mcp_sources;
mod moved_checkouts;
mod network_queries;
mod notification;
mod quarantine;
mod queries;
mod recovery;
mod registry;
mod release;
mod reload;
mod remembered_rules;
mod resolve;
mod rule_approvals;
mod rules;
mod run;
mod run_tasks;
mod settings;
#[cfg(test)]
mod tests;
mod tree_keeping;
mod usage;
mod worktree_admin;
mod worktrees;

use std::path::PathBuf;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::agent::events::Lifecycle;
use crate::config::Config;
use crate::domain::AgentRecord;
use crate::model::ModelSettings;
use crate::pricing::PriceTable;
use crate::store::Store;
use crate::tools::ToolEnv;

pub use admission::MAX_PROMPT_BYTES;
pub use checkpoints::{RewindScope, Rewound, TurnCheckpoint};
pub use control::MAX_MESSAGE_BYTES;
pub use create::NewAgent;
pub use fork::ForkRequest;
pub use mcp::{McpListing, McpReport, ReportState};
pub use mcp_approvals::{ApprovedServer, McpSelection};
pub use mcp_sources::McpOrigin;
pub use registry::AgentHandle;
pub use reload::ReloadReport;
pub use rule_approvals::{ApprovedRule, RuleSelection};
pub use rules::{ListedHook, ListedRule, RuleApproval, RuleSet};
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

/// The supervisor: each concern a type with its own state, composed here.
pub struct Supervisor {
    /// Every byte on disk.
    store: Store,
    /// The configuration and prices in force, and what was fixed at start.
    settings: settings::Settings,
    /// Every loaded agent's handle, and the lifecycle stream.
    registry: registry::Registry,
    /// Run slots, the tasks runs are, shutdown.
    runs: run_tasks::Runs,
    /// Who may touch worktrees, and trees being made.
    trees: tree_keeping::TreeKeeping,
    /// Open permission asks and who may answer them.
    asks: asks::Asks,
    /// Forks launched together, until the first one's response starts.
    fan_outs: fanout::FanOuts,
    /// The MCP servers running agents share.
    mcp_pool: Arc<crate::mcp::pool::McpPool>,
    /// The proxy connections being served now.
    open_connections: egress::OpenConnections,
    /// The gates family limits are held with (DESIGN §24).
    family_gates: family_gates::FamilyGates,
}

impl Supervisor {
    pub fn new(
        store: Store,
        config: Config,
        models: ModelSettings,
        info: DaemonInfo,
    ) -> Arc<Supervisor> {
        let protected: Vec<PathBuf> = [
            Some(info.data_dir.clone()),
            info.socket.parent().map(PathBuf::from),
            Some(crate::sandbox::tmp_root()),
            Some(agentd_shared::paths::config_dir()),
        ]
        .into_iter()
        .flatten()
        .map(|p| p.canonicalize().unwrap_or(p))
        .collect();
        let read_denials = crate::sandbox::ReadDenials::new(
            &agentd_shared::paths::home_dir(),
            &protected,
            &config.sandbox.deny_read,
            &config.sandbox.allow_read,
        );
        let tool_env = ToolEnv {
            secrets: config.secret_env_names(),
            marker: Some((
                crate::process::reap::MARKER_VAR.to_string(),
                store.instance_id().to_string(),
            )),
            protected,
            read_denials,
        };
        Arc::new(Supervisor {
            store,
            runs: run_tasks::Runs::new(config.max_running_agents),
            settings: settings::Settings::new(config, models, info, tool_env),
            registry: registry::Registry::default(),
            trees: tree_keeping::TreeKeeping::default(),
            asks: asks::Asks::default(),
            open_connections: egress::OpenConnections::default(),
            family_gates: family_gates::FamilyGates::default(),
            fan_outs: fanout::FanOuts::default(),
            mcp_pool: Arc::default(),
        })
    }

    /// What confined processes may not read (fixed at start).
    pub fn read_denials(&self) -> &crate::sandbox::ReadDenials {
        &self.settings.tool_env().read_denials
    }

    /// The configuration in force now.
    pub fn config(&self) -> Arc<Config> {
        self.settings.config()
    }

    /// The price table in force now.
    pub fn prices(&self) -> Arc<PriceTable> {
        self.settings.prices()
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    pub fn info(&self) -> &DaemonInfo {
        self.settings.info()
    }

    pub fn uptime(&self) -> std::time::Duration {
        self.settings.uptime()
    }

    /// The daemon-wide lifecycle stream (`Watch`).
    pub fn watch(&self) -> tokio::sync::broadcast::Receiver<Lifecycle> {
        self.registry.watch()
    }

    /// Cancelled when the daemon begins to shut down; long-lived streams end.
    pub fn shutdown_token(&self) -> CancellationToken {
        self.runs.shutdown_token().clone()
    }

    /// Stops every agent: running turns get the grace period to reach a
    /// safe point (they then stop as `interrupted`); loops still running
    /// after that are dropped and their agents marked `interrupted`.
    /// Flushes the store.
    pub async fn shutdown(&self) {
        self.runs.begin_shutdown();
        let grace = self.config().shutdown_grace();
        if tokio::time::timeout(grace, self.runs.all_ended())
            .await
            .is_err()
        {
            let killed = self.registry.kill_all();
            tracing::warn!(
                killed,
                ?grace,
                "turns did not reach a safe point in time; stopping them"
            );
            self.runs.all_ended().await;
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
