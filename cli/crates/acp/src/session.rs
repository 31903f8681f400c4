//! One ACP session: one agent in the daemon, followed through an Attach
//! stream. The stream's events become `session/update`s; a prompt is a
//! message to the agent, answered when the turn it starts ends; the
//! daemon's permission asks become `session/request_permission`. When
//! the daemon goes away under it, the session outlives it: `follow`
//! attaches again once it is back, and the prompt in flight goes on.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use agentd_shared::proto as pb;
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot, watch};

use super::follow::{Follow, attach, attach_for_replay};
use super::peer::{Peer, RpcError, code};
use super::reconnect::Link;
use super::subagents::Subagents;
use super::tool_calls::ToolCalls;
use agentd_shared::sync::Unpoisoned as _;

/// How a turn ended, as ACP's stop reason, or why it could not end well.
pub type TurnEnd = Result<&'static str, RpcError>;

/// A prompt in flight.
struct Turn {
    done: oneshot::Sender<TurnEnd>,
    /// The agent has been seen running since the prompt was sent.
    started: bool,
}

pub struct Session {
    /// The agent's id: the session's id.
    pub id: String,
    link: Arc<Link>,
    /// Requests up the current attach stream (replaced when the session
    /// attaches again).
    attach: Mutex<mpsc::Sender<pb::AttachRequest>>,
    turn: Mutex<Option<Turn>>,
    /// `session/cancel` came for the prompt in flight.
    cancelled: AtomicBool,
    /// The session follows its agent; false once the daemon could not be
    /// reached again (or the agent is gone): the editor loads it again.
    alive: AtomicBool,
    /// False while the stream is lost and not made again: a prompt waits
    /// for it, so the new stream sees its turn from the start.
    attached: watch::Sender<bool>,
    /// The editor let go (`session/close`, or it went away): the stream's
    /// end is no reason to attach again.
    closed: AtomicBool,
    /// Permission asks put to the editor and not answered yet (by the
    /// daemon's request id): an attachment made again shows them again.
    asking: Mutex<HashSet<String>>,
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
        link: &Arc<Link>,
        peer: Peer,
        agent: &pb::Agent,
        start: Start,
    ) -> Result<Arc<Session>, RpcError> {
        let from_seq = match start {
            Start::Replay => 0,
            Start::Live => agent.transcript_len,
        };
        let generation = link.generation();
        let (tx, events) = match start {
            Start::Replay => attach_for_replay(link.client(), &agent.id).await?,
            Start::Live => attach(link.client(), &agent.id, from_seq).await?,
        };
        let session = Arc::new(Session {
            id: agent.id.clone(),
            link: link.clone(),
            attach: Mutex::new(tx),
            turn: Mutex::new(None),
            cancelled: AtomicBool::new(false),
            alive: AtomicBool::new(true),
            closed: AtomicBool::new(false),
            attached: watch::Sender::new(true),
            asking: Mutex::new(HashSet::new()),
            rejected: Mutex::new(Default::default()),
            peer: peer.clone(),
            // The editor has it: from the list it resumed or loaded the
            // session from, or from the update sent before a replay.
            title: Mutex::new(super::info::title(agent).map(str::to_string)),
        });
        let (ready_tx, ready_rx) = oneshot::channel();
        let subagents = Subagents::start(link.clone(), peer.clone(), &agent.id);
        let calls = ToolCalls::new(agent.cwd.clone().into(), subagents);
        let follow = Follow::new(session.clone(), peer, start, ready_tx, calls, from_seq);
        tokio::spawn(follow.run(events, generation));
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
        let mut shown = self.title.locked();
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
        if self.turn.locked().is_some() {
            return Err(RpcError::invalid_params(format!(
                "{what} cannot change while a prompt runs in this session: wait for the turn to end (or cancel it), then change it"
            )));
        }
        Ok(())
    }

    pub fn is_alive(&self) -> bool {
        self.alive.load(Ordering::SeqCst)
    }

    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }

    pub fn link(&self) -> &Arc<Link> {
        &self.link
    }

    /// Where requests up the stream go now.
    pub fn attach_sender(&self) -> mpsc::Sender<pb::AttachRequest> {
        self.attach.locked().clone()
    }

    /// The stream was lost: prompts wait for the next one.
    pub fn detached(&self) {
        self.attached.send_replace(false);
    }

    /// The session attached again: requests go up the new stream.
    pub fn attached_again(&self, tx: mpsc::Sender<pb::AttachRequest>) {
        *self.attach.locked() = tx;
        self.attached.send_replace(true);
    }

    /// Waits while the stream is being made again; false if the session
    /// ended meanwhile.
    async fn attached(&self) -> bool {
        let mut attached = self.attached.subscribe();
        loop {
            if !self.is_alive() {
                return false;
            }
            if *attached.borrow_and_update() {
                return true;
            }
            if attached.changed().await.is_err() {
                return self.is_alive();
            }
        }
    }

    /// Marks ask `request_id` as put to the editor; false if it already was.
    pub fn asking(&self, request_id: &str) -> bool {
        self.asking.locked().insert(request_id.to_string())
    }

    /// The editor answered ask `request_id`.
    pub fn answered(&self, request_id: &str) {
        self.asking.locked().remove(request_id);
    }

    pub fn rejects_always(&self, tool: &str) -> bool {
        self.rejected.locked().contains(tool)
    }

    pub fn reject_always(&self, tool: &str) {
        self.rejected.locked().insert(tool.to_string());
    }

    /// Sends `text` to the agent and waits for the turn it starts (or
    /// joins) to end.
    pub async fn prompt(&self, text: String) -> TurnEnd {
        if !self.is_alive() {
            return Err(RpcError::session_not_found(&self.id));
        }
        let (tx, rx) = oneshot::channel();
        {
            let mut turn = self.turn.locked();
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
        let sent = self.send(text).await;
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
                    self.interrupt().await;
                }
            }
            Err(status) => {
                self.turn.locked().take();
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

    /// SendMessage; once more on a new connection if the daemon was not
    /// there to take it (it is being restarted).
    async fn send(
        &self,
        text: String,
    ) -> Result<tonic::Response<pb::SendMessageResponse>, tonic::Status> {
        let gone = || tonic::Status::not_found(format!("session {} is gone", self.id));
        if !self.attached().await {
            return Err(gone());
        }
        let request = pb::SendMessageRequest {
            id: self.id.clone(),
            message: text,
            ..Default::default()
        };
        let generation = self.link.generation();
        let sent = self.link.client().send_message(request.clone()).await;
        match sent {
            Err(s) if s.code() == tonic::Code::Unavailable => {
                let client = self
                    .link
                    .reconnect(generation)
                    .await
                    .map_err(|e| tonic::Status::unavailable(e.0))?;
                if !self.attached().await {
                    return Err(gone());
                }
                client.clone().send_message(request).await
            }
            other => other,
        }
    }

    fn mark_started(&self) {
        if let Some(turn) = self.turn.locked().as_mut() {
            turn.started = true;
        }
    }

    /// `session/cancel`: the turn stops now (an interrupt), and the prompt
    /// answers `cancelled`.
    pub async fn cancel(&self) {
        if self.turn.locked().is_none() {
            return;
        }
        self.cancelled.store(true, Ordering::SeqCst);
        self.interrupt().await;
    }

    async fn interrupt(&self) {
        if let Err(status) = self
            .link
            .client()
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
        self.closed.store(true, Ordering::SeqCst);
        if let Some(turn) = self.turn.locked().take() {
            let _ = turn.done.send(Ok("cancelled"));
        }
        let _ = self
            .attach_sender()
            .send(pb::AttachRequest {
                request: Some(pb::attach_request::Request::Detach(pb::Detach {})),
            })
            .await;
    }

    /// The agent's status changed: ends the prompt in flight once the
    /// turn it started is over. `restarted`: the first status on an
    /// attachment made again after the daemon went away.
    pub fn status_changed(&self, change: &pb::StatusChange, restarted: bool) {
        let status = pb::AgentStatus::try_from(change.status).unwrap_or_default();
        let live = matches!(
            status,
            pb::AgentStatus::Pending | pb::AgentStatus::Running | pb::AgentStatus::Waiting
        );
        let mut guard = self.turn.locked();
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
        let end = match status {
            // agentd is stopping: the agent resumes when it is back, and
            // the turn goes on on the attachment made then.
            pb::AgentStatus::Interrupted if !restarted => return,
            pb::AgentStatus::Interrupted => Err(RpcError::new(
                code::INTERNAL,
                format!(
                    "agentd restarted without resuming agent {} (resume_on_start is off, or its resume is blocked: `agentctl show` says why); send a prompt to continue it",
                    self.id
                ),
            )),
            _ => stop_reason(status, change, self.cancelled.load(Ordering::SeqCst)),
        };
        if let Some(turn) = guard.take() {
            let _ = turn.done.send(end);
        }
    }

    /// The session cannot follow its agent any more (`why`): it is gone,
    /// and a prompt in flight fails.
    pub fn attachment_ended(&self, why: &str) {
        self.alive.store(false, Ordering::SeqCst);
        // Prompts waiting for the stream learn the session ended.
        self.attached.send_replace(false);
        if let Some(turn) = self.turn.locked().take() {
            let _ = turn.done.send(Err(RpcError::new(code::INTERNAL, why)));
        }
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
        _ => Err(RpcError::new(
            code::INTERNAL,
            format!(
                "the agent failed: {}",
                change.error.chars().take(500).collect::<String>()
            ),
        )),
    }
}

pub fn update(peer: &Peer, session: &str, update: Value) {
    peer.notify(
        "session/update",
        json!({"sessionId": session, "update": update}),
    );
}
