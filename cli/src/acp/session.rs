//! One ACP session: one agent in the daemon, followed through an Attach
//! stream. The stream's events become `session/update`s; a prompt is a
//! message to the agent, answered when the turn it starts ends; the
//! daemon's permission asks become `session/request_permission`.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use agentd_shared::proto as pb;
use pb::attach_event::Event;
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

use super::peer::{Peer, RpcError, code};
use super::subagents::Subagents;
use super::tool_calls::ToolCalls;
use super::updates;
use crate::autostart::Client;

/// How a turn ended, as ACP's stop reason, or why it could not end well.
pub type TurnEnd = Result<&'static str, RpcError>;

/// Context window reported in `usage_update` (the daemon does not know
/// the model's; Anthropic's and most current models' is this size).
const CONTEXT_WINDOW: u64 = 200_000;

/// How long a turn's answer waits for its subagents' progress to arrive.
const SUBAGENTS_CATCH_UP: std::time::Duration = std::time::Duration::from_secs(2);

/// A prompt in flight.
struct Turn {
    done: oneshot::Sender<TurnEnd>,
    /// The agent has been seen running since the prompt was sent.
    started: bool,
}

pub struct Session {
    /// The agent's id: the session's id.
    pub id: String,
    attach: mpsc::Sender<pb::AttachRequest>,
    turn: Mutex<Option<Turn>>,
    /// `session/cancel` came for the prompt in flight.
    cancelled: AtomicBool,
    /// The attach stream still runs; when it ends (the daemon stopped),
    /// the session is gone and the editor must load it again.
    alive: AtomicBool,
    /// Tools the editor chose "always reject" for in this session.
    rejected: Mutex<std::collections::HashSet<String>>,
    peer: Peer,
    /// The title the editor has (None: it has none from this bridge yet).
    title: Mutex<Option<String>>,
}

/// How a session starts following its agent.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Start {
    /// The whole transcript is replayed as updates first (`session/load`).
    Replay,
    /// Only what happens from now on (`session/new`, `session/resume`).
    Live,
}

impl Session {
    /// Attaches to agent `id` and follows it. Returns once the history is
    /// through (replayed or skipped), so the caller can answer.
    pub async fn open(
        client: &Client,
        peer: Peer,
        agent: &pb::Agent,
        start: Start,
    ) -> Result<std::sync::Arc<Session>, RpcError> {
        let (tx, rx) = mpsc::channel(16);
        let from_seq = match start {
            Start::Replay => 0,
            Start::Live => agent.transcript_len,
        };
        tx.send(attach_start(&agent.id, from_seq))
            .await
            .map_err(|_| RpcError::new(code::INTERNAL, "cannot attach"))?;
        let events = client
            .clone()
            .attach(tokio_stream::wrappers::ReceiverStream::new(rx))
            .await?
            .into_inner();
        let session = std::sync::Arc::new(Session {
            id: agent.id.clone(),
            attach: tx,
            turn: Mutex::new(None),
            cancelled: AtomicBool::new(false),
            alive: AtomicBool::new(true),
            rejected: Mutex::new(Default::default()),
            peer: peer.clone(),
            // The editor has it: from the list it resumed or loaded the
            // session from, or from the update sent before a replay.
            title: Mutex::new(super::info::title(agent).map(str::to_string)),
        });
        let (ready_tx, ready_rx) = oneshot::channel();
        let subagents = Subagents::start(client.clone(), peer.clone(), &agent.id);
        let calls = ToolCalls::new(agent.cwd.clone().into(), subagents);
        tokio::spawn(follow(
            session.clone(),
            events,
            peer,
            start,
            ready_tx,
            calls,
        ));
        ready_rx
            .await
            .map_err(|_| RpcError::new(code::INTERNAL, "the daemon ended the attachment"))?;
        Ok(session)
    }

    /// Sends the editor the session's title if it is not the one it has.
    pub fn retitle(&self, agent: &pb::Agent) {
        let Some(title) = super::info::title(agent) else {
            return;
        };
        let mut shown = self.title.lock().unwrap_or_else(|p| p.into_inner());
        if shown.as_deref() != Some(title) {
            *shown = Some(title.to_string());
            update(
                &self.peer,
                &self.id,
                super::info::title_update(title, agent),
            );
        }
    }

    /// Refuses a change the daemon only takes between turns while this
    /// session's prompt runs, in the editor's terms.
    pub fn between_turns(&self, what: &str) -> Result<(), RpcError> {
        if self
            .turn
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_some()
        {
            return Err(RpcError::invalid_params(format!(
                "{what} cannot change while a prompt runs in this session: wait for the turn to end (or cancel it), then change it"
            )));
        }
        Ok(())
    }

    pub fn is_alive(&self) -> bool {
        self.alive.load(Ordering::SeqCst)
    }

    pub fn rejects_always(&self, tool: &str) -> bool {
        self.rejected
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains(tool)
    }

    pub fn reject_always(&self, tool: &str) {
        self.rejected
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(tool.to_string());
    }

    /// Sends `text` to the agent and waits for the turn it starts (or
    /// joins) to end.
    pub async fn prompt(&self, client: &Client, text: String) -> TurnEnd {
        if !self.is_alive() {
            return Err(RpcError::session_not_found(&self.id));
        }
        let (tx, rx) = oneshot::channel();
        {
            let mut turn = self.turn.lock().unwrap_or_else(|p| p.into_inner());
            if turn.is_some() {
                return Err(RpcError::new(
                    code::INVALID_REQUEST,
                    "a prompt is already running in this session; cancel it first",
                ));
            }
            *turn = Some(Turn {
                done: tx,
                started: false,
            });
        }
        self.cancelled.store(false, Ordering::SeqCst);
        let sent = client
            .clone()
            .send_message(pb::SendMessageRequest {
                id: self.id.clone(),
                message: text,
            })
            .await;
        match sent {
            Ok(r) => {
                let r = r.into_inner();
                // The first prompt gave the agent its description.
                if let Some(agent) = &r.agent {
                    self.retitle(agent);
                }
                if !r.revived {
                    // Queued for a turn already running: it is this one.
                    self.mark_started();
                }
                // A cancel that came while the message was on its way found
                // nothing running yet: now there is.
                if self.cancelled.load(Ordering::SeqCst) {
                    self.interrupt(client).await;
                }
            }
            Err(status) => {
                self.turn.lock().unwrap_or_else(|p| p.into_inner()).take();
                return Err(status.into());
            }
        }
        rx.await.unwrap_or_else(|_| {
            Err(RpcError::new(
                code::INTERNAL,
                "the daemon ended the attachment before the turn ended",
            ))
        })
    }

    fn mark_started(&self) {
        if let Some(turn) = self.turn.lock().unwrap_or_else(|p| p.into_inner()).as_mut() {
            turn.started = true;
        }
    }

    /// `session/cancel`: the turn stops now (an interrupt), and the prompt
    /// answers `cancelled`.
    pub async fn cancel(&self, client: &Client) {
        if self
            .turn
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_none()
        {
            return;
        }
        self.cancelled.store(true, Ordering::SeqCst);
        self.interrupt(client).await;
    }

    async fn interrupt(&self, client: &Client) {
        if let Err(status) = client
            .clone()
            .interrupt_agent(pb::InterruptAgentRequest {
                id: self.id.clone(),
            })
            .await
        {
            // Not running any more: the turn ends (or ended) on its own.
            tracing::debug!(session = %self.id, "interrupt: {}", status.message());
        }
    }

    /// `session/close`: the editor lets go; the agent goes on.
    pub async fn close(&self) {
        if let Some(turn) = self.turn.lock().unwrap_or_else(|p| p.into_inner()).take() {
            let _ = turn.done.send(Ok("cancelled"));
        }
        let _ = self
            .attach
            .send(pb::AttachRequest {
                request: Some(pb::attach_request::Request::Detach(pb::Detach {})),
            })
            .await;
    }

    /// The agent's status changed: ends the prompt in flight once the
    /// turn it started is over.
    fn status_changed(&self, change: &pb::StatusChange) {
        let status = pb::AgentStatus::try_from(change.status).unwrap_or_default();
        let live = matches!(
            status,
            pb::AgentStatus::Pending | pb::AgentStatus::Running | pb::AgentStatus::Waiting
        );
        let mut guard = self.turn.lock().unwrap_or_else(|p| p.into_inner());
        let Some(turn) = guard.as_mut() else {
            return;
        };
        if live {
            turn.started = true;
            return;
        }
        if !turn.started {
            return;
        }
        let end = stop_reason(status, change, self.cancelled.load(Ordering::SeqCst));
        if let Some(turn) = guard.take() {
            let _ = turn.done.send(end);
        }
    }

    /// The attach stream ended (the daemon stopped): the session is gone,
    /// and a prompt in flight fails.
    fn attachment_ended(&self) {
        self.alive.store(false, Ordering::SeqCst);
        if let Some(turn) = self.turn.lock().unwrap_or_else(|p| p.into_inner()).take() {
            let _ = turn.done.send(Err(RpcError::new(
                code::INTERNAL,
                "the daemon ended the attachment (is agentd stopping?)",
            )));
        }
    }
}

/// An AttachStart request.
fn attach_start(id: &str, from_seq: u64) -> pb::AttachRequest {
    pb::AttachRequest {
        request: Some(pb::attach_request::Request::Start(pb::AttachStart {
            id: id.to_string(),
            from_seq,
        })),
    }
}

/// ACP's stop reason for how a turn ended.
fn stop_reason(status: pb::AgentStatus, change: &pb::StatusChange, cancelled: bool) -> TurnEnd {
    match status {
        pb::AgentStatus::Completed => Ok("end_turn"),
        pb::AgentStatus::Cancelled => Ok("cancelled"),
        pb::AgentStatus::Paused if cancelled => Ok("cancelled"),
        // Paused by someone else (a terminal): this turn is over.
        pb::AgentStatus::Paused => Ok("end_turn"),
        pb::AgentStatus::Failed if change.error.contains("max_turns") => Ok("max_turn_requests"),
        pb::AgentStatus::Failed if change.error.contains("output limit") => Ok("max_tokens"),
        pb::AgentStatus::Failed if change.error.contains("declined to continue") => Ok("refusal"),
        pb::AgentStatus::Interrupted => Err(RpcError::new(
            code::INTERNAL,
            "agentd stopped in the middle of the turn; the agent resumes when it starts again",
        )),
        _ => Err(RpcError::new(
            code::INTERNAL,
            format!(
                "the agent failed: {}",
                change.error.chars().take(500).collect::<String>()
            ),
        )),
    }
}

fn update(peer: &Peer, session: &str, update: Value) {
    peer.notify(
        "session/update",
        json!({"sessionId": session, "update": update}),
    );
}

/// Follows the attach stream until it ends.
async fn follow(
    session: std::sync::Arc<Session>,
    mut events: tonic::Streaming<pb::AttachEvent>,
    peer: Peer,
    start: Start,
    ready: oneshot::Sender<()>,
    calls: ToolCalls,
) {
    let mut follow = Follow {
        session,
        peer,
        start,
        ready: Some(ready),
        streamed: false,
        calls,
        early_asks: Vec::new(),
        attempt: 0,
        plan: Vec::new(),
    };
    loop {
        // The editor is written what came before more is taken (a replay
        // must not queue whole in memory).
        follow.peer.room().await;
        let Ok(Some(event)) = events.message().await else {
            break;
        };
        let Some(event) = event.event else { continue };
        follow.event(event).await;
    }
    follow.calls.subagents().stop();
    for u in follow.calls.turn_ended() {
        follow.update(u);
    }
    follow.session.attachment_ended();
}

/// What following the attach stream keeps from one event to the next.
struct Follow {
    session: std::sync::Arc<Session>,
    peer: Peer,
    start: Start,
    /// Taken when the history is through, to tell `open` it can answer.
    ready: Option<oneshot::Sender<()>>,
    /// Text of the response in progress was streamed as deltas.
    streamed: bool,
    /// The tool calls shown, until each ends.
    calls: ToolCalls,
    /// Permission asks that came with the history wait for the answer to
    /// load/resume/new to be sent first.
    early_asks: Vec<pb::PermissionRequest>,
    /// Each attempt at a response is a message of its own: a retried
    /// response's text does not run on from the discarded one's.
    attempt: u64,
    /// The agent's plan as the attachment started (changed by any update
    /// that came with the history): a loaded session's is sent after the
    /// replay.
    plan: Vec<pb::PlanItem>,
}

impl Follow {
    fn update(&self, u: Value) {
        update(&self.peer, &self.session.id, u);
    }

    async fn event(&mut self, event: Event) {
        match event {
            Event::Entry(entry) => self.entry(&entry),
            Event::Delta(delta) => self.delta(delta),
            Event::Tool(tool) if tool.phase == pb::tool_activity::Phase::Started as i32 => {
                self.update(updates::status_update(&tool.tool_use_id, "in_progress"));
            }
            Event::Retry(_) => {
                self.attempt += 1;
                self.streamed = false;
            }
            Event::Status(change) => self.status(&change).await,
            Event::Agent(agent) => self.plan = agent.plan,
            Event::Plan(update) if self.ready.is_some() => self.plan = update.items,
            Event::Plan(update) => self.update(updates::plan(&update.items)),
            Event::PermissionRequest(ask) if !ask.resolved => {
                if self.ready.is_some() {
                    self.early_asks.push(ask);
                } else {
                    self.ask(ask);
                }
            }
            _ => {}
        }
    }

    /// A transcript entry: replayed (or skipped) while the history comes,
    /// then what it adds to the updates already streamed.
    fn entry(&mut self, entry: &pb::TranscriptEntry) {
        if let Some(b) = &entry.compact_boundary {
            if self.ready.is_none() || self.start == Start::Replay {
                self.update(updates::compacted(b));
            }
            return;
        }
        let content: Vec<Value> = serde_json::from_slice(&entry.content_json).unwrap_or_default();
        let role = match pb::Role::try_from(entry.role).unwrap_or_default() {
            pb::Role::User => "user",
            pb::Role::Assistant => "assistant",
            _ => "system",
        };
        if self.ready.is_some() {
            // History.
            if self.start == Start::Replay {
                for u in self.calls.replay(role, &content, &entry.file_changes) {
                    self.update(u);
                }
            }
            return;
        }
        match role {
            "assistant" => self.assistant_entry(&content, entry.usage.as_ref()),
            "user" => self.user_entry(&content, &entry.file_changes),
            _ => {}
        }
    }

    /// The text not streamed already, the tool calls, the usage.
    fn assistant_entry(&mut self, content: &[Value], usage: Option<&pb::Usage>) {
        for block in content {
            match block["type"].as_str().unwrap_or_default() {
                "text" if !self.streamed => self.update(updates::chunk(
                    "agent_message_chunk",
                    block["text"].as_str().unwrap_or_default(),
                )),
                "tool_use" => {
                    let u = self.calls.call(block, "pending");
                    self.update(u);
                }
                _ => {}
            }
        }
        self.streamed = false;
        self.attempt += 1;
        if let Some(usage) = usage {
            self.update(updates::usage_update(usage, CONTEXT_WINDOW));
        }
    }

    /// Tool results, and the notifications that end background children's calls.
    fn user_entry(&mut self, content: &[Value], changes: &[pb::FileChange]) {
        for block in content {
            match block["type"].as_str().unwrap_or_default() {
                "tool_result" => {
                    let u = self.calls.result(block, changes);
                    self.update(u);
                }
                // A background child's notification ends its call.
                "text" => {
                    if let Some(u) = self
                        .calls
                        .notification(block["text"].as_str().unwrap_or_default())
                    {
                        self.update(u);
                    }
                }
                _ => {}
            }
        }
    }

    fn delta(&mut self, delta: pb::ContentDelta) {
        let id = &self.session.id;
        let attempt = self.attempt;
        match delta.delta {
            Some(pb::content_delta::Delta::Text(text)) => {
                self.streamed = true;
                let mut u = updates::chunk("agent_message_chunk", &text);
                u["messageId"] = json!(format!("{id}-{attempt}"));
                self.update(u);
            }
            Some(pb::content_delta::Delta::Thinking(text)) => {
                let mut u = updates::chunk("agent_thought_chunk", &text);
                u["messageId"] = json!(format!("{id}-{attempt}-thinking"));
                self.update(u);
            }
            _ => {}
        }
    }

    /// The first status ends the history (a replay's with the plan):
    /// `open` answers, then the asks that came with the history go out.
    async fn status(&mut self, change: &pb::StatusChange) {
        if let Some(ready) = self.ready.take() {
            // A replay ends with the plan as it is now.
            if self.start == Start::Replay && !self.plan.is_empty() {
                self.update(updates::plan(&self.plan));
            }
            let _ = ready.send(());
            // The response to new/load/resume goes out first.
            tokio::task::yield_now().await;
            for ask in std::mem::take(&mut self.early_asks) {
                self.ask(ask);
            }
        }
        // No call runs once the agent does not: each one shown is ended
        // before the prompt is answered.
        let status = pb::AgentStatus::try_from(change.status).unwrap_or_default();
        if !matches!(
            status,
            pb::AgentStatus::Pending | pb::AgentStatus::Running | pb::AgentStatus::Waiting
        ) {
            self.calls.subagents().settle(SUBAGENTS_CATCH_UP).await;
            for u in self.calls.turn_ended() {
                self.update(u);
            }
        }
        self.session.status_changed(change);
    }

    /// Asks the editor, in a task of its own; the answer goes up the
    /// attach stream.
    fn ask(&self, ask: pb::PermissionRequest) {
        tokio::spawn(super::permission::ask(
            self.peer.clone(),
            self.session.clone(),
            self.session.attach.clone(),
            self.calls.subagents().clone(),
            ask,
        ));
    }
}
