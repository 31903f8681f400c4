//! Permission asks (DESIGN §8): in `default` mode Bash, Write and Edit ask;
//! in `accept-edits` only Bash; `plan` refuses them; `bypass` never asks.
//! An ask goes to every client attached to the agent or to any ancestor;
//! the first answer wins. With nobody attached the agent waits as
//! `waiting` — shown in `list` with what it waits for — until someone
//! attaches and answers.

use std::collections::HashMap;
use std::sync::Mutex;

use tokio::sync::oneshot;
use uuid::Uuid;

use super::Supervisor;
use super::hub::PermissionAsk;
use crate::error::AgentdError;
use crate::store::{AgentRecord, PermissionMode};

/// What the mode says about one tool call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Gate {
    Allow,
    Ask,
    Refuse(String),
}

/// Tools that change things: gated by the permission mode.
const EDIT_TOOLS: [&str; 2] = ["Write", "Edit"];

pub fn gate(record: &AgentRecord, tool: &str) -> Gate {
    let mode = PermissionMode::try_from(record.permission_mode).unwrap_or(PermissionMode::Bypass);
    let edit = EDIT_TOOLS.contains(&tool);
    let shell = tool == "Bash";
    if !edit && !shell {
        return Gate::Allow;
    }
    if record.always_allowed.iter().any(|t| t == tool) {
        return Gate::Allow;
    }
    match mode {
        PermissionMode::Bypass | PermissionMode::Unspecified => Gate::Allow,
        PermissionMode::AcceptEdits if edit => Gate::Allow,
        PermissionMode::AcceptEdits | PermissionMode::Default => Gate::Ask,
        PermissionMode::Plan => Gate::Refuse(format!(
            "{tool} is not available in plan mode: this agent may only read. Describe the change you would make instead."
        )),
    }
}

/// How a user answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    AllowOnce,
    AllowAlways,
    Deny(String),
}

struct Open {
    ask: PermissionAsk,
    /// The asking agent and its ancestors: whose attachers see the ask.
    audience: Vec<Uuid>,
    tx: Option<oneshot::Sender<Answer>>,
}

#[derive(Default)]
pub struct Asks {
    open: Mutex<HashMap<String, Open>>,
}

impl Asks {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Open>> {
        self.open.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Supervisor {
    /// The agent and its ancestors, nearest first.
    fn lineage(&self, record: &AgentRecord) -> Vec<Uuid> {
        let mut out = vec![record.uuid()];
        let mut parent = record.parent_id.clone();
        while !parent.is_empty() {
            let Ok(id) = Uuid::from_slice(&parent) else {
                break;
            };
            out.push(id);
            parent = match self.store.get_agent(id) {
                Ok(Some(p)) => p.parent_id,
                _ => break,
            };
        }
        out
    }

    /// Opens an ask and publishes it to the agent's and its ancestors'
    /// attachers (and the watch stream). Returns the receiver of the answer.
    pub fn open_ask(
        &self,
        record: &AgentRecord,
        tool: &str,
        input: &serde_json::Value,
    ) -> (PermissionAsk, oneshot::Receiver<Answer>) {
        let ask = PermissionAsk {
            request_id: Uuid::now_v7().to_string(),
            agent: record.uuid(),
            tool: tool.to_string(),
            input_json: input.to_string(),
            summary: crate::tools::summarize(tool, input),
        };
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
            if let Some(h) = self.handles().get(id) {
                h.hub.publish_permission(ask.clone(), false);
            }
        }
        let _ = self.lifecycle.send(super::hub::Lifecycle {
            agent: ask.agent,
            at_ms: crate::store::now_ms(),
            kind: super::hub::LifecycleKind::Permission(ask.clone()),
        });
        (ask, rx)
    }

    /// Closes an ask without an answer (the agent was cancelled meanwhile).
    pub fn close_ask(&self, request_id: &str) {
        if let Some(open) = self.asks.lock().remove(request_id) {
            self.announce_resolved(&open);
        }
    }

    fn announce_resolved(&self, open: &Open) {
        for id in &open.audience {
            if let Some(h) = self.handles().get(id) {
                h.hub.publish_permission(open.ask.clone(), true);
            }
        }
    }

    /// Answers an open ask; the first answer wins. `from` is the agent the
    /// answering client is attached to: it must be the asker or an ancestor.
    pub fn answer(&self, from: Uuid, request_id: &str, answer: Answer) -> Result<(), AgentdError> {
        let open = {
            let mut asks = self.asks.lock();
            match asks.get(request_id) {
                None => {
                    return Err(AgentdError::precondition(format!(
                        "permission request {request_id} is not open (already answered, or its agent stopped)"
                    )));
                }
                Some(o) if !o.audience.contains(&from) => {
                    return Err(AgentdError::precondition(format!(
                        "permission request {request_id} belongs to another agent's family"
                    )));
                }
                Some(_) => asks.remove(request_id),
            }
        };
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
    pub fn open_asks_for(&self, agent: Uuid) -> Vec<PermissionAsk> {
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

    /// What a waiting agent waits for, for `list` and `show`.
    pub fn waiting_for(&self, agent: Uuid) -> Option<String> {
        self.asks
            .lock()
            .values()
            .find(|o| o.ask.agent == agent)
            .map(|o| format!("permission to run {}: {}", o.ask.tool, o.ask.summary))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_mode(mode: PermissionMode) -> AgentRecord {
        AgentRecord {
            permission_mode: mode as i32,
            ..Default::default()
        }
    }

    #[test]
    fn modes_gate_the_tools_that_change_things() {
        let d = with_mode(PermissionMode::Default);
        assert_eq!(gate(&d, "Bash"), Gate::Ask);
        assert_eq!(gate(&d, "Write"), Gate::Ask);
        assert_eq!(gate(&d, "Read"), Gate::Allow);
        let a = with_mode(PermissionMode::AcceptEdits);
        assert_eq!(gate(&a, "Edit"), Gate::Allow);
        assert_eq!(gate(&a, "Bash"), Gate::Ask);
        let p = with_mode(PermissionMode::Plan);
        assert!(matches!(gate(&p, "Write"), Gate::Refuse(_)));
        assert_eq!(gate(&p, "Grep"), Gate::Allow);
        assert_eq!(
            gate(&with_mode(PermissionMode::Bypass), "Bash"),
            Gate::Allow
        );
        let mut always = with_mode(PermissionMode::Default);
        always.always_allowed.push("Bash".into());
        assert_eq!(gate(&always, "Bash"), Gate::Allow);
        assert_eq!(gate(&always, "Write"), Gate::Ask);
    }
}
