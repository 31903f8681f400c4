//! One round of tool calls (DESIGN §3, §5): each call gated by the
//! permission mode and run; a stop in the middle answers the rest as not
//! run; after a crash, the calls of the newest assistant message that never
//! got results are answered — read-only ones (and `TodoWrite`, which sets
//! the same plan again) by running them again, the others as interrupted
//! (`interrupted`).

use std::path::PathBuf;

use serde_json::{Value, json};

use super::ModelDriver;
use super::interrupted::{self, Before};
use super::mcp_call::McpRoundEnd;
use crate::agent::events::ToolEvent;
use crate::agent::host::OrchestrationCall;
use crate::agent::run::{Halt, RunEnd};
use crate::domain::{AgentRecord, Role, ToolFileChange, ToolName, ToolRef, json_bytes};
use crate::store::StoreError;
use crate::tools::{self, ToolOutput};

/// A call that may not run because the agent stopped: how it ended, and
/// where the call was then.
pub(super) struct Unpermitted {
    pub end: RunEnd,
    pub at: Before,
}

/// A call put to its hooks, rules and mode.
pub(super) struct Permitted {
    /// Why it may not run; None: it runs.
    pub(super) refusal: Option<ToolOutput>,
    /// What it runs with (a hook may have changed the model's input).
    pub(super) input: Value,
    /// What hooks said for the model, put after its result.
    pub(super) context: Vec<String>,
}

impl Permitted {
    /// `output` with the hooks' context after it.
    pub(super) fn with_context(&self, mut output: ToolOutput) -> ToolOutput {
        for c in &self.context {
            output.content.push_str(&format!("\n\n{c}"));
        }
        output
    }
}

/// One tool call of an assistant message.
#[derive(Clone)]
pub(super) struct Call {
    pub(super) id: String,
    pub(super) name: String,
    pub(super) input: Value,
}

pub(super) fn calls_of(content: &[Value]) -> Vec<Call> {
    content
        .iter()
        .filter(|b| b["type"] == "tool_use")
        .map(|b| Call {
            id: b["id"].as_str().unwrap_or_default().to_string(),
            name: b["name"].as_str().unwrap_or_default().to_string(),
            input: b["input"].clone(),
        })
        .collect()
}

/// The answers of a round so far: the tool_result blocks the model gets,
/// and beside them what the calls changed in files, for clients.
#[derive(Default)]
pub(super) struct Answers {
    pub(super) blocks: Vec<Value>,
    pub(super) changes: Vec<ToolFileChange>,
}

impl Answers {
    pub(super) fn answer(&mut self, call: &Call, output: ToolOutput) {
        self.blocks.push(tool_result(call, &output));
        if let Some(change) = output.change {
            self.changes.push(ToolFileChange {
                reported: false,
                tool_use_id: call.id.clone(),
                change: *change,
            });
        }
    }
}

pub(super) fn tool_result(call: &Call, output: &ToolOutput) -> Value {
    let mut result =
        json!({"type": "tool_result", "tool_use_id": call.id, "content": output.content});
    if output.is_error {
        result["is_error"] = json!(true);
    }
    result
}

impl ModelDriver {
    /// Runs the tool calls of one assistant message, then delivers their
    /// results (and whatever arrived meanwhile) as one user message. A stop
    /// asked for in the middle answers the rest as not run, and ends the run.
    pub(super) async fn run_round(&mut self, seq: u64, calls: &[Call]) -> Result<(), Halt> {
        let mut results = Answers::default();
        for (index, call) in calls.iter().enumerate() {
            // Safe point: every earlier call of the round has its result;
            // this one and the rest are not run (each answered once: the
            // torture run found the earlier ones answered twice).
            if let Some(stop) = self.core.stops.requested() {
                return Err(self.close_round(seq, &calls[index..], results, stop).await);
            }
            let summary = tools::summarize(&call.name, &call.input);
            self.core.hub.publish_tool(ToolEvent {
                tool_use_id: call.id.clone(),
                name: call.name.clone(),
                finished: false,
                summary: summary.clone(),
                is_error: false,
            });
            if let Some(mcp) = self.mcp.tool(&call.name) {
                let (result, is_error) = match self.run_mcp(seq, index, call, &mcp).await? {
                    McpRoundEnd::Answered(result, is_error) => (result, is_error),
                    McpRoundEnd::Stopped(result, stop) => {
                        results.blocks.push(result);
                        let rest = &calls[index + 1..];
                        return Err(self.close_round(seq, rest, results, stop).await);
                    }
                };
                self.core.hub.publish_tool(ToolEvent {
                    tool_use_id: call.id.clone(),
                    name: call.name.clone(),
                    finished: true,
                    summary,
                    is_error,
                });
                results.blocks.push(result);
                continue;
            }
            let tool = ToolName::parse(&call.name);
            let output = match tool {
                None => ToolOutput::error(format!(
                    "No such tool: {}. Available tools: {}.",
                    crate::error::quote(&call.name),
                    ToolName::ALL.map(ToolName::as_str).join(", ")
                )),
                // A tool the agent may not run is refused before anyone is
                // asked: allowing it could not make it run.
                Some(tool) if !self.may_run(tool) => self.not_allowed(tool),
                Some(tool) => match self.permit(tool.into(), call).await? {
                    Err(Unpermitted { end, at }) => {
                        let not_run = interrupted::not_run(tool, &end, &at);
                        results.answer(call, not_run);
                        return Err(self
                            .close_round(seq, &calls[index + 1..], results, end)
                            .await);
                    }
                    Ok(Permitted {
                        refusal: Some(refusal),
                        ..
                    }) => refusal,
                    Ok(permitted) => {
                        let call = &Call {
                            input: permitted.input.clone(),
                            ..call.clone()
                        };
                        let out = if tool == ToolName::TodoWrite {
                            self.write_plan(&call.input).await?
                        } else {
                            let abort = self.core.stops.interrupt.clone();
                            let ran = tokio::select! {
                                biased;
                                _ = abort.cancelled() => None,
                                out = self.run_tool(tool, call, self.core.spool.path(seq, index)) => Some(out),
                            };
                            match ran {
                                Some(out) => out,
                                None => {
                                    let stop = self.core.stops.aborted();
                                    let cut = interrupted::cut_short(tool, &stop);
                                    results.answer(call, cut);
                                    let rest = &calls[index + 1..];
                                    return Err(self.close_round(seq, rest, results, stop).await);
                                }
                            }
                        };
                        let out = self
                            .core
                            .post_tool_hooks(tool.as_str(), &call.id, &call.input, out)
                            .await?;
                        permitted.with_context(out)
                    }
                },
            };
            self.core.hub.publish_tool(ToolEvent {
                tool_use_id: call.id.clone(),
                name: call.name.clone(),
                finished: true,
                summary,
                is_error: output.is_error,
            });
            results.answer(call, output);
        }
        // Turn boundary: results, then whatever arrived meanwhile.
        self.deliver_answers(results).await?;
        self.core.spool.clear(seq);
        self.forget_hook_decisions();
        Ok(())
    }

    /// The round is answered: its hooks' kept decisions are not needed.
    pub(super) fn forget_hook_decisions(&self) {
        if let Err(e) = self.core.store.forget_call_decisions(self.core.record.id) {
            tracing::warn!(agent = %self.core.record.id, error = %e, "cannot forget the hooks' decisions of a round");
        }
    }

    /// Records the results so far and `rest` as not run, then ends the run
    /// with `stop` (or with a store failure).
    pub(super) async fn close_round(
        &mut self,
        seq: u64,
        rest: &[Call],
        mut results: Answers,
        stop: RunEnd,
    ) -> Halt {
        for call in rest {
            let output = match ToolName::parse(&call.name) {
                Some(tool) => interrupted::not_run(tool, &stop, &Before::Start),
                None if self.mcp.tool(&call.name).is_some() => {
                    interrupted::not_run(&call.name, &stop, &Before::Start)
                }
                None => {
                    ToolOutput::error(format!("No such tool: {}", crate::error::quote(&call.name)))
                }
            };
            results.answer(call, output);
        }
        let content = json_bytes(&Value::Array(results.blocks));
        let written = self.write_results(content, results.changes, &[]).await;
        match written {
            Ok(()) => {
                self.core.spool.clear(seq);
                Halt::Stop(stop)
            }
            // Not recorded (the disk is full and a stop came first): the
            // calls are answered as interrupted on the next run, with the
            // output kept in the spool.
            Err(halt) => halt,
        }
    }

    /// After a crash, the newest assistant message may have tool calls
    /// whose results were never recorded. Read-only calls simply run again;
    /// any other call may have changed the world, so it is answered as
    /// interrupted (with the output it had captured) and the model checks
    /// before repeating it (DESIGN §5). Re-sending the request instead
    /// would make the model repeat the side effect.
    pub(super) async fn answer_interrupted_calls(&mut self) -> Result<(), Halt> {
        let Some((seq, last)) = self.messages.last() else {
            return Ok(());
        };
        if last.role != Role::Assistant {
            return Ok(());
        }
        let seq = *seq;
        let content: Vec<Value> = serde_json::from_slice(&last.content_json).unwrap_or_default();
        let calls = calls_of(&content);
        if calls.is_empty() {
            return Ok(());
        }
        tracing::info!(agent = %self.core.record.id, calls = calls.len(), "answering tool calls interrupted by a restart");
        let mut results = Answers::default();
        for (index, call) in calls.iter().enumerate() {
            let output = match ToolName::parse(&call.name) {
                // The same list again: the plan is what the call made it.
                Some(ToolName::TodoWrite) if self.may_run(ToolName::TodoWrite) => {
                    self.write_plan(&call.input).await?
                }
                // Put to the rules (and hooks) again: a deny still holds.
                Some(tool) if tool.is_read_only() && self.may_run(tool) => {
                    match self.permit_again(tool, call).await? {
                        Err(Unpermitted { end, at }) => interrupted::not_run(tool, &end, &at),
                        Ok(Permitted {
                            refusal: Some(refusal),
                            ..
                        }) => refusal,
                        Ok(permitted) => {
                            let call = &Call {
                                input: permitted.input.clone(),
                                ..call.clone()
                            };
                            self.run_tool(tool, call, self.core.spool.path(seq, index))
                                .await
                        }
                    }
                }
                Some(tool) => {
                    let started = if tool == ToolName::Agent {
                        self.child_started_by(&call.id)?
                    } else {
                        None
                    };
                    interrupted::by_restart(tool, self.core.spool.captured(seq, index), started)
                }
                // Even a read-only one: its server is not running now, and
                // the model can call it again.
                None if self.mcp.tool(&call.name).is_some() => {
                    interrupted::mcp_by_restart(&call.name)
                }
                None => {
                    ToolOutput::error(format!("No such tool: {}", crate::error::quote(&call.name)))
                }
            };
            results.answer(call, output);
        }
        self.deliver_answers(results).await?;
        self.forget_hook_decisions();
        self.core.spool.clear(seq);
        Ok(())
    }

    /// The child an interrupted `Agent` call had started, if it got that far.
    pub(super) fn child_started_by(
        &self,
        tool_use_id: &str,
    ) -> Result<Option<AgentRecord>, StoreError> {
        for id in self.core.store.children_of(self.core.record.id)? {
            if let Some(child) = self.core.store.get_agent(id)?
                && !tool_use_id.is_empty()
                && child.parent_tool_use_id == tool_use_id
            {
                return Ok(Some(child));
            }
        }
        Ok(None)
    }

    /// Puts a tool call to its PreToolUse hooks, the permission rules and
    /// the mode: `Permitted` with the input to run (a hook's `updatedInput`
    /// is checked like the model's: by the rules here, by the tool when it
    /// runs) or the refusal; Err(outcome) when the agent was stopped while
    /// it waited for an answer, or a hook stopped it.
    pub(super) async fn permit(
        &mut self,
        tool: ToolRef,
        call: &Call,
    ) -> Result<Result<Permitted, Unpermitted>, Halt> {
        let read_only = matches!(&tool, ToolRef::Mcp(m) if self.mcp.is_read_only(m));
        let hooks = self
            .core
            .pre_tool_hooks(tool.as_str(), &call.id, &call.input)
            .await?;
        if let Some(why) = &hooks.stop {
            let note = json!([{"type": "text", "text": format!("a PreToolUse hook stopped the agent: {why}")}]);
            self.write_entry(Role::System, json_bytes(&note), None, None, &[])
                .await?;
            return Ok(Err(Unpermitted {
                end: RunEnd::Paused,
                at: Before::Hook(why.clone()),
            }));
        }
        // On disk before the call runs: after a crash it is not asked again.
        if let Some(v) = &hooks.verdict {
            let id = self.core.record.id;
            self.core
                .store
                .record_call_decision_durable(id, &call.id, &v.kept())
                .await
                .map_err(Halt::Store)?;
        }
        let input = hooks.input.unwrap_or_else(|| call.input.clone());
        let gate =
            self.core
                .gate_with_hook(&tool, read_only, &input, &call.id, hooks.verdict.as_ref());
        let refusal = match self.core.permit(gate, tool, &input, &call.id).await? {
            Err(end) => {
                return Ok(Err(Unpermitted {
                    end,
                    at: Before::Answer,
                }));
            }
            Ok(r) => r,
        };
        Ok(Ok(Permitted {
            refusal,
            input,
            context: hooks.context,
        }))
    }

    /// `permit` for a call a crash interrupted that runs again (a
    /// read-only one): its PreToolUse hooks' decision, if it was kept
    /// before the crash, stands and they are not asked again; if not,
    /// they are. The rules and the mode decide again either way.
    async fn permit_again(
        &mut self,
        tool: ToolName,
        call: &Call,
    ) -> Result<Result<Permitted, Unpermitted>, Halt> {
        let id = self.core.record.id;
        let Some(kept) = self.core.store.call_decision(id, &call.id)? else {
            return self.permit(tool.into(), call).await;
        };
        let verdict = crate::agent::run::hooks::HookVerdict::from_kept(kept);
        let tool = ToolRef::from(tool);
        let gate = self
            .core
            .gate_with_hook(&tool, false, &call.input, &call.id, Some(&verdict));
        let refusal = match self.core.permit(gate, tool, &call.input, &call.id).await? {
            Err(end) => {
                return Ok(Err(Unpermitted {
                    end,
                    at: Before::Answer,
                }));
            }
            Ok(r) => r,
        };
        Ok(Ok(Permitted {
            refusal,
            input: call.input.clone(),
            context: Vec::new(),
        }))
    }

    pub(super) fn may_run(&self, tool: ToolName) -> bool {
        self.allowed_tools
            .as_ref()
            .is_none_or(|allowed| allowed.allows(tool))
    }

    /// The refusal of a tool outside the agent's allowlist.
    pub(super) fn not_allowed(&self, tool: impl std::fmt::Display) -> ToolOutput {
        let allowed = self
            .allowed_tools
            .as_ref()
            .map(|a| a.names())
            .unwrap_or_default();
        ToolOutput::error(if allowed.is_empty() {
            format!("{tool} is not available to this agent; it may use no tools")
        } else {
            format!(
                "{tool} is not available to this agent; it may use: {}",
                allowed.join(", ")
            )
        })
    }

    pub(super) async fn run_tool(&self, tool: ToolName, call: &Call, spool: PathBuf) -> ToolOutput {
        if !self.may_run(tool) {
            return self.not_allowed(tool);
        }
        if tool.is_orchestration() {
            return self
                .core
                .host
                .run_orchestration(OrchestrationCall {
                    caller: &self.core.record,
                    tool,
                    tool_use_id: &call.id,
                    input: &call.input,
                    slot: &self.core.slot,
                    history: &self.messages,
                })
                .await;
        }
        let ctx = self.core.tool_context(spool);
        tools::run_tool(tool, &call.input, &ctx).await
    }
}
