//! Open permission asks (DESIGN §8): an ask goes to every client attached
//! to the asking agent or to any of its ancestors, and to the watch stream;
//! the first answer wins. With nobody attached the agent waits as `waiting`
//! — `list` shows what it waits for — until someone attaches and answers.
//! What each mode asks about is the agent's (`agent::permission`).

use std::collections::HashMap;
use std::sync::Mutex;

use tokio::sync::oneshot;
use uuid::Uuid;

use super::Supervisor;
use crate::agent::events::{Lifecycle, LifecycleKind};
use crate::agent::permission::{Answer, PermissionAsk};
use crate::domain::{AgentId, AgentRecord, ToolRef, now_ms};
use crate::error::{AgentdError, quote};
use agentd_shared::sync::Unpoisoned as _;

struct Open {
    ask: PermissionAsk,
    /// The asking agent and its ancestors: whose attachers see the ask.
    audience: Vec<AgentId>,
    tx: Option<oneshot::Sender<Answer>>,
}

#[derive(Default)]
pub(super) struct Asks {
    open: Mutex<HashMap<String, Open>>,
}

impl Asks {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Open>> {
        self.open.locked()
    }
}

impl Supervisor {
    /// The agent and its ancestors, nearest first.
    pub(super) fn lineage(&self, record: &AgentRecord) -> Vec<AgentId> {
        let mut out = vec![record.id];
        let mut parent = record.parent;
        while let Some(id) = parent {
            if out.contains(&id) {
                break;
            }
            out.push(id);
            parent = match self.store.get_agent(id) {
                Ok(Some(p)) => p.parent,
                _ => None,
            };
        }
        out
    }

    /// Opens an ask and publishes it to the agent's and its ancestors'
    /// attachers (and the watch stream). Returns the receiver of the answer.
    pub(super) fn open_ask(
        &self,
        record: &AgentRecord,
        tool: ToolRef,
        input: &serde_json::Value,
        tool_use_id: &str,
    ) -> (PermissionAsk, oneshot::Receiver<Answer>) {
        let home = std::env::var_os("HOME")
            .map(std::path::PathBuf::from)
            .unwrap_or_default();
        let call = agentd_rules::Call {
            tool: tool.as_str(),
            input,
            cwd: &record.cwd,
            home: &home,
        };
        let remember = agentd_rules::remember::rules_for(&call, &self.remembered_rules_dir());
        let ask = PermissionAsk {
            request_id: Uuid::now_v7().to_string(),
            tool_use_id: tool_use_id.to_string(),
            agent: record.id,
            agent_short: record.short_id.clone(),
            summary: crate::tools::summarize(tool.as_str(), input),
            tool,
            input_json: input.to_string(),
            remember,
        };
        let rx = self.publish_ask(record, ask.clone());
        (ask, rx)
    }

    /// Opens an ask whether `record`'s agent may reach `target` through
    /// its network proxy (DESIGN §22): asked like a tool call, its tool
    /// `Network`, its summary the host and port.
    pub(super) fn open_network_ask(
        &self,
        record: &AgentRecord,
        target: &crate::domain::NetTarget,
    ) -> (PermissionAsk, oneshot::Receiver<Answer>) {
        let input = serde_json::json!({"host": target.host(), "port": target.port()});
        let ask = PermissionAsk {
            request_id: Uuid::now_v7().to_string(),
            tool_use_id: String::new(),
            agent: record.id,
            agent_short: record.short_id.clone(),
            summary: target.to_string(),
            tool: ToolRef::Network,
            input_json: input.to_string(),
            remember: Vec::new(),
        };
        let rx = self.publish_ask(record, ask.clone());
        (ask, rx)
    }

    fn publish_ask(&self, record: &AgentRecord, ask: PermissionAsk) -> oneshot::Receiver<Answer> {
        let audience = self.lineage(record);
        let (tx, rx) = oneshot::channel();
        self.asks.lock().insert(
            ask.request_id.clone(),
            Open {
                ask: ask.clone(),
                audience: audience.clone(),
                tx: Some(tx),
            },
        );
        for id in &audience {
            if let Some(h) = self.registry.get(*id) {
                h.hub.publish_permission(ask.clone(), false);
            }
        }
        self.registry.publish(Lifecycle {
            agent: ask.agent,
            short_id: ask.agent_short.clone(),
            at_ms: now_ms(),
            kind: LifecycleKind::Permission(ask),
        });
        rx
    }

    /// Closes an ask without an answer (the agent stopped waiting).
    pub(super) fn close_ask(&self, request_id: &str) {
        let open = self.asks.lock().remove(request_id);
        if let Some(open) = open {
            self.announce_resolved(&open);
        }
    }

    fn announce_resolved(&self, open: &Open) {
        for id in &open.audience {
            if let Some(h) = self.registry.get(*id) {
                h.hub.publish_permission(open.ask.clone(), true);
            }
        }
    }

    /// Answers an open ask; the first answer wins. `from` is the agent the
    /// answering client is attached to: it must be the asker or an ancestor.
    /// With `remember` (an "always" only), the ask's rules are kept in
    /// agentd's remembered rules before the answer is given.
    pub async fn answer(
        &self,
        from: AgentId,
        request_id: &str,
        answer: Answer,
        remember: bool,
    ) -> Result<(), AgentdError> {
        let rules = {
            let asks = self.asks.lock();
            match asks.get(request_id) {
                None => {
                    return Err(AgentdError::refused(format!(
                        "permission request {} is not open (already answered, or its agent stopped)",
                        quote(request_id)
                    )));
                }
                Some(o) if !o.audience.contains(&from) => {
                    return Err(AgentdError::refused(format!(
                        "permission request {} belongs to another agent's family",
                        quote(request_id)
                    )));
                }
                Some(o) if answer == Answer::AllowEveryAgent && o.ask.tool != ToolRef::Network => {
                    return Err(AgentdError::invalid(format!(
                        "permission request {} is about a tool call: \"allow for every agent\" answers only a network ask",
                        quote(request_id)
                    )));
                }
                Some(_) if remember && answer != Answer::AllowAlways => {
                    return Err(AgentdError::invalid(
                        "only an \"always\" answer can be remembered as a rule",
                    ));
                }
                Some(o) if remember && o.ask.remember.is_empty() => {
                    return Err(AgentdError::invalid(format!(
                        "no rule can be written for permission request {} (answer \"always\" for this agent instead)",
                        quote(request_id)
                    )));
                }
                Some(o) => remember.then(|| o.ask.remember.clone()),
            }
        };
        if let Some(rules) = rules {
            self.remember_rules(&rules).await?;
        }
        let open = self.asks.lock().remove(request_id);
        if let Some(mut open) = open {
            if let Some(tx) = open.tx.take() {
                let _ = tx.send(answer);
            }
            self.announce_resolved(&open);
        }
        Ok(())
    }

    /// Open asks that the attachers of `agent` should see: its own and its
    /// descendants'.
    pub fn open_asks_for(&self, agent: AgentId) -> Vec<PermissionAsk> {
        let mut asks: Vec<PermissionAsk> = self
            .asks
            .lock()
            .values()
            .filter(|o| o.audience.contains(&agent))
            .map(|o| o.ask.clone())
            .collect();
        asks.sort_by(|a, b| a.request_id.cmp(&b.request_id));
        asks
    }

    /// What a waiting agent waits for, for `list` and `show`: a permission
    /// answer, or disk space.
    pub fn waiting_for(&self, agent: AgentId) -> Option<String> {
        let ask = self
            .asks
            .lock()
            .values()
            .find(|o| o.ask.agent == agent)
            .map(|o| match o.ask.tool {
                ToolRef::Network => format!("permission to reach {}", o.ask.summary),
                _ => format!("permission to run {}: {}", o.ask.tool, o.ask.summary),
            });
        ask.or_else(|| {
            self.registry
                .get(agent)
                .and_then(|h| h.hub.status().waiting_for)
        })
    }
}
