//! Running an agent's hooks (DESIGN §24), for both drivers: the input
//! Claude Code's hooks read, each matching hook run in the agent's sandbox
//! (`tools::hook_process`), what it said read (`agentd_rules::hook_output`),
//! and a hook that failed — a code other than 0 and 2, a kill at its
//! timeout — logged and noted in the transcript without blocking anything.
//!
//! Input: `session_id` and `agent_id` (the agent's id), `parent_id`,
//! `agent_type`, `cwd`, `permission_mode` (Claude Code's spelling),
//! `hook_event_name`, and the event's own fields. `transcript_path` is
//! null: agentd keeps transcripts in its store, not in a file a hook could
//! read (`agentctl log ID --json` prints one).

use agentd_rules::hook_output::{self, HookSaid};
use agentd_rules::hooks::{Hook, HookEvent};
use serde_json::{Map, Value, json};

use super::{Halt, RunCore};
use crate::domain::{PermissionMode, Role, json_bytes};

/// One hook that ran, and what it said.
pub struct Ran {
    pub hook: Hook,
    pub said: HookSaid,
}

impl Ran {
    /// "hook `./check.sh` in ~/.claude/settings.json".
    pub fn named(&self) -> String {
        format!(
            "hook `{}` in {}",
            crate::error::quote(&self.hook.command),
            self.hook.source
        )
    }
}

fn claude_mode(m: PermissionMode) -> &'static str {
    match m {
        PermissionMode::Default => "default",
        PermissionMode::AcceptEdits => "acceptEdits",
        PermissionMode::Plan => "plan",
        PermissionMode::Bypass => "bypassPermissions",
    }
}

impl RunCore {
    /// Whether any hook of `event` matches `target`.
    pub(in crate::agent) fn has_hooks(&self, event: HookEvent, target: &str) -> bool {
        self.hooks
            .iter()
            .any(|h| h.event == event && h.matcher.matches(target))
    }

    /// Runs every hook of `event` whose matcher matches `target`, one after
    /// another, with the common input and `fields`.
    pub(in crate::agent) async fn run_hooks(
        &mut self,
        event: HookEvent,
        target: &str,
        fields: Value,
    ) -> Result<Vec<Ran>, Halt> {
        let matching: Vec<Hook> = self
            .hooks
            .iter()
            .filter(|h| h.event == event && h.matcher.matches(target))
            .cloned()
            .collect();
        if matching.is_empty() {
            return Ok(Vec::new());
        }
        let mut input = Map::new();
        input.insert("session_id".into(), json!(self.record.id.to_string()));
        input.insert("agent_id".into(), json!(self.record.id.to_string()));
        input.insert(
            "parent_id".into(),
            self.record
                .parent
                .map_or(Value::Null, |p| json!(p.to_string())),
        );
        input.insert("agent_type".into(), json!(self.record.subagent_type));
        input.insert("transcript_path".into(), Value::Null);
        input.insert("cwd".into(), json!(self.record.cwd.display().to_string()));
        input.insert(
            "permission_mode".into(),
            json!(claude_mode(self.record.permission_mode)),
        );
        input.insert("hook_event_name".into(), json!(event.as_str()));
        if let Value::Object(extra) = fields {
            input.extend(extra);
        }
        let bytes = json_bytes(&Value::Object(input));
        let mut ctx = self.tool_context(std::path::PathBuf::new());
        ctx.spool = None;
        let mut ran = Vec::with_capacity(matching.len());
        for hook in matching {
            // Killed at an interrupt (the context's token) and at a
            // shutdown: a hook never holds either.
            let cancel = ctx.cancel.clone();
            let shutdown = self.stops.shutdown.clone();
            let run = {
                let running =
                    crate::tools::hook_process::run(&hook.command, &bytes, hook.timeout, &ctx);
                tokio::pin!(running);
                tokio::select! {
                    run = &mut running => run,
                    () = shutdown.cancelled() => {
                        cancel.cancel();
                        (&mut running).await
                    }
                }
            };
            let said = hook_output::read(event, &run);
            let r = Ran { hook, said };
            if let Some(why) = &r.said.error {
                tracing::warn!(agent = %self.record.id, event = event.as_str(), hook = %r.hook.command, source = %r.hook.source, "a hook failed: {why}");
                let note = json!([{"type": "text", "text": format!(
                    "{} hook failed ({}): {why}; nothing was blocked",
                    event.as_str(),
                    r.named()
                )}]);
                self.write_entry(Role::System, json_bytes(&note), None, None, &[])
                    .await?;
            }
            ran.push(r);
        }
        Ok(ran)
    }
}

/// What a PreToolUse hook decided of a call (the strictest of them).
#[derive(Debug, Clone)]
pub struct HookVerdict {
    pub decision: hook_output::PermissionDecision,
    pub why: String,
    /// "hook `./check.sh` in ~/.claude/settings.json".
    pub named: String,
    pub command: String,
    pub source: String,
}

/// What the PreToolUse hooks of one call said.
#[derive(Debug, Default)]
pub struct PreToolHooks {
    pub verdict: Option<HookVerdict>,
    /// The input the call runs with instead (the last hook's that gave one).
    pub input: Option<Value>,
    /// Context for the model, beside the call's result.
    pub context: Vec<String>,
    /// A hook stopped the agent (`continue: false`), with why.
    pub stop: Option<String>,
}

impl RunCore {
    /// Runs the PreToolUse hooks of the call `call_id` of `tool_name`.
    pub(in crate::agent) async fn pre_tool_hooks(
        &mut self,
        tool_name: &str,
        call_id: &str,
        input: &Value,
    ) -> Result<PreToolHooks, Halt> {
        use hook_output::PermissionDecision as D;
        let mut out = PreToolHooks::default();
        if !self.has_hooks(HookEvent::PreToolUse, tool_name) {
            return Ok(out);
        }
        let fields = json!({"tool_name": tool_name, "tool_input": input, "tool_use_id": call_id});
        let rank = |d: D| match d {
            D::Deny => 3,
            D::Ask => 2,
            D::Allow => 1,
        };
        for r in self
            .run_hooks(HookEvent::PreToolUse, tool_name, fields)
            .await?
        {
            let said = r.said.clone();
            // Exit 2 or `decision: block` is a deny with its reason.
            let decision = match (&said.block, &said.permission) {
                (Some(why), _) => Some((D::Deny, why.clone())),
                (None, Some((d, why))) => Some((*d, why.clone())),
                (None, None) => None,
            };
            if let Some((d, why)) = decision
                && out
                    .verdict
                    .as_ref()
                    .is_none_or(|v| rank(d) > rank(v.decision))
            {
                out.verdict = Some(HookVerdict {
                    decision: d,
                    why,
                    named: r.named(),
                    command: r.hook.command.clone(),
                    source: r.hook.source.clone(),
                });
            }
            if let Some(input) = said.updated_input {
                out.input = Some(input);
            }
            out.context.extend(said.context);
            if out.stop.is_none() {
                out.stop = said.stop;
            }
        }
        Ok(out)
    }

    /// The rules' and mode's gate (`gate`) with a PreToolUse hook's word:
    /// a hook's deny refuses in every mode; its ask asks; its allow runs
    /// what the mode would have asked about — a deny rule still refuses.
    pub(in crate::agent) fn gate_with_hook(
        &mut self,
        tool: &crate::domain::ToolRef,
        mcp_read_only: bool,
        input: &Value,
        call_id: &str,
        hook: Option<&HookVerdict>,
    ) -> crate::agent::permission::Gate {
        use crate::agent::permission::Gate;
        use crate::domain::{RuleDecision, RuleVerdict};
        use hook_output::PermissionDecision as D;
        let gate = self.gate(tool, mcp_read_only, input, call_id);
        let Some(h) = hook else {
            return gate;
        };
        let (gate, verdict) = match (h.decision, &gate) {
            (D::Deny, _) => {
                let why = if h.why.is_empty() {
                    String::new()
                } else {
                    format!(": {}", h.why)
                };
                (
                    Gate::Refuse(format!("denied by {}{why}. This call is not run.", h.named)),
                    RuleVerdict::Denied,
                )
            }
            (_, Gate::Refuse(_)) => return gate,
            (D::Ask, _) => (Gate::Ask, RuleVerdict::Asked),
            (D::Allow, Gate::Ask) => (Gate::Allow, RuleVerdict::Allowed),
            (D::Allow, Gate::Allow) => return gate,
        };
        self.decisions.push(RuleDecision {
            tool_use_id: call_id.to_string(),
            verdict,
            rule: format!("hook `{}`", crate::error::quote(&h.command)),
            source: h.source.clone(),
        });
        gate
    }

    /// Runs the PostToolUse (or, for a failed call, PostToolUseFailure)
    /// hooks of a call and puts what they said beside its result: a block
    /// or context is text for the model after the output.
    pub(in crate::agent) async fn post_tool_hooks(
        &mut self,
        tool_name: &str,
        call_id: &str,
        input: &Value,
        mut output: crate::tools::ToolOutput,
    ) -> Result<crate::tools::ToolOutput, Halt> {
        let event = if output.is_error {
            HookEvent::PostToolUseFailure
        } else {
            HookEvent::PostToolUse
        };
        if !self.has_hooks(event, tool_name) {
            return Ok(output);
        }
        let fields = json!({
            "tool_name": tool_name,
            "tool_input": input,
            "tool_use_id": call_id,
            "tool_response": {"content": output.content, "is_error": output.is_error},
        });
        for r in self.run_hooks(event, tool_name, fields).await? {
            if let Some(why) = &r.said.block {
                output
                    .content
                    .push_str(&format!("\n\n[{} {}: {why}]", event.as_str(), r.named()));
            }
            if let Some(ctx) = &r.said.context {
                output.content.push_str(&format!("\n\n{ctx}"));
            }
        }
        Ok(output)
    }
}

/// What UserPromptSubmit hooks said of one message.
#[derive(Debug, Default)]
pub struct PromptHeard {
    /// Refused (exit 2, `decision: block`): why. It is not delivered.
    pub refused: Option<String>,
    /// Context for the model, after the message.
    pub context: Vec<String>,
    /// The refusal is in the transcript already.
    noted: bool,
}

impl RunCore {
    /// Runs the UserPromptSubmit hooks of a message sent to the agent.
    pub(in crate::agent) async fn prompt_hooks(
        &mut self,
        prompt: &str,
    ) -> Result<PromptHeard, Halt> {
        let mut heard = PromptHeard::default();
        if !self.has_hooks(HookEvent::UserPromptSubmit, "") {
            return Ok(heard);
        }
        let fields = json!({"prompt": prompt});
        for r in self
            .run_hooks(HookEvent::UserPromptSubmit, "", fields)
            .await?
        {
            if heard.refused.is_none()
                && let Some(why) = &r.said.block
            {
                heard.refused = Some(format!("{}: {why}", r.named()));
            }
            heard.context.extend(r.said.context.clone());
        }
        Ok(heard)
    }

    /// Notes in the transcript each message a hook refused (once), taking
    /// `consumed` out of the inbox with the note.
    pub(in crate::agent) async fn note_refused_prompts(
        &mut self,
        heard: &mut std::collections::HashMap<crate::store::InboxKey, PromptHeard>,
        consumed: &[crate::store::InboxKey],
    ) -> Result<(), Halt> {
        let mut refusals = Vec::new();
        for h in heard.values_mut().filter(|h| !h.noted) {
            if let Some(why) = &h.refused {
                refusals.push(why.clone());
                h.noted = true;
            }
        }
        if refusals.is_empty() && consumed.is_empty() {
            return Ok(());
        }
        let note: Vec<Value> = refusals
            .iter()
            .map(|why| json!({"type": "text", "text": format!("a message was refused by UserPromptSubmit {why}; the agent was not sent it")}))
            .collect();
        self.write_entry(
            Role::System,
            json_bytes(&Value::Array(note)),
            None,
            None,
            consumed,
        )
        .await?;
        Ok(())
    }
}

impl HookVerdict {
    /// As the store keeps it (`call_decisions`).
    pub fn kept(&self) -> crate::store::CallDecision {
        use hook_output::PermissionDecision as D;
        crate::store::CallDecision {
            decision: match self.decision {
                D::Allow => 1,
                D::Ask => 2,
                D::Deny => 3,
            },
            why: self.why.clone(),
            named: self.named.clone(),
            command: self.command.clone(),
            source: self.source.clone(),
        }
    }

    /// As it was kept.
    pub fn from_kept(d: crate::store::CallDecision) -> HookVerdict {
        use hook_output::PermissionDecision as D;
        HookVerdict {
            decision: match d.decision {
                1 => D::Allow,
                2 => D::Ask,
                _ => D::Deny,
            },
            why: d.why,
            named: d.named,
            command: d.command,
            source: d.source,
        }
    }
}

impl RunCore {
    /// Runs the Notification hooks (matched against `notification_type`)
    /// in the background: what they say changes nothing, and a slow one
    /// never holds the ask it is about.
    pub(in crate::agent) fn notification_hooks(&self, kind: &str, message: String) {
        let matching: Vec<Hook> = self
            .hooks
            .iter()
            .filter(|h| h.event == HookEvent::Notification && h.matcher.matches(kind))
            .cloned()
            .collect();
        if matching.is_empty() {
            return;
        }
        let input = json!({
            "session_id": self.record.id.to_string(),
            "agent_id": self.record.id.to_string(),
            "parent_id": self.record.parent.map(|p| p.to_string()),
            "agent_type": self.record.subagent_type,
            "transcript_path": null,
            "cwd": self.record.cwd.display().to_string(),
            "permission_mode": claude_mode(self.record.permission_mode),
            "hook_event_name": "Notification",
            "message": message,
            "notification_type": kind,
        });
        let bytes = json_bytes(&input);
        let mut ctx = self.tool_context(std::path::PathBuf::new());
        ctx.spool = None;
        let agent = self.record.id;
        tokio::spawn(async move {
            for hook in matching {
                let run =
                    crate::tools::hook_process::run(&hook.command, &bytes, hook.timeout, &ctx)
                        .await;
                if let Some(why) = hook_output::read(HookEvent::Notification, &run).error {
                    tracing::warn!(agent = %agent, hook = %hook.command, source = %hook.source, "a Notification hook failed: {why}");
                }
            }
        });
    }
}
