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
use super::updates;
use crate::autostart::Client;

/// How a turn ended, as ACP's stop reason, or why it could not end well.
pub type TurnEnd = Result<&'static str, RpcError>;

/// Context window reported in `usage_update` (the daemon does not know
/// the model's; Anthropic's and most current models' is this size).
const CONTEXT_WINDOW: u64 = 200_000;

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
        });
        let (ready_tx, ready_rx) = oneshot::channel();
        tokio::spawn(follow(session.clone(), events, peer, start, ready_tx));
        ready_rx
            .await
            .map_err(|_| RpcError::new(code::INTERNAL, "the daemon ended the attachment"))?;
        Ok(session)
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
                if !r.into_inner().revived {
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
) {
    let mut ready = Some(ready);
    // Text of the response in progress was streamed as deltas.
    let mut streamed = false;
    let mut tasks = updates::Tasks::default();
    // Permission asks that came with the history wait for the answer to
    // load/resume/new to be sent first.
    let mut early_asks = Vec::new();
    // Each attempt at a response is a message of its own: a retried
    // response's text does not run on from the discarded one's.
    let mut attempt = 0u64;
    let id = session.id.clone();
    while let Ok(Some(event)) = events.message().await {
        let Some(event) = event.event else { continue };
        match event {
            Event::Entry(entry) => {
                let content: Vec<Value> =
                    serde_json::from_slice(&entry.content_json).unwrap_or_default();
                let role = match pb::Role::try_from(entry.role).unwrap_or_default() {
                    pb::Role::User => "user",
                    pb::Role::Assistant => "assistant",
                    _ => "system",
                };
                if ready.is_some() {
                    // History.
                    if start == Start::Replay {
                        for u in updates::replay(role, &content, &mut tasks) {
                            update(&peer, &id, u);
                        }
                    }
                    continue;
                }
                match role {
                    "assistant" => {
                        for block in &content {
                            match block["type"].as_str().unwrap_or_default() {
                                "text" if !streamed => update(
                                    &peer,
                                    &id,
                                    updates::chunk(
                                        "agent_message_chunk",
                                        block["text"].as_str().unwrap_or_default(),
                                    ),
                                ),
                                "tool_use" => {
                                    update(&peer, &id, updates::tool_call(block, "pending"))
                                }
                                _ => {}
                            }
                        }
                        streamed = false;
                        attempt += 1;
                        if let Some(usage) = &entry.usage {
                            update(&peer, &id, updates::usage_update(usage, CONTEXT_WINDOW));
                        }
                    }
                    "user" => {
                        for block in &content {
                            match block["type"].as_str().unwrap_or_default() {
                                "tool_result" => update(&peer, &id, tasks.result(block)),
                                // A background child's notification ends its call.
                                "text" => {
                                    if let Some(u) = tasks
                                        .notification(block["text"].as_str().unwrap_or_default())
                                    {
                                        update(&peer, &id, u);
                                    }
                                }
                                _ => {}
                            }
                        }
                    }
                    _ => {}
                }
            }
            Event::Delta(delta) => match delta.delta {
                Some(pb::content_delta::Delta::Text(text)) => {
                    streamed = true;
                    let mut u = updates::chunk("agent_message_chunk", &text);
                    u["messageId"] = json!(format!("{id}-{attempt}"));
                    update(&peer, &id, u);
                }
                Some(pb::content_delta::Delta::Thinking(text)) => {
                    let mut u = updates::chunk("agent_thought_chunk", &text);
                    u["messageId"] = json!(format!("{id}-{attempt}-thinking"));
                    update(&peer, &id, u);
                }
                _ => {}
            },
            Event::Tool(tool) if tool.phase == pb::tool_activity::Phase::Started as i32 => {
                update(
                    &peer,
                    &id,
                    updates::status_update(&tool.tool_use_id, "in_progress"),
                );
            }
            Event::Retry(_) => {
                attempt += 1;
                streamed = false;
            }
            Event::Status(change) => {
                if let Some(ready) = ready.take() {
                    let _ = ready.send(());
                    // The response to new/load/resume goes out first.
                    tokio::task::yield_now().await;
                    for ask in early_asks.drain(..) {
                        tokio::spawn(super::permission::ask(
                            peer.clone(),
                            session.clone(),
                            session.attach.clone(),
                            ask,
                        ));
                    }
                }
                session.status_changed(&change);
            }
            Event::PermissionRequest(ask) if !ask.resolved => {
                if ready.is_some() {
                    early_asks.push(ask);
                } else {
                    tokio::spawn(super::permission::ask(
                        peer.clone(),
                        session.clone(),
                        session.attach.clone(),
                        ask,
                    ));
                }
            }
            _ => {}
        }
    }
    session.alive.store(false, Ordering::SeqCst);
    if let Some(turn) = session
        .turn
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .take()
    {
        let _ = turn.done.send(Err(RpcError::new(
            code::INTERNAL,
            "the daemon ended the attachment (is agentd stopping?)",
        )));
    }
}
