//! An agent run by another coding agent over ACP (DESIGN §19): agentd is
//! its client and supervisor. The run takes the agent's process from where
//! it waits between runs (or starts it, reopening the session its record
//! names), sends the messages waiting for it as one prompt at a time, and
//! records what the agent does (`turn`), answering its permission requests
//! as agentd's own asks (`asks`); its process is `live`'s, its private
//! home `home`'s.
//!
//! The record says what was sent (`ExternalRun::sent_through`, written
//! before the prompt goes) and whether a turn is open, so a turn cut short
//! by a crash — the agent's or the daemon's — is neither sent again nor
//! lost: the reopened session is told it was interrupted and goes on.
//!
//! A stop: an interrupt, cancel or shutdown sends `session/cancel` and
//! waits [`CANCEL_GRACE`] for the turn to end (then the process is
//! killed); a pause lets the turn end first.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::time::Instant;

pub mod asks;
pub mod home;
pub mod live;
mod turn;

use live::{LiveAgent, ParkedProcess, StartError, explain};
use turn::TurnState;

use super::run::{Finished, Halt, RunCore, RunEnd};
use crate::acp_client::wire::{PromptEnd, Update};
use crate::acp_client::{CallError, Incoming, RpcError};
use crate::config::external_agents::{ExternalAgentDef, ExternalSandbox};
use crate::domain::{
    ExternalAgentName, ExternalRun, Outcome, ResumeBlocked, ResumeBlockedReason, Role, SandboxMode,
    Status, TranscriptEntry,
};
use crate::mcp::ServerDef;

/// How long a cancelled turn may take to end before the process is killed.
const CANCEL_GRACE: Duration = Duration::from_secs(10);
/// Times a run starts the agent's process again after it died mid-turn.
const MAX_RESTARTS: u32 = 2;

/// What the prompt of a turn cut short says.
pub const INTERRUPTED_NOTE: &str = "[agentd] Your previous turn was cut short (your process or the supervisor restarted) before it ended. Continue where you left off; check the state of the files first.";

/// What an external agent's run needs besides a loop's own setup.
pub struct ExternalSetup {
    pub def: ExternalAgentDef,
    /// Where its process waits between runs.
    pub slot: Arc<ParkedProcess>,
    /// Its MCP servers, passed in its session.
    pub mcp: Vec<ServerDef>,
    /// Where its private home is made (a built-in entry's), for this
    /// agent alone: `home::root`.
    pub homes: std::path::PathBuf,
}

/// How one prompt turn ended.
enum TurnEnd {
    /// The agent answered the prompt.
    Ended,
    /// Stopped from outside (the turn was cancelled).
    Stopped(RunEnd),
    /// The process died (or broke the protocol) mid-turn.
    Died(String),
    /// The agent refused the prompt.
    Failed(String),
}

/// The external driver: a run core, for an agent another coding agent
/// answers for.
pub struct ExternalDriver {
    pub(super) core: RunCore,
}

impl ExternalDriver {
    pub fn new(core: RunCore) -> ExternalDriver {
        ExternalDriver { core }
    }

    /// Runs the agent until it has answered every message, stops or
    /// pauses; the final state is returned for the supervisor to record.
    pub async fn run(mut self, setup: ExternalSetup) -> Finished {
        let driven = self.drive(setup).await;
        self.core.finish(driven).await
    }

    /// The record's ACP session state (made for a record without one).
    fn external(&mut self, name: &ExternalAgentName) -> &mut ExternalRun {
        self.core
            .record
            .external
            .get_or_insert_with(|| ExternalRun::new(name.clone()))
    }

    /// Runs the external agent until it has answered every message.
    async fn drive(&mut self, setup: ExternalSetup) -> Result<RunEnd, Halt> {
        self.core.set_status(Status::Running).await?;
        let mut live = match self.live_agent(&setup).await? {
            Ok(live) => live,
            Err(end) => return Ok(end),
        };
        let mut restarts = 0;
        // None until a turn ran: a run that sent nothing has no answer of
        // its own and must not replace the one an earlier run produced.
        let mut answer: Option<String> = None;
        let end = loop {
            let name = &setup.def.name;
            // The agent's own requests are its to send: a budget stops the
            // next turn (its message stays in the inbox).
            if let Some(why) = self.core.host.budget_spent(&self.core.record) {
                break RunEnd::BudgetExhausted(why);
            }
            let prompt = match self.next_prompt(name).await {
                Ok(Some(p)) => p,
                Ok(None) => {
                    break match answer.take() {
                        Some(text) => RunEnd::Completed(text),
                        None => RunEnd::Unchanged(self.status_before()),
                    };
                }
                Err(halt) => {
                    setup.slot.put(live).await;
                    return Err(halt);
                }
            };
            let mut turn = TurnState::default();
            let ran = self.prompt_turn(&mut live, &mut turn, prompt, name).await;
            answer = Some(std::mem::take(&mut turn.answer));
            match ran {
                Ok(TurnEnd::Ended) => {
                    if let Some(stop) = self.core.stops.requested() {
                        break stop;
                    }
                }
                Ok(TurnEnd::Stopped(stop)) => break stop,
                Ok(TurnEnd::Failed(why)) => break RunEnd::Failed(why),
                Ok(TurnEnd::Died(why)) => {
                    live.end().await;
                    restarts += 1;
                    if restarts > MAX_RESTARTS {
                        return Ok(RunEnd::Failed(format!(
                            "{} died {restarts} times in one run; last: {why}",
                            setup.def.name
                        )));
                    }
                    tracing::warn!(agent = %self.core.record.id, why, "external agent died mid-turn; starting it again");
                    live = match self.live_agent(&setup).await? {
                        Ok(live) => live,
                        Err(end) => return Ok(end),
                    };
                }
                Err(halt) => {
                    live.end().await;
                    return Err(halt);
                }
            }
        };
        match end {
            RunEnd::Completed(_)
            | RunEnd::Paused
            | RunEnd::Halted
            | RunEnd::Unchanged(_)
            | RunEnd::BudgetExhausted(_) => setup.slot.put(live).await,
            _ => live.end().await,
        }
        Ok(end)
    }

    /// Where an agent goes back to after a run that sent it nothing: as it
    /// was when its last run ended.
    fn status_before(&self) -> Status {
        match self.core.record.outcome {
            Some(Outcome::Completed(_)) => Status::Completed,
            _ => Status::Paused,
        }
    }

    /// The agent's process with its session open: the one waiting in its
    /// slot, or a new one. Ok(Err(end)) when it cannot run (the record
    /// says why when its session cannot be reopened).
    async fn live_agent(
        &mut self,
        setup: &ExternalSetup,
    ) -> Result<Result<LiveAgent, RunEnd>, Halt> {
        if let Some(live) = setup.slot.take().await {
            return Ok(Ok(live));
        }
        let session = self.external(&setup.def.name).session_id.clone();
        let confined = setup.def.sandbox == ExternalSandbox::Agent
            && self.core.record.effective_sandbox() != SandboxMode::Off;
        let def = match home::with_home(&setup.def, &setup.homes, confined) {
            Ok(def) => def,
            Err(why) => return Ok(Err(RunEnd::Failed(why))),
        };
        let mut ctx = self
            .core
            .tool_context(self.core.spool.path(self.core.next_seq, 0));
        // Its own namespace (the live process may outlive this run), its
        // connections decided as the run's are.
        ctx.processes = Arc::new(self.core.processes.sibling());
        if let Some(policy) = ctx.sandbox.as_mut() {
            policy.also_writable = def.writable.clone();
        }
        let started = tokio::select! {
            started = LiveAgent::start(&def, &ctx, &session, &setup.mcp) => started,
            stop = self.core.stops.any() => return Ok(Err(stop)),
        };
        match started {
            Ok((live, notes)) => {
                let ext = self.external(&setup.def.name);
                ext.session_id = live.session_id.clone();
                ext.reopenable = live.info.can_reopen();
                for note in notes {
                    if !self.core.record.mcp_notes.contains(&note) {
                        self.core.record.mcp_notes.push(note);
                    }
                }
                self.core.write_record().await?;
                Ok(Ok(live))
            }
            Err(StartError::CannotReopen(why)) => {
                self.core.record.resume_blocked = Some(ResumeBlocked {
                    reason: ResumeBlockedReason::ExternalAgentCannotResume,
                    detail: why.clone(),
                });
                tracing::warn!(agent = %self.core.record.id, why, "external agent's session cannot be reopened");
                Ok(Err(RunEnd::Interrupted))
            }
            Err(StartError::Failed(why)) => Ok(Err(RunEnd::Failed(why))),
        }
    }

    /// The next prompt: a note when a turn was cut short, else the user
    /// messages not yet sent (the inbox delivered first). Marked sent,
    /// durably, before it goes.
    async fn next_prompt(&mut self, name: &ExternalAgentName) -> Result<Option<Vec<String>>, Halt> {
        let text = if self.external(name).turn_open {
            vec![INTERRUPTED_NOTE.to_string()]
        } else {
            self.core.deliver(Vec::new(), Vec::new()).await?;
            let from = self.external(name).sent_through;
            let unsent = self
                .core
                .store
                .transcript(self.core.record.id, from, usize::MAX)
                .map_err(Halt::Store)?;
            let text = prompt_text(&unsent);
            if text.is_empty() {
                return Ok(None);
            }
            if let Some(turn) = unsent
                .iter()
                .rev()
                .find(|e| crate::domain::turns::turn_text(e).is_some())
            {
                self.core
                    .checkpoint_turn(turn.seq, turn.role, &turn.content_json)
                    .await;
            }
            text
        };
        let next = self.core.next_seq;
        let ext = self.external(name);
        ext.sent_through = next;
        ext.turn_open = true;
        self.core.write_record().await?;
        Ok(Some(text))
    }

    /// Sends one prompt and records the turn until it ends.
    async fn prompt_turn(
        &mut self,
        live: &mut LiveAgent,
        turn: &mut TurnState,
        prompt: Vec<String>,
        name: &ExternalAgentName,
    ) -> Result<TurnEnd, Halt> {
        live.drain();
        let conn = live.conn.clone();
        let session = live.session_id.clone();
        let blocks: Vec<Value> = prompt
            .into_iter()
            .map(|text| json!({"type": "text", "text": text}))
            .collect();
        let params = json!({"sessionId": session, "prompt": blocks});
        let request = conn.request("session/prompt", params);
        tokio::pin!(request);
        let mut cancelled: Option<(RunEnd, Instant)> = None;
        let mut output_ended = false;
        loop {
            let flush_at = turn.flush_at();
            tokio::select! {
                biased;
                message = live.incoming.recv(), if !output_ended => {
                    // None: the reader stopped; the request's answer says why.
                    let Some(message) = message else {
                        output_ended = true;
                        continue;
                    };
                    if let Some(stop) = self.incoming(turn, &conn, message).await?
                        && cancelled.is_none()
                    {
                        conn.notify("session/cancel", json!({"sessionId": session}));
                        cancelled = Some((stop, Instant::now() + CANCEL_GRACE));
                    }
                }
                answer = &mut request => {
                    // Whatever it wrote before the answer is queued: it
                    // comes first.
                    while let Ok(message) = live.incoming.try_recv() {
                        let _ = self.incoming(turn, &conn, message).await?;
                    }
                    return self.turn_ended(turn, answer, cancelled.map(|c| c.0), live, name).await;
                }
                _ = tokio::time::sleep_until(flush_at.unwrap_or_else(Instant::now)), if flush_at.is_some() => {
                    self.flush_chunks(turn, None, None).await?;
                }
                _ = self.core.stops.interrupt.cancelled(), if cancelled.is_none() => {
                    conn.notify("session/cancel", json!({"sessionId": session}));
                    cancelled = Some((self.core.stops.aborted(), Instant::now() + CANCEL_GRACE));
                }
                _ = self.core.stops.shutdown.cancelled(), if cancelled.is_none() => {
                    conn.notify("session/cancel", json!({"sessionId": session}));
                    cancelled = Some((RunEnd::Interrupted, Instant::now() + CANCEL_GRACE));
                }
                _ = tokio::time::sleep_until(cancelled.as_ref().map_or_else(Instant::now, |c| c.1)), if cancelled.is_some() => {
                    let stop = cancelled.take().map_or(RunEnd::Halted, |c| c.0);
                    self.close_turn(turn, None, "the turn was stopped").await?;
                    return Ok(TurnEnd::Stopped(stop));
                }
            }
        }
    }

    /// Handles one message of the agent's mid-turn; Some(stop) when a
    /// permission ask was cut short by a stop.
    async fn incoming(
        &mut self,
        turn: &mut TurnState,
        conn: &crate::acp_client::Connection,
        message: Incoming,
    ) -> Result<Option<RunEnd>, Halt> {
        match message {
            Incoming::Notification { method, params } if method == "session/update" => {
                match Update::read(&params) {
                    Ok(update) => self.apply_update(turn, update).await?,
                    Err(why) => {
                        tracing::warn!(agent = %self.core.record.id, why, "an external agent's update was not understood");
                    }
                }
                Ok(None)
            }
            Incoming::Notification { .. } => Ok(None),
            Incoming::Request { id, method, params } => {
                if method == "session/request_permission" {
                    return Ok(self.answer_permission(turn, conn, id, &params).await?.err());
                }
                conn.respond(
                    id,
                    Err(RpcError::new(
                        agentd_shared::jsonrpc::code::METHOD_NOT_FOUND,
                        format!("agentd does not offer {}", crate::error::quote(&method)),
                    )),
                );
                Ok(None)
            }
        }
    }

    /// Records how the prompt ended.
    async fn turn_ended(
        &mut self,
        turn: &mut TurnState,
        answer: Result<Value, CallError>,
        stopped: Option<RunEnd>,
        live: &LiveAgent,
        name: &ExternalAgentName,
    ) -> Result<TurnEnd, Halt> {
        match answer {
            Ok(result) => {
                let end = PromptEnd::read(&result);
                self.close_turn(
                    turn,
                    Some(&end),
                    "the agent ended its turn without finishing this call",
                )
                .await?;
                self.core.record.turns += 1;
                // Cut short by a shutdown, the turn is still to be
                // finished: the revived session is told so.
                self.external(name).turn_open = stopped == Some(RunEnd::Interrupted);
                self.core.write_record().await?;
                Ok(match stopped {
                    Some(stop) => TurnEnd::Stopped(stop),
                    None => TurnEnd::Ended,
                })
            }
            Err(CallError::Rpc(e)) => {
                self.close_turn(turn, None, "the prompt failed").await?;
                self.external(name).turn_open = false;
                self.core.write_record().await?;
                Ok(match stopped {
                    Some(stop) => TurnEnd::Stopped(stop),
                    None => TurnEnd::Failed(format!(
                        "the external agent failed the prompt: {}",
                        explain(&CallError::Rpc(e))
                    )),
                })
            }
            Err(CallError::Closed(why)) => {
                let why = format!("{why}{}", live.stderr_hint());
                self.close_turn(turn, None, &format!("the agent's process ended: {why}"))
                    .await?;
                Ok(match stopped {
                    Some(stop) => TurnEnd::Stopped(stop),
                    None => TurnEnd::Died(why),
                })
            }
        }
    }
}

/// The text blocks of user entries, in order (a prompt's blocks).
fn prompt_text(entries: &[TranscriptEntry]) -> Vec<String> {
    let mut parts = Vec::new();
    for entry in entries.iter().filter(|e| e.role == Role::User) {
        let blocks: Value = serde_json::from_slice(&entry.content_json).unwrap_or(Value::Null);
        for block in blocks.as_array().into_iter().flatten() {
            if block["type"] == "text"
                && let Some(t) = block["text"].as_str()
            {
                parts.push(t.to_string());
            }
        }
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::json_bytes;

    fn entry(seq: u64, role: Role, content: Value) -> TranscriptEntry {
        TranscriptEntry {
            seq,
            role,
            content_json: json_bytes(&content),
            created_at_ms: 0,
            usage: None,
            stop_reason: None,
            cache_point: None,
            compact: None,
            file_changes: Vec::new(),
            rule_decisions: Vec::new(),
        }
    }

    #[test]
    fn a_prompt_is_the_text_of_the_user_entries_not_yet_sent() {
        let entries = [
            entry(3, Role::User, json!([{"type": "text", "text": "first"}])),
            entry(4, Role::Assistant, json!([{"type": "text", "text": "no"}])),
            entry(5, Role::System, json!([{"type": "text", "text": "note"}])),
            entry(
                6,
                Role::User,
                json!([{"type": "text", "text": "second"},
                {"type": "tool_result", "tool_use_id": "t", "content": "x"}]),
            ),
        ];
        assert_eq!(prompt_text(&entries), vec!["first", "second"]);
        assert!(prompt_text(&[]).is_empty());
    }
}
