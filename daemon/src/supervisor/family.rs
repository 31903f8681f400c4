//! The tools that reach an agent's family, run on behalf of a calling
//! agent: `ListAgents`, `SendMessage` and `TaskStop`. A caller reaches its
//! children and its siblings that report to their parent, nothing else, and
//! it names them among those only: an error never tells it the id behind
//! another agent's name. A message goes only to an agent at least as
//! confined as its sender (`domain::Confinement`, docs/security.md).

use std::sync::Arc;

use serde_json::{Value, json};

use super::{Supervisor, short};
use crate::domain::{AgentRecord, Confinement};
use crate::error::{AgentdError, quote};
use crate::tools::ToolOutput;

fn field<'a>(input: &'a Value, name: &str) -> Result<&'a str, ToolOutput> {
    input
        .get(name)
        .and_then(Value::as_str)
        .filter(|s| !s.trim().is_empty())
        .ok_or_else(|| {
            ToolOutput::error(format!(
                "`{name}` is required and must be a non-empty string"
            ))
        })
}

/// Which of `family` `query` names: a full id, a name, a short id, or a
/// unique id prefix — among them only.
fn named_in<'a>(family: &'a [AgentRecord], query: &str) -> Result<&'a AgentRecord, String> {
    let q = query.trim();
    let lower = q.to_ascii_lowercase();
    let exact = family
        .iter()
        .find(|r| r.id.to_string() == lower || (!r.name.is_empty() && r.name == q))
        .or_else(|| family.iter().find(|r| r.short_id.as_str() == lower));
    if let Some(r) = exact {
        return Ok(r);
    }
    let hex: String = lower.chars().filter(|c| *c != '-').collect();
    let by_prefix: Vec<&AgentRecord> = if hex.is_empty() {
        Vec::new()
    } else {
        family
            .iter()
            .filter(|r| r.id.to_string().replace('-', "").starts_with(&hex))
            .collect()
    };
    match by_prefix.as_slice() {
        [one] => Ok(one),
        [] => Err(format!(
            "no agent '{}' among your subagents and siblings (ListAgents shows them)",
            quote(q)
        )),
        _ => Err(format!(
            "'{}' names several of your subagents and siblings; give more of the id",
            quote(q)
        )),
    }
}

impl Supervisor {
    /// Agents the caller may address: its children and its siblings that
    /// report to their parent (index lookups, never a scan of every agent).
    fn family_of(&self, caller: &AgentRecord) -> Result<Vec<AgentRecord>, AgentdError> {
        let mut ids = self.store.children_of(caller.id)?;
        if let Some(parent) = caller.parent {
            ids.extend(
                self.store
                    .children_of(parent)?
                    .into_iter()
                    .filter(|id| *id != caller.id),
            );
        }
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            // A fork a person asked for is not the parent's business: it
            // would never report back to it.
            out.extend(
                self.store
                    .get_agent(id)?
                    .filter(|r| r.parent.is_none() || r.reports_to_parent()),
            );
        }
        out.sort_by_key(|r| (r.created_at_ms, r.id));
        Ok(out)
    }

    /// `ListAgents`: the family, each with whether the caller may message
    /// it, and why not.
    pub(super) fn list_for(&self, caller: &AgentRecord) -> Result<ToolOutput, ToolOutput> {
        let family = self
            .family_of(caller)
            .map_err(|e| ToolOutput::error(e.to_string()))?;
        if family.is_empty() {
            return Ok(ToolOutput::ok("No subagents or sibling agents."));
        }
        let sender = Confinement::of(caller);
        let rows: Vec<Value> = family
            .iter()
            .map(|r| {
                let refused = sender.may_not_message(&Confinement::of(r));
                json!({
                    "id": r.id.to_string(),
                    "short_id": r.short_id.as_str(),
                    "name": r.name,
                    "relation": if r.parent == Some(caller.id) { "child" } else { "sibling" },
                    "subagent_type": r.subagent_type,
                    "description": r.description,
                    "status": r.status.as_str(),
                    "can_message": r.can_message() && refused.is_none(),
                    "cannot_message_because": refused,
                    "resume_blocked_reason": r.resume_blocked.as_ref().map(|b| b.reason.as_str()).unwrap_or(""),
                })
            })
            .collect();
        Ok(ToolOutput::ok(
            serde_json::to_string_pretty(&Value::Array(rows)).unwrap_or_else(|e| e.to_string()),
        ))
    }

    fn addressable(&self, caller: &AgentRecord, query: &str) -> Result<AgentRecord, ToolOutput> {
        let family = self
            .family_of(caller)
            .map_err(|e| ToolOutput::error(e.to_string()))?;
        named_in(&family, query).cloned().map_err(ToolOutput::error)
    }

    /// `SendMessage`: queued for, or reviving, an agent of the family that
    /// is at least as confined as the caller.
    pub(super) async fn send_for(
        self: &Arc<Self>,
        caller: &AgentRecord,
        input: &Value,
    ) -> Result<ToolOutput, ToolOutput> {
        let to = field(input, "to")?;
        let message = field(input, "message")?;
        let target = self.addressable(caller, to)?;
        if let Some(why) = Confinement::of(caller).may_not_message(&Confinement::of(&target)) {
            return Err(ToolOutput::error(format!(
                "not sent to agent {}: {why}",
                short(&target)
            )));
        }
        let (rec, revived) = self
            .send(&target.id.to_string(), message, Some(caller))
            .await
            .map_err(|e| ToolOutput::error(e.to_string()))?;
        Ok(ToolOutput::ok(if revived {
            format!(
                "Agent {} was idle and is now working on your message.",
                short(&rec)
            )
        } else {
            format!(
                "Message queued for agent {}; it gets it at its next turn boundary.",
                short(&rec)
            )
        }))
    }

    /// `TaskStop`: cancels one of the caller's own subagents.
    pub(super) async fn stop_for(
        &self,
        caller: &AgentRecord,
        input: &Value,
    ) -> Result<ToolOutput, ToolOutput> {
        let task = field(input, "task_id")?;
        let target = self.addressable(caller, task)?;
        if target.parent != Some(caller.id) {
            return Err(ToolOutput::error("you can stop only your own subagents"));
        }
        let rec = self
            .cancel(&target.id.to_string())
            .await
            .map_err(|e| ToolOutput::error(e.to_string()))?;
        Ok(ToolOutput::ok(format!(
            "Agent {} is {}.",
            short(&rec),
            rec.status
        )))
    }
}
