//! A tool call put to the agent's permission mode (DESIGN §8): allowed,
//! refused, or asked of agentd's clients while the agent waits — for a
//! model's tool call and an external agent's permission request alike.

use serde_json::Value;

use super::{Halt, RunCore, RunEnd};
use crate::agent::permission::{self, Answer, Gate};
use crate::domain::{RuleDecision, RuleVerdict, Status, ToolRef};
use crate::tools::ToolOutput;

impl RunCore {
    /// What the permission rules (DESIGN §24), then the permission mode,
    /// say of the call `call_id` of `tool` with `input`; `mcp_read_only`:
    /// an MCP tool that says it only reads. A deny holds in every mode; an
    /// ask asks in every mode but bypass; an allow lets it run without
    /// asking (plan mode still refuses what it refuses). What a rule
    /// decided goes into the transcript with the call's result.
    pub(in crate::agent) fn gate(
        &mut self,
        tool: &ToolRef,
        mcp_read_only: bool,
        input: &Value,
        call_id: &str,
    ) -> Gate {
        use agentd_rules::{Decision, Why};
        let by_mode = self.mode_gate(tool, mcp_read_only);
        let home = std::env::var_os("HOME")
            .map(std::path::PathBuf::from)
            .unwrap_or_default();
        let call = agentd_rules::Call {
            tool: tool.as_str(),
            input,
            cwd: &self.record.cwd,
            home: &home,
        };
        let decision = agentd_rules::decide(&self.rules, &call);
        let bypass = self.record.permission_mode == crate::domain::PermissionMode::Bypass;
        let named = |r: &agentd_rules::Rule| (r.text.clone(), r.source.clone());
        let (gate, verdict, (rule, source)) = match decision {
            Decision::None => return by_mode,
            Decision::Deny(r) => (
                Gate::Refuse(format!(
                    "denied by {} in {}: this call is not run.",
                    r.text, r.source
                )),
                RuleVerdict::Denied,
                named(r),
            ),
            // Bypass lets what the mode allows run; plan mode's refusal
            // stands.
            Decision::Ask(_) if by_mode == Gate::Allow && bypass => return by_mode,
            Decision::Ask(_) if matches!(by_mode, Gate::Refuse(_)) => return by_mode,
            Decision::Ask(Why::Rule(r)) => (Gate::Ask, RuleVerdict::Asked, named(r)),
            Decision::Ask(Why::Unparsed(why)) => (
                Gate::Ask,
                RuleVerdict::Asked,
                (why.to_string(), String::new()),
            ),
            Decision::Allow(r) if by_mode == Gate::Ask => {
                (Gate::Allow, RuleVerdict::Allowed, named(r))
            }
            Decision::Allow(_) => return by_mode,
        };
        self.decisions.push(RuleDecision {
            tool_use_id: call_id.to_string(),
            verdict,
            rule,
            source,
        });
        gate
    }

    fn mode_gate(&self, tool: &ToolRef, mcp_read_only: bool) -> Gate {
        match tool {
            ToolRef::Builtin(t) => permission::gate(&self.record, *t),
            ToolRef::Mcp(m) => permission::gate_mcp(&self.record, m, mcp_read_only),
            ToolRef::External(k) => permission::gate_external(&self.record, *k),
            // Not a tool a model can call: the proxy asks about these.
            ToolRef::Network => Gate::Refuse(format!("{tool} is not a tool.")),
        }
    }

    /// Applies `gate` to the call `call_id` of `tool` with `input`:
    /// Ok(None) to run it, Ok(Some(error)) when refused or denied,
    /// Err(outcome) when the agent was stopped while it waited for an
    /// answer.
    pub(in crate::agent) async fn permit(
        &mut self,
        gate: Gate,
        tool: ToolRef,
        input: &Value,
        call_id: &str,
    ) -> Result<Result<Option<ToolOutput>, RunEnd>, Halt> {
        match gate {
            Gate::Allow => return Ok(Ok(None)),
            Gate::Refuse(why) => return Ok(Ok(Some(ToolOutput::error(why)))),
            Gate::Ask => {}
        }
        let (ask, rx) = self.host.ask(&self.record, tool.clone(), input, call_id);
        self.notification_hooks(
            "permission_prompt",
            format!("agentd needs your permission to use {tool}"),
        );
        if let Err(halt) = self.set_status(Status::Waiting).await {
            self.host.withdraw_ask(&ask.request_id);
            return Err(halt);
        }
        let answer = tokio::select! {
            stop = self.stops.any() => Err(stop),
            a = rx => Ok(a),
        };
        let answer = match answer {
            Err(stop) => {
                self.host.withdraw_ask(&ask.request_id);
                return Ok(Err(stop));
            }
            Ok(a) => a,
        };
        self.set_status(Status::Running).await?;
        Ok(Ok(match answer {
            Ok(Answer::AllowOnce) => None,
            Ok(Answer::AllowAlways) => {
                if !self.record.always_allowed.contains(&tool) {
                    self.record.always_allowed.push(tool);
                }
                None
            }
            // Only a network ask takes it (`Supervisor::answer`): never
            // read as a yes.
            Ok(Answer::AllowEveryAgent) => Some(ToolOutput::error(format!(
                "The {tool} call was not run: the answer given was not one for a tool call."
            ))),
            Ok(Answer::Deny(reason)) => Some(ToolOutput::error(if reason.trim().is_empty() {
                format!("The user denied this {tool} call.")
            } else {
                format!("The user denied this {tool} call: {reason}")
            })),
            Err(_) => Some(ToolOutput::error("the permission request was withdrawn")),
        }))
    }
}
