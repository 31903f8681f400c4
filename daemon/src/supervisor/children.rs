//! The tools that reach other agents, run on behalf of a calling agent:
//! `Agent` (spawn a subagent, foreground or background), `SendMessage`,
//! `ListAgents` and `TaskStop`.

use std::sync::Arc;

use serde_json::{Value, json};
use tokio::sync::oneshot;

use super::{NewAgent, Supervisor, short};
use crate::agent::{OrchestrationCall, WaitEnd, types};
use crate::domain::{AgentRecord, Status, ToolName};
use crate::error::AgentdError;
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

impl Supervisor {
    pub(super) async fn run_orchestration_tool(
        self: &Arc<Self>,
        call: OrchestrationCall<'_>,
    ) -> ToolOutput {
        let (caller, input) = (call.caller, call.input);
        let result = match call.tool {
            ToolName::Agent => self.spawn_child(&call).await,
            ToolName::SendMessage => self.send_for(caller, input).await,
            ToolName::ListAgents => self.list_for(caller),
            ToolName::TaskStop => self.stop_for(caller, input).await,
            other => Err(ToolOutput::error(format!(
                "{other} is not run by the supervisor"
            ))),
        };
        result.unwrap_or_else(|e| e)
    }

    async fn spawn_child(
        self: &Arc<Self>,
        call: &OrchestrationCall<'_>,
    ) -> Result<ToolOutput, ToolOutput> {
        let (caller, input) = (call.caller, call.input);
        let description = field(input, "description")?;
        let prompt = field(input, "prompt")?;
        for later in [
            "fork_turns",
            "fork_tools",
            "fork_profile",
            "isolation",
            "working_dir",
        ] {
            if input.get(later).is_some_and(|v| !v.is_null()) {
                return Err(ToolOutput::error(format!(
                    "`{later}` is not available in this version of agentd; call Agent without it"
                )));
            }
        }
        let max_depth = self.config.max_subagent_depth;
        if caller.depth + 1 > max_depth {
            return Err(ToolOutput::error(format!(
                "subagents may nest at most {max_depth} deep and this agent is at depth {}; do the work yourself",
                caller.depth
            )));
        }
        let type_name = input
            .get("subagent_type")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .unwrap_or(types::DEFAULT_TYPE);
        let agent_type =
            types::resolve(type_name, &caller.cwd, &agentd_shared::paths::config_dir())
                .map_err(ToolOutput::error)?;
        let background = input
            .get("run_in_background")
            .and_then(Value::as_bool)
            .unwrap_or(agent_type.background);
        let req = NewAgent {
            prompt: prompt.to_string(),
            model: input
                .get("model")
                .and_then(Value::as_str)
                .map(str::to_string)
                .or_else(|| agent_type.model.clone())
                .unwrap_or_default(),
            name: input
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            description: description.to_string(),
            cwd: caller.cwd.display().to_string(),
            background,
            subagent_type: agent_type.name.clone(),
            permission_mode: agent_type.permission_mode,
            parent_tool_use_id: call.tool_use_id.to_string(),
            ..Default::default()
        };
        let prepared = self
            .prepare(&req, Some(caller), Some(&agent_type))
            .map_err(|e| ToolOutput::error(e.to_string()))?;
        let (tx, rx) = oneshot::channel();
        let waiter = (!background).then_some(tx);
        let child = self
            .store_and_start(prepared, waiter)
            .await
            .map_err(|e| ToolOutput::error(e.to_string()))?;
        let id = child.id;
        if background {
            return Ok(ToolOutput::ok(format!(
                "Agent launched in the background.\ntask_id: {id}\nYou will receive a <task-notification> when it finishes; do not poll it or start another agent for the same task. Use SendMessage to steer it and ListAgents to see it."
            )));
        }
        // A parent blocked on its child must not hold a running slot the
        // child may need (16 parents each waiting on a child would deadlock).
        let end = call.slot.lend_while(rx).await.ok();
        Ok(match end {
            Some(WaitEnd::Finished(rec)) => match rec.status {
                Status::Completed => ToolOutput::ok(format!("{}\n\n(agent {id})", rec.result)),
                Status::Failed => ToolOutput::error(format!("Agent {id} failed: {}", rec.error)),
                Status::Cancelled => ToolOutput::error(format!("Agent {id} was cancelled")),
                other => ToolOutput::error(format!(
                    "Agent {id} stopped as {other}; it can be continued with SendMessage"
                )),
            },
            Some(WaitEnd::Released) => ToolOutput::ok(format!(
                "Async launched: agent {id} was moved to the background and keeps running.\ntask_id: {id}\nYou will receive a <task-notification> when it finishes; do not start another agent for the same task."
            )),
            None => ToolOutput::error(format!("lost track of agent {id}")),
        })
    }

    /// Agents the caller may address: its children and its siblings
    /// (index lookups, never a scan of every agent).
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
            out.extend(self.store.get_agent(id)?);
        }
        out.sort_by_key(|r| (r.created_at_ms, r.id));
        Ok(out)
    }

    fn list_for(&self, caller: &AgentRecord) -> Result<ToolOutput, ToolOutput> {
        let family = self
            .family_of(caller)
            .map_err(|e| ToolOutput::error(e.to_string()))?;
        if family.is_empty() {
            return Ok(ToolOutput::ok("No subagents or sibling agents."));
        }
        let rows: Vec<Value> = family
            .iter()
            .map(|r| {
                json!({
                    "id": r.id.to_string(),
                    "short_id": r.short_id.as_str(),
                    "name": r.name,
                    "relation": if r.parent == Some(caller.id) { "child" } else { "sibling" },
                    "subagent_type": r.subagent_type,
                    "description": r.description,
                    "status": r.status.as_str(),
                    "can_message": r.can_message(),
                    "resume_blocked_reason": r.resume_blocked.as_ref().map(|b| b.reason.as_str()).unwrap_or(""),
                })
            })
            .collect();
        Ok(ToolOutput::ok(
            serde_json::to_string_pretty(&Value::Array(rows)).unwrap_or_else(|e| e.to_string()),
        ))
    }

    fn addressable(&self, caller: &AgentRecord, query: &str) -> Result<AgentRecord, ToolOutput> {
        let target = self
            .resolve(query)
            .map_err(|e| ToolOutput::error(e.to_string()))?;
        let family = self
            .family_of(caller)
            .map_err(|e| ToolOutput::error(e.to_string()))?;
        if family.iter().any(|r| r.id == target.id) {
            Ok(target)
        } else {
            Err(ToolOutput::error(format!(
                "agent {} is not one of your subagents or siblings (ListAgents shows those)",
                short(&target)
            )))
        }
    }

    async fn send_for(
        self: &Arc<Self>,
        caller: &AgentRecord,
        input: &Value,
    ) -> Result<ToolOutput, ToolOutput> {
        let to = field(input, "to")?;
        let message = field(input, "message")?;
        let target = self.addressable(caller, to)?;
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

    async fn stop_for(
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
