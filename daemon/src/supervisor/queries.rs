//! Reading agents: resolving what a user typed, listing, counting, and
//! waiting for an agent to stop.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use super::registry::AgentHandle;
use super::{Supervisor, resolve};
use crate::domain::{AgentId, AgentRecord, Status, now_ms};
use crate::error::AgentdError;

/// Agents that ended longer ago than this are hidden from `list` without `--all`.
const LIST_RECENT_MS: i64 = 24 * 3600 * 1000;

impl Supervisor {
    /// Finds the agent named by a full id, its short id, a unique id
    /// prefix, or a name.
    pub fn resolve(&self, query: &str) -> Result<AgentRecord, AgentdError> {
        resolve::resolve(&self.store, query).map(|r| self.live(r))
    }

    /// Agents oldest first; without `all`, those that ended over a day ago
    /// are left out. `parent`: only that agent's children.
    pub fn list(
        &self,
        all: bool,
        parent: Option<AgentId>,
    ) -> Result<Vec<Arc<AgentRecord>>, AgentdError> {
        let cutoff = now_ms() - LIST_RECENT_MS;
        let records = match parent {
            None => self.store.agents()?,
            Some(p) => {
                let mut children = Vec::new();
                for id in self.store.children_of(p)? {
                    children.extend(self.store.get_agent(id)?.map(Arc::new));
                }
                children.sort_by_key(|r| (r.created_at_ms, r.id));
                children
            }
        };
        let live = self.live_backgrounds();
        Ok(records
            .into_iter()
            .filter(|r| all || !r.status.is_terminal() || r.updated_at_ms >= cutoff)
            .map(|r| match live.get(&r.id) {
                Some(&bg) if r.status.is_live() && bg != r.background => Arc::new(AgentRecord {
                    background: bg,
                    ..(*r).clone()
                }),
                _ => r,
            })
            .collect())
    }

    /// Agent counts by status.
    pub fn counts(&self) -> Result<BTreeMap<Status, u64>, AgentdError> {
        Ok(self.store.count_by_status()?)
    }

    /// Every agent below `id`, parents before children (index lookups).
    pub fn descendants(&self, id: AgentId) -> Result<Vec<AgentRecord>, AgentdError> {
        let mut out = Vec::new();
        let mut frontier = vec![id];
        // A damaged index could link back up: each agent is visited once.
        let mut seen = std::collections::HashSet::from([id]);
        while let Some(parent) = frontier.pop() {
            for child in self.store.children_of(parent)? {
                if !seen.insert(child) {
                    continue;
                }
                if let Some(r) = self.store.get_agent(child)? {
                    frontier.push(r.id);
                    out.push(self.live(r));
                }
            }
        }
        Ok(out)
    }

    /// Waits until the agent is no longer live, then returns it.
    pub async fn wait(&self, query: &str) -> Result<AgentRecord, AgentdError> {
        let record = self.resolve(query)?;
        let handle = self.handle(&record)?;
        self.wait_until_idle(&handle).await?;
        self.reload(&record)
    }

    pub(super) async fn wait_until_idle(&self, handle: &AgentHandle) -> Result<(), AgentdError> {
        let mut status = handle.hub.watch_status();
        tokio::select! {
            r = status.wait_for(|s| !s.status.is_live()) => {
                r.map_err(|_| AgentdError::ShuttingDown("agentd is shutting down".into()))?;
                Ok(())
            }
            _ = self.runs.shutdown_token().cancelled() => {
                Err(AgentdError::ShuttingDown("agentd is shutting down".into()))
            }
        }
    }

    /// `record` as it is now: a running agent's background flag is its
    /// run's (`agent::foreground`, the one owner of it), which the stored
    /// record mirrors only from the run's next write.
    fn live(&self, mut record: AgentRecord) -> AgentRecord {
        if record.status.is_live()
            && let Some(foreground) = self.registry.get(record.id).and_then(|h| h.foreground())
        {
            record.background = foreground.is_background();
        }
        record
    }

    /// The run's background flag of every agent with a run loaded, reading
    /// the registry once (a listing would otherwise lock it per agent).
    fn live_backgrounds(&self) -> HashMap<AgentId, bool> {
        self.registry
            .handles()
            .into_iter()
            .filter_map(|(id, h)| Some((id, h.foreground()?.is_background())))
            .collect()
    }

    pub(super) fn reload(&self, record: &AgentRecord) -> Result<AgentRecord, AgentdError> {
        let id = record.id;
        self.store
            .get_agent(id)?
            .map(|r| self.live(r))
            .ok_or_else(|| AgentdError::NotFound(format!("agent {id} was removed")))
    }
}
