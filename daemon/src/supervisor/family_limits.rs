//! Family limits (DESIGN §24): how many of an agent's descendants run at
//! once (`max_children`), how deep they nest (`max_depth`), how many model
//! requests it and they have in flight (`max_concurrent_requests`).
//!
//! Who holds limits: config.toml's hold for every family, held by its root
//! (a client's agent); an agent type's are kept for the agent made of that
//! type (`store::family_limits`) and hold for it and its descendants. An
//! agent is under every holder among itself and its ancestors at once.
//!
//! A fan-out beyond `max_children` queues: the child is made and waits as
//! `pending` for a slot of each ancestor's gate, root first, before the
//! daemon's own (`agent::run_permit`), and the `Agent` call says so. A
//! foreground parent waiting on its child lends its slots, so a family
//! limit never deadlocks on a waiting parent. Depth cannot queue (a deeper
//! agent never becomes shallower): a call beyond it is refused. Limits that
//! cannot be read count as the tightest (1; depth: refused) — fail closed.

use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::Supervisor;
use super::family_gates::GateKind;
use crate::domain::{AgentId, AgentRecord, FamilyLimits, SHORT_ID_LEN};
use crate::tools::ToolOutput;

/// One agent holding limits over its family, and where they were set.
struct Holder {
    id: AgentId,
    depth: u32,
    limits: FamilyLimits,
    /// "config.toml", or the agent's type.
    source: String,
}

impl Supervisor {
    /// The holders `record` is under: itself and its ancestors that hold
    /// limits, root first (config.toml's with the root).
    fn holders(&self, record: &AgentRecord) -> Vec<Holder> {
        let lineage = self.lineage(record);
        let last = lineage.len() - 1;
        let mut out = Vec::new();
        for (i, id) in lineage.into_iter().enumerate().rev() {
            let depth = record.depth.saturating_sub(i as u32);
            if i == last {
                out.push(Holder {
                    id,
                    depth,
                    limits: self.config().family_limits(),
                    source: "config.toml".into(),
                });
            }
            let limits = match self.store.family_limits(id) {
                Ok(None) => continue,
                Ok(Some(l)) => l,
                Err(e) => {
                    tracing::warn!(agent = %id, error = %e, "family limits unreadable: counted as 1");
                    FamilyLimits {
                        max_children: Some(1),
                        max_depth: Some(0),
                        max_concurrent_requests: Some(1),
                    }
                }
            };
            out.push(Holder {
                id,
                depth,
                limits,
                source: format!("agent {}'s type", id.short_prefix(SHORT_ID_LEN)),
            });
        }
        out
    }

    /// The slots a run of `record` takes before it starts: one of each
    /// ancestor's `max_children` gate, root first, then the daemon's.
    pub(super) fn run_slots(&self, record: &AgentRecord) -> Vec<Arc<Semaphore>> {
        let mut slots: Vec<Arc<Semaphore>> = self
            .holders(record)
            .into_iter()
            .filter(|h| h.id != record.id)
            .filter_map(|h| {
                let n = h.limits.max_children?;
                Some(self.family_gates.gate(h.id, GateKind::Children, n))
            })
            .collect();
        slots.push(self.runs.slots());
        slots
    }

    /// Waits for a request slot of every `max_concurrent_requests` gate
    /// `record` is under; the request is sent while they are held.
    pub(super) async fn request_permits(&self, record: &AgentRecord) -> Vec<OwnedSemaphorePermit> {
        let gates: Vec<Arc<Semaphore>> = self
            .holders(record)
            .into_iter()
            .filter_map(|h| {
                let n = h.limits.max_concurrent_requests?;
                Some(self.family_gates.gate(h.id, GateKind::Requests, n))
            })
            .collect();
        crate::agent::run_permit::acquire_all(&gates).await
    }

    /// Refuses a child of `caller` deeper than a family allows.
    pub(super) fn within_depth(&self, caller: &AgentRecord) -> Result<(), ToolOutput> {
        let depth = caller.depth + 1;
        for h in self.holders(caller) {
            let Some(max) = h.limits.max_depth else {
                continue;
            };
            if depth - h.depth > max {
                return Err(ToolOutput::error(format!(
                    "this family allows agents at most {max} levels below {} (max_depth, from {}), and a child of yours would be {} below; do the work yourself",
                    if h.id == caller.id {
                        "you".to_string()
                    } else {
                        format!("agent {}", h.id.short_prefix(SHORT_ID_LEN))
                    },
                    h.source,
                    depth - h.depth
                )));
            }
        }
        Ok(())
    }

    /// What a new child of `caller` waits for, when a `max_children` it
    /// will be under is already taken up by live descendants (running or
    /// pending): said in the `Agent` call's result.
    pub(super) fn queued_behind(&self, caller: &AgentRecord) -> Option<String> {
        self.holders(caller).into_iter().find_map(|h| {
            let n = h.limits.max_children?;
            let live = self
                .descendants(h.id)
                .ok()?
                .iter()
                .filter(|d| self.handle(d).is_ok_and(|handle| handle.is_running()))
                .count();
            (live >= n as usize).then(|| {
                format!(
                    "Queued: {live} agent(s) of this family already run or wait (max_children = {n}, from {}); it waits as pending and starts when a slot frees.",
                    h.source
                )
            })
        })
    }
}
