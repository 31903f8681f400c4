//! Who decides an agent's proxy connections, and where they are recorded
//! (DESIGN §22). A connection is allowed when its host matches, in order:
//! the built-in list, config.toml's `[network] allow` (read at each
//! connection, so a reload takes effect), the agent's own list (its run's
//! `--allow-host`, its type's `network_allow`, an external agent's API
//! hosts), or a host answered "always" (for this agent, or for every
//! agent). Anything else is asked like a tool call — except in `bypass`
//! mode, which never widens the network: refused, with the line to add.
//! Every decision is written to the store before the proxy acts on it;
//! one that cannot be written is a refusal.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use super::Supervisor;
use crate::agent::permission::Answer;
use crate::domain::{
    AgentId, AgentRecord, ConnectionDecision, ConnectionRecord, HostPattern, NetTarget,
    PermissionMode, ShortId, now_ms,
};
use crate::network::{BoxFuture, Egress, built_in};
use agentd_shared::sync::Unpoisoned as _;

/// The connections proxies are serving now (so `ListConnections` can
/// tell an open one from one the daemon's stop cut off).
#[derive(Default)]
pub(super) struct OpenConnections(Mutex<HashSet<(AgentId, u64)>>);

impl OpenConnections {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashSet<(AgentId, u64)>> {
        self.0.locked()
    }

    pub(super) fn is_open(&self, agent: AgentId, seq: u64) -> bool {
        self.lock().contains(&(agent, seq))
    }
}

/// One run's egress.
struct AgentEgress {
    sup: Arc<Supervisor>,
    agent: AgentId,
    short: ShortId,
    /// The record as the run started (its family, for asks), read again
    /// at each decision for its permission mode.
    record: AgentRecord,
    /// Allowed besides the record's list, and why (an external agent's
    /// API hosts).
    extra: Vec<(HostPattern, String)>,
    /// Asks may be opened (not for a server several agents share).
    may_ask: bool,
    next_seq: AtomicU64,
}

impl Supervisor {
    /// The egress of a run of `record`: `extra` hosts allowed besides its
    /// own list; `may_ask` false refuses what no rule allows.
    pub(super) fn egress_for(
        self: &Arc<Self>,
        record: &AgentRecord,
        extra: Vec<(HostPattern, String)>,
        may_ask: bool,
    ) -> Arc<dyn Egress> {
        let next = self.store.next_connection_seq(record.id).unwrap_or(0);
        Arc::new(AgentEgress {
            sup: self.clone(),
            agent: record.id,
            short: record.short_id.clone(),
            record: record.clone(),
            extra,
            may_ask,
            next_seq: AtomicU64::new(next),
        })
    }

    /// What allows `target` without asking, in words; None: nothing.
    fn allowed_by(
        &self,
        record: &AgentRecord,
        extra: &[(HostPattern, String)],
        target: &NetTarget,
    ) -> Option<String> {
        if let Some(purpose) = built_in::allows(target) {
            return Some(format!("built-in ({purpose})"));
        }
        if self
            .config()
            .network
            .allow
            .iter()
            .any(|p| p.matches(target))
        {
            return Some("config.toml [network] allow".to_string());
        }
        if record.network_allow.iter().any(|p| p.matches(target)) {
            return Some("this agent's allow list (--allow-host, its type)".to_string());
        }
        if let Some((_, why)) = extra.iter().find(|(p, _)| p.matches(target)) {
            return Some(why.clone());
        }
        let answered = |agent| {
            self.store
                .network_allowed(agent)
                .unwrap_or_default()
                .iter()
                .any(|p| p.matches(target))
        };
        if answered(Some(record.id)) {
            return Some("answered: always for this agent".to_string());
        }
        if answered(None) {
            return Some("answered: allow for every agent".to_string());
        }
        None
    }

    /// Publishes a connection to the attachers of the agent and its
    /// ancestors.
    fn publish_connection(&self, record: &AgentRecord, c: &ConnectionRecord) {
        let c = Arc::new(c.clone());
        for id in self.lineage(record) {
            if let Some(h) = self.registry.get(id) {
                h.hub.publish_connection(c.clone(), record.short_id.clone());
            }
        }
    }
}

/// Withdraws an ask nobody answered when the proxy stops waiting.
struct AskGuard<'a> {
    sup: &'a Supervisor,
    request_id: Option<String>,
}

impl Drop for AskGuard<'_> {
    fn drop(&mut self) {
        if let Some(id) = self.request_id.take() {
            self.sup.close_ask(&id);
        }
    }
}

impl AgentEgress {
    async fn decide(&self, target: &NetTarget) -> (ConnectionDecision, String) {
        let sup = &self.sup;
        let current = match sup.store.get_agent(self.agent) {
            Ok(Some(r)) => r,
            _ => self.record.clone(),
        };
        if let Some(why) = sup.allowed_by(&current, &self.extra, target) {
            return (ConnectionDecision::Allowed, why);
        }
        let add = format!(
            "add \"{}\" to [network] allow in config.toml, or pass --allow-host {} to agentctl run",
            HostPattern::exact(target),
            HostPattern::exact(target)
        );
        if current.permission_mode == PermissionMode::Bypass {
            return (
                ConnectionDecision::Refused,
                format!("not in the allow list, and bypass mode never widens the network: {add}"),
            );
        }
        if !self.may_ask {
            return (
                ConnectionDecision::Refused,
                format!(
                    "not in the allow list (a server shared by several agents is not asked about): {add}"
                ),
            );
        }
        let (ask, rx) = sup.open_network_ask(&self.record, target);
        let mut guard = AskGuard {
            sup,
            request_id: Some(ask.request_id.clone()),
        };
        let answer = rx.await;
        guard.request_id = None;
        match answer {
            Ok(Answer::AllowOnce) => (ConnectionDecision::Allowed, "answered: allow once".into()),
            Ok(Answer::AllowAlways) => {
                self.keep(Some(self.agent), target, "always for this agent")
                    .await
            }
            Ok(Answer::AllowEveryAgent) => self.keep(None, target, "allow for every agent").await,
            Ok(Answer::Deny(reason)) if reason.trim().is_empty() => {
                (ConnectionDecision::Refused, "answered: no".into())
            }
            Ok(Answer::Deny(reason)) => (
                ConnectionDecision::Refused,
                format!("answered: no ({})", crate::error::quote(reason.trim())),
            ),
            Err(_) => (
                ConnectionDecision::Refused,
                "the ask was closed unanswered".into(),
            ),
        }
    }

    /// Keeps an "always" answer; allowed either way (it was answered yes),
    /// the reason saying when it could not be kept.
    async fn keep(
        &self,
        agent: Option<AgentId>,
        target: &NetTarget,
        what: &str,
    ) -> (ConnectionDecision, String) {
        match self
            .sup
            .store
            .allow_network_durable(agent, &HostPattern::exact(target))
            .await
        {
            Ok(()) => (ConnectionDecision::Allowed, format!("answered: {what}")),
            Err(e) => (
                ConnectionDecision::Allowed,
                format!("answered: {what} (not kept: {e}; allowed this once)"),
            ),
        }
    }

    async fn write(&self, c: &mut ConnectionRecord) {
        if let Err(e) = self.sup.store.record_connection_durable(c).await {
            tracing::warn!(agent = %self.agent, error = %e, "a proxy connection could not be recorded");
            if c.ended_at_ms.is_none() {
                c.decision = ConnectionDecision::Refused;
                c.reason = format!("agentd could not record it, so it is refused: {e}");
            }
            return;
        }
        self.sup.publish_connection(&self.record, c);
    }
}

impl Egress for AgentEgress {
    fn open<'a>(
        &'a self,
        target: &'a NetTarget,
        method: &'a str,
    ) -> BoxFuture<'a, ConnectionRecord> {
        Box::pin(async move {
            let started_at_ms = now_ms();
            let (decision, reason) = self.decide(target).await;
            let mut c = ConnectionRecord {
                seq: self.next_seq.fetch_add(1, Ordering::Relaxed),
                agent: self.agent,
                target: target.clone(),
                method: method.to_string(),
                decision,
                reason,
                bytes_sent: 0,
                bytes_received: 0,
                started_at_ms,
                ended_at_ms: None,
                error: None,
            };
            if decision == ConnectionDecision::Allowed {
                self.sup.open_connections.lock().insert((self.agent, c.seq));
            }
            self.write(&mut c).await;
            if c.decision == ConnectionDecision::Refused {
                self.sup
                    .open_connections
                    .lock()
                    .remove(&(self.agent, c.seq));
            }
            tracing::info!(agent = %self.short, target = %target, decision = ?c.decision, reason = %c.reason, "proxy connection");
            c
        })
    }

    fn close(&self, mut record: ConnectionRecord) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            if record.ended_at_ms.is_none() {
                record.ended_at_ms = Some(now_ms());
            }
            self.write(&mut record).await;
            self.sup
                .open_connections
                .lock()
                .remove(&(self.agent, record.seq));
        })
    }
}
