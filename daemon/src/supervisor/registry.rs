//! The handle of every loaded agent: its event hub and, while a turn loop
//! runs, that run's controls. Handles of idle agents that nobody holds are
//! swept (`housekeeping`); one is made again on next use.

use crate::agent::turn::compaction::CompactQueue;
use crate::mcp::servers::McpServers;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use crate::agent::events::Lifecycle;

use super::Supervisor;
use crate::agent::events::StatusSnapshot;
use crate::agent::hub::Hub;
use crate::agent::{Foreground, StopSignals};
use crate::domain::{AgentId, AgentRecord};
use crate::error::AgentdError;
use agentd_shared::sync::Unpoisoned as _;

/// Controls of a running turn loop.
pub(super) struct RunControl {
    pub(super) stops: StopSignals,
    /// Drops the loop outright (only after the shutdown grace period).
    pub(super) kill: CancellationToken,
    /// The run's foreground state: who learns how it ends.
    pub(super) foreground: Arc<Foreground>,
    /// Compactions asked of it, done at its next turn boundary; None for
    /// an external agent's run, which manages its own context.
    pub(super) compaction: Option<Arc<CompactQueue>>,
    /// Its MCP servers' sessions (`mcp restart` ends them).
    pub(super) mcp: Arc<McpServers>,
}

/// The supervisor's view of one agent.
pub struct AgentHandle {
    pub hub: Arc<Hub>,
    run: Mutex<Option<RunControl>>,
    /// Held while the agent's idle record is read and rewritten to start a
    /// run (revive) or to end it (cancel of an idle agent): one of them
    /// sees the other's result, never a stale copy.
    pub(super) transition: tokio::sync::Mutex<()>,
    /// An external agent's process between runs (DESIGN §19); ended when
    /// the handle goes (the agent removed).
    pub(super) external: Arc<crate::agent::external::live::ParkedProcess>,
    /// The compaction concurrent `CompactAgent` calls share.
    pub(super) compact_once: super::compact_once::CompactOnce,
}

impl AgentHandle {
    pub(super) fn run(&self) -> MutexGuard<'_, Option<RunControl>> {
        self.run.locked()
    }

    /// True while a turn loop runs (or waits for a slot) for this agent.
    pub fn is_running(&self) -> bool {
        self.run().is_some()
    }

    pub(super) fn foreground(&self) -> Option<Arc<Foreground>> {
        self.run().as_ref().map(|c| c.foreground.clone())
    }
}

/// Every loaded agent's handle, and the daemon-wide lifecycle stream their
/// hubs publish to (`Watch`).
pub(super) struct Registry {
    handles: Mutex<HashMap<AgentId, Arc<AgentHandle>>>,
    lifecycle: broadcast::Sender<Lifecycle>,
}

impl Default for Registry {
    fn default() -> Registry {
        Registry {
            handles: Mutex::new(HashMap::new()),
            lifecycle: broadcast::channel(4096).0,
        }
    }
}

impl Registry {
    /// Publishes a lifecycle event to every watcher.
    pub(super) fn publish(&self, event: Lifecycle) {
        let _ = self.lifecycle.send(event);
    }

    /// A new watcher of the lifecycle stream.
    pub(super) fn watch(&self) -> broadcast::Receiver<Lifecycle> {
        self.lifecycle.subscribe()
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<AgentId, Arc<AgentHandle>>> {
        self.handles.locked()
    }

    pub(super) fn get(&self, id: AgentId) -> Option<Arc<AgentHandle>> {
        self.lock().get(&id).cloned()
    }

    /// Every handle, taken under one short lock.
    pub(super) fn handles(&self) -> Vec<(AgentId, Arc<AgentHandle>)> {
        self.lock().iter().map(|(id, h)| (*id, h.clone())).collect()
    }

    pub(super) fn remove(&self, id: AgentId) {
        self.lock().remove(&id);
    }

    /// Drops the handles of agents with no loop and nobody holding them
    /// (no attacher, no waiter). Returns how many remain.
    pub(super) fn sweep_idle(&self) -> usize {
        let mut handles = self.lock();
        let before = handles.len();
        handles.retain(|_, h| Arc::strong_count(h) > 1 || h.is_running());
        if handles.len() < before {
            crate::memory::note_freed();
        }
        handles.len()
    }

    /// Drops every running loop at once; returns how many.
    pub(super) fn kill_all(&self) -> usize {
        let handles: Vec<_> = self.lock().values().cloned().collect();
        let mut killed = 0;
        for handle in handles {
            if let Some(control) = handle.run().as_ref() {
                control.kill.cancel();
                killed += 1;
            }
        }
        killed
    }
}

impl Supervisor {
    /// The handle of `record`'s agent, created on first use.
    pub fn handle(&self, record: &AgentRecord) -> Result<Arc<AgentHandle>, AgentdError> {
        if let Some(h) = self.registry.get(record.id) {
            return Ok(h);
        }
        // No handle means no turn loop, hence no writer: the length read
        // here cannot go stale before the handle is inserted.
        let next_seq = match self.store.transcript_len(record.id) {
            Ok(n) => n,
            // sled repeats a stored ENOSPC even on reads until the store
            // is reopened; the caller's record has the length (it was just
            // read or just written). Failing here failed a CreateAgent
            // whose agent was already on disk (found by the torture run).
            Err(e) if e.is_disk_full() => record.transcript_len,
            Err(e) => return Err(e.into()),
        };
        let handle = Arc::new(AgentHandle {
            hub: Arc::new(Hub::new(
                record.id,
                record.short_id.clone(),
                next_seq,
                StatusSnapshot::of(record),
                record.plan.clone(),
                self.registry.lifecycle.clone(),
            )),
            run: Mutex::new(None),
            transition: tokio::sync::Mutex::new(()),
            external: Arc::default(),
            compact_once: Default::default(),
        });
        Ok(self
            .registry
            .lock()
            .entry(record.id)
            .or_insert(handle)
            .clone())
    }
}
