//! The `Agent` tool, run on behalf of a calling agent: a subagent,
//! foreground or background, an external agent, or a fork. (`SendMessage`,
//! `ListAgents` and `TaskStop`, which reach the family, are `family`'s.)

use std::sync::Arc;

use serde_json::Value;
use tokio::sync::oneshot;

use super::fork::{ForkRequest, Origin};
use super::{NewAgent, Supervisor, notification};
use crate::agent::fork::{self, PLACEHOLDER};
use crate::agent::{OrchestrationCall, WaitEnd};
use crate::config::agent_types as types;
use crate::domain::text::non_blank;
use crate::domain::{
    AgentName, ExternalAgentName, FORK_TYPE, ForkTools, ForkTurns, Isolation, Status, ToolName,
};
use crate::error::quote;
use crate::model::{MessageBytes, ModelSpec};
use crate::tools::ToolOutput;

/// An optional string argument: absent or null is None; another type is
/// refused rather than read as absent.
fn optional_str<'a>(input: &'a Value, name: &str) -> Result<Option<&'a str>, ToolOutput> {
    match input.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(ToolOutput::error(format!("`{name}` must be a string"))),
    }
}

/// The call's `name`, checked (absent or empty: none).
fn agent_name(input: &Value) -> Result<Option<AgentName>, ToolOutput> {
    let name = optional_str(input, "name")?.unwrap_or("");
    AgentName::parse_optional(name).map_err(ToolOutput::error)
}

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

/// A family limit the new child waits behind, as a line of the call's
/// result (empty when it starts at once).
fn queued_line(queued: Option<String>) -> String {
    queued.map(|q| format!("{q}\n")).unwrap_or_default()
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
        // A fork starts no agents: both layers of the guard, before anything.
        let messages: Vec<MessageBytes> = call.history.iter().map(|(_, m)| m.clone()).collect();
        fork::recursion_guard(caller, &messages).map_err(ToolOutput::error)?;
        let description = field(input, "description")?;
        let prompt = field(input, "prompt")?;
        let isolation = match optional_str(input, "isolation")? {
            None => Isolation::None,
            Some("worktree") => Isolation::Worktree,
            Some(other) => {
                return Err(ToolOutput::error(format!(
                    "`isolation` must be \"worktree\" (got \"{}\"); leave it out to work in your own directory",
                    quote(other)
                )));
            }
        };
        let working_dir = optional_str(input, "working_dir")?
            .unwrap_or("")
            .to_string();
        let type_name = optional_str(input, "subagent_type")?.filter(|s| !s.is_empty());
        let forking = match type_name {
            Some(t) => t == FORK_TYPE,
            None => self.config().implicit_fork,
        };
        if forking {
            if !working_dir.is_empty() {
                return Err(ToolOutput::error(
                    "`working_dir` does not apply to forks: a fork works where its parent works, or in a worktree of its own with isolation \"worktree\"",
                ));
            }
            return self.fork_for(call, description, prompt, isolation).await;
        }
        for fork_only in ["fork_turns", "fork_tools", "fork_profile"] {
            if input.get(fork_only).is_some_and(|v| !v.is_null()) {
                return Err(ToolOutput::error(format!(
                    "`{fork_only}` applies only to forks (subagent_type \"fork\"); leave it out for a {} agent",
                    type_name.unwrap_or(types::DEFAULT_TYPE)
                )));
            }
        }
        self.within_depth(caller)?;
        let type_name = type_name.unwrap_or(types::DEFAULT_TYPE);
        let (req, agent_type) = self.subagent_request(
            call,
            type_name,
            description,
            prompt,
            isolation,
            &working_dir,
        )?;
        let background = req.background;
        let queued = self.queued_behind(caller);
        let prepared = self
            .prepare(&req, Some(caller), agent_type.as_ref())
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
                "Agent launched in the background.\ntask_id: {id}\n{}You will receive a <task-notification> when it finishes; do not poll it or start another agent for the same task. Use SendMessage to steer it and ListAgents to see it.",
                queued_line(queued)
            )));
        }
        // A parent blocked on its child must not hold a running slot the
        // child may need (16 parents each waiting on a child would deadlock).
        let end = call.slot.lend_while(rx).await.ok();
        Ok(match end {
            Some(WaitEnd::Finished(rec)) => match rec.status {
                Status::Completed => ToolOutput::ok(format!(
                    "{}\n\n(agent {id}){}",
                    rec.result(),
                    notification::kept_worktree_line(&rec)
                )),
                Status::Failed => ToolOutput::error(format!("Agent {id} failed: {}", rec.error())),
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

    /// What an `Agent` call asks for: a subagent of `type_name` — an
    /// agent type, or else an external agent of that name (DESIGN §19),
    /// which runs on its own model.
    fn subagent_request(
        &self,
        call: &OrchestrationCall<'_>,
        type_name: &str,
        description: &str,
        prompt: &str,
        isolation: Isolation,
        working_dir: &str,
    ) -> Result<(NewAgent, Option<types::AgentType>), ToolOutput> {
        let (caller, input) = (call.caller, call.input);
        let agent_type =
            match types::resolve(type_name, &caller.cwd, &agentd_shared::paths::config_dir()) {
                Ok(t) => Some(t),
                Err(types::TypeError::Unknown(why)) => {
                    let external = ExternalAgentName::parse(type_name)
                        .ok()
                        .filter(|n| self.external_def(n).is_ok());
                    if external.is_none() {
                        let names: Vec<String> = self
                            .external_agents()
                            .iter()
                            .map(ToString::to_string)
                            .collect();
                        return Err(ToolOutput::error(if names.is_empty() {
                            why
                        } else {
                            format!("{why}; external agents: {}", names.join(", "))
                        }));
                    }
                    None
                }
                Err(e) => return Err(ToolOutput::error(e.to_string())),
            };
        let executor = match agent_type {
            Some(_) => None,
            None => ExternalAgentName::parse(type_name).ok(),
        };
        let background = input
            .get("run_in_background")
            .and_then(Value::as_bool)
            .unwrap_or(agent_type.as_ref().is_some_and(|t| t.background));
        let asked_model = input
            .get("model")
            .and_then(Value::as_str)
            .map(str::to_string);
        if executor.is_some() && asked_model.is_some() {
            return Err(ToolOutput::error(format!(
                "`{type_name}` is an external agent and picks its own model; call Agent without `model`"
            )));
        }
        let model = match &agent_type {
            Some(t) => asked_model
                .or_else(|| types::model_for_child(t.model.as_deref(), &caller.model))
                .filter(|m| !m.trim().is_empty())
                .map(|m| ModelSpec::parse(m.trim()))
                .transpose()
                .map_err(|e| ToolOutput::error(e.to_string()))?,
            None => None,
        };
        let req = NewAgent {
            prompt: prompt.to_string(),
            model,
            name: agent_name(input)?,
            description: non_blank(description),
            cwd: caller.cwd.clone(),
            background,
            permission_mode: agent_type.as_ref().and_then(|t| t.permission_mode),
            parent_tool_use_id: call.tool_use_id.to_string(),
            isolation,
            working_dir: non_blank(working_dir),
            mcp_servers: self.requested_servers_of(caller),
            executor,
            ..Default::default()
        };
        Ok((req, agent_type))
    }

    /// `Agent` with `subagent_type: "fork"`: a fork of the caller, in the
    /// background by nature. The call returns at once; the fork's result
    /// comes as a task notification.
    async fn fork_for(
        self: &Arc<Self>,
        call: &OrchestrationCall<'_>,
        description: &str,
        directive: &str,
        isolation: Isolation,
    ) -> Result<ToolOutput, ToolOutput> {
        let (caller, input) = (call.caller, call.input);
        if input.get("model").is_some_and(|v| !v.is_null()) {
            return Err(ToolOutput::error(
                "a fork runs on its parent's model (that is how it reads the parent's prompt cache); call Agent without `model`",
            ));
        }
        self.within_depth(caller)?;
        let fork_turns = match input.get("fork_turns") {
            None | Some(Value::Null) => ForkTurns::All,
            Some(Value::String(s)) => ForkTurns::parse(s).map_err(ToolOutput::error)?,
            Some(Value::Number(n)) => {
                ForkTurns::parse(&n.to_string()).map_err(ToolOutput::error)?
            }
            Some(_) => {
                return Err(ToolOutput::error(
                    "`fork_turns` must be \"all\" or a positive number of turns",
                ));
            }
        };
        let fork_tools = match input.get("fork_tools") {
            None | Some(Value::Null) => None,
            Some(Value::Array(items)) => Some(
                items
                    .iter()
                    .map(|v| v.as_str().map(str::to_string))
                    .collect::<Option<Vec<String>>>()
                    .ok_or_else(|| {
                        ToolOutput::error("`fork_tools` must be a list of tool names (strings)")
                    })?,
            ),
            Some(_) => {
                return Err(ToolOutput::error(
                    "`fork_tools` must be a list of tool names (strings)",
                ));
            }
        };
        let profile = optional_str(input, "fork_profile")?.unwrap_or("");
        let req = ForkRequest {
            directive: directive.to_string(),
            name: agent_name(input)?,
            description: non_blank(description),
            fork_turns,
            tools: ForkTools::parse(fork_tools.as_deref(), profile).map_err(ToolOutput::error)?,
            isolation,
            background: true,
            base: None,
            at_turn: None,
            budget: None,
        };
        let queued = self.queued_behind(caller);
        let origin = Origin::Call {
            tool_use_id: call.tool_use_id,
            history: call.history,
        };
        let prepared = self
            .prepare_fork(caller, &req, origin)
            .map_err(|e| ToolOutput::error(e.to_string()))?;
        let child = self
            .store_and_start(prepared, None)
            .await
            .map_err(|e| ToolOutput::error(e.to_string()))?;
        Ok(ToolOutput::ok(format!(
            "{PLACEHOLDER}.\ntask_id: {id}\n{queued}The fork has your whole conversation and works on its directive alone. You will receive a <task-notification> with its report when it finishes; do not poll it or do its task yourself.",
            id = child.id,
            queued = queued_line(queued)
        )))
    }
}
