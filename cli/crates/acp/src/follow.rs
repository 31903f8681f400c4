//! Following one session's agent through its Attach stream: the
//! stream's events become `session/update`s (history replayed or skipped,
//! then live), the daemon's asks become `session/request_permission`, and
//! the status ends the prompt in flight. When the stream is lost because
//! the daemon stopped or died, following goes on on a new attachment from
//! the entry after the last one shown (`resume`): the editor sees the turn
//! in flight complete, each entry once.

use std::sync::Arc;

use agentd_shared::proto as pb;
use pb::attach_event::Event;
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};
use tonic::Streaming;

use super::connections::Connections;
use super::peer::{Peer, RpcError, code};
use super::reconnect::Backoff;
use super::resume::{Resume, Text};
use super::session::{Session, Start, update};
use super::tool_calls::{Beside, ToolCalls};
use super::updates;
use super::usage::UsageShown;
use crate::autostart::Client;

/// How long a turn's answer waits for its subagents' progress to arrive.
const SUBAGENTS_CATCH_UP: std::time::Duration = std::time::Duration::from_secs(2);

/// Attach calls refused by a daemon that answers, before giving up.
const ATTACH_TRIES: u32 = 20;

/// Attaches to agent `id` from entry `from_seq`: where requests go up the
/// stream, and its events.
pub async fn attach(
    client: Client,
    id: &str,
    from_seq: u64,
) -> Result<(mpsc::Sender<pb::AttachRequest>, Streaming<pb::AttachEvent>), RpcError> {
    let mut client = client;
    Ok(agentd_shared::attach::open(&mut client, id, from_seq, 16).await?)
}

/// Attaches to agent `id` for a replay: its whole history as it sees it
/// now (a rewind's turns left out, DESIGN §23).
pub async fn attach_for_replay(
    client: Client,
    id: &str,
) -> Result<(mpsc::Sender<pb::AttachRequest>, Streaming<pb::AttachEvent>), RpcError> {
    let mut client = client;
    Ok(agentd_shared::attach::open_as_seen(&mut client, id, 16).await?)
}

/// What following the attach stream keeps from one event to the next.
pub struct Follow {
    session: Arc<Session>,
    peer: Peer,
    start: Start,
    /// Taken when the history is through, to tell `open` it can answer.
    ready: Option<oneshot::Sender<()>>,
    /// The tool calls shown, until each ends.
    calls: ToolCalls,
    /// The proxy's connections shown as calls, until each ends.
    connections: Connections,
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
    /// How far the editor has seen the agent.
    resume: Resume,
    /// Attached again after the daemon went away, until the first status.
    restarted: bool,
    /// The context and cost the editor is shown.
    usage: UsageShown,
}

impl Follow {
    pub fn new(
        session: Arc<Session>,
        peer: Peer,
        start: Start,
        ready: oneshot::Sender<()>,
        calls: ToolCalls,
        from_seq: u64,
    ) -> Follow {
        Follow {
            session,
            peer,
            start,
            ready: Some(ready),
            calls,
            connections: Connections::default(),
            early_asks: Vec::new(),
            attempt: 0,
            plan: Vec::new(),
            resume: Resume::new(from_seq),
            restarted: false,
            usage: UsageShown::default(),
        }
    }

    /// Follows the agent until the editor lets go, attaching again each
    /// time the stream is lost (the daemon stopped or died), from the
    /// entry after the last one shown; ends the session when the daemon
    /// does not come back. `generation`: the link's client the stream is on.
    pub async fn run(mut self, mut events: Streaming<pb::AttachEvent>, mut generation: u64) {
        let why = loop {
            let lost = loop {
                // The editor is written what came before more is taken (a
                // replay must not queue whole in memory).
                self.peer.room().await;
                match events.message().await {
                    Ok(Some(pb::AttachEvent { event: Some(e) })) => self.event(e).await,
                    Ok(Some(_)) => {}
                    Ok(None) => break None,
                    Err(status) => break Some(status),
                }
            };
            if self.session.is_closed() {
                break "the session was closed".to_string();
            }
            if let Some(s) = lost.filter(|s| s.code() == tonic::Code::NotFound) {
                break format!("agentd: {}", s.message());
            }
            tracing::info!(session = %self.session.id, next = self.resume.next_seq(), "the attachment was lost; attaching again");
            match self.attach_again(generation).await {
                Ok((again, on)) => (events, generation) = (again, on),
                Err(why) => break why,
            }
        };
        self.calls.subagents().stop();
        for u in self.calls.turn_ended() {
            self.update(u);
        }
        for u in self.connections.turn_ended() {
            self.update(u);
        }
        self.session.attachment_ended(&why);
    }

    /// A new attachment from where the editor is: a daemon that answers
    /// (waited for, see `reconnect`), then Attach from the next entry.
    async fn attach_again(
        &mut self,
        failed: u64,
    ) -> Result<(Streaming<pb::AttachEvent>, u64), String> {
        self.resume.lost();
        self.session.detached();
        let link = self.session.link().clone();
        let mut failed = failed;
        for n in 0..ATTACH_TRIES {
            link.reconnect(failed).await.map_err(|e| e.0)?;
            failed = link.generation();
            match attach(link.client(), &self.session.id, self.resume.next_seq()).await {
                Ok((tx, events)) => {
                    self.session.attached_again(tx);
                    self.restarted = true;
                    return Ok((events, failed));
                }
                Err(s) if s.code == code::RESOURCE_NOT_FOUND => return Err(s.message),
                Err(s) => {
                    tracing::debug!(session = %self.session.id, "attach: {}", s.message);
                    tokio::time::sleep(Backoff::DAEMON.pause(n)).await;
                }
            }
        }
        Err(format!(
            "agentd is back but refuses to attach session {}",
            self.session.id
        ))
    }

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
            Event::Connection(c) if self.ready.is_none() => {
                if let Some(u) = self.connections.update(&c) {
                    self.update(u);
                }
            }
            Event::Retry(_) => {
                self.attempt += 1;
                self.resume.retried();
            }
            Event::Status(change) => self.status(&change).await,
            // Attached again: a plan changed while the daemon was away is sent.
            Event::Agent(agent) if self.restarted && agent.plan != self.plan => {
                self.update(updates::plan(&agent.plan));
                self.plan = agent.plan;
            }
            Event::Agent(agent) => self.plan = agent.plan,
            Event::Plan(update) if self.ready.is_some() => self.plan = update.items,
            Event::Plan(update) => {
                self.update(updates::plan(&update.items));
                self.plan = update.items;
            }
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
        if !self.resume.entry(entry.seq) {
            return;
        }
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
            if let Some(usage) = entry.usage.as_ref().filter(|_| role == "assistant") {
                self.usage.response(usage, false);
            }
            if self.start == Start::Replay {
                for u in self.calls.replay(role, &content, Beside::of(entry)) {
                    self.update(u);
                }
            }
            return;
        }
        match role {
            "assistant" => self.assistant_entry(&content, entry.usage.as_ref()),
            "user" => self.user_entry(&content, Beside::of(entry)),
            _ => {}
        }
    }

    /// The text not streamed already, the tool calls, the usage.
    fn assistant_entry(&mut self, content: &[Value], usage: Option<&pb::Usage>) {
        let text: String = content
            .iter()
            .filter(|b| b["type"] == "text")
            .filter_map(|b| b["text"].as_str())
            .collect();
        let show = match self.resume.response(&text) {
            Text::Streamed => false,
            Text::Show { new_message } => {
                self.attempt += u64::from(new_message);
                true
            }
        };
        for block in content {
            match block["type"].as_str().unwrap_or_default() {
                "text" if show => self.update(updates::chunk(
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
        self.attempt += 1;
        if let Some(u) = usage.and_then(|usage| self.usage.response(usage, true)) {
            self.update(u);
        }
    }

    /// Tool results, and the notifications that end background children's calls.
    fn user_entry(&mut self, content: &[Value], beside: Beside<'_>) {
        for block in content {
            match block["type"].as_str().unwrap_or_default() {
                "tool_result" => {
                    let u = self.calls.result(block, beside);
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
        match delta.delta {
            Some(pb::content_delta::Delta::Text(text)) => {
                // Cut off with the daemon: this is the revived turn's response.
                if self.resume.delta(&text) {
                    self.attempt += 1;
                }
                let attempt = self.attempt;
                let mut u = updates::chunk("agent_message_chunk", &text);
                u["messageId"] = json!(format!("{id}-{attempt}"));
                self.update(u);
            }
            Some(pb::content_delta::Delta::Thinking(text)) => {
                let attempt = self.attempt;
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
        let history_through = self.ready.is_some();
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
        // before the prompt is answered — except while agentd stops: the
        // agent resumes when it is back, and its calls get their results.
        let restarted = std::mem::take(&mut self.restarted);
        let status = pb::AgentStatus::try_from(change.status).unwrap_or_default();
        let stopping = status == pb::AgentStatus::Interrupted && !restarted;
        let turn_ended = !stopping
            && !matches!(
                status,
                pb::AgentStatus::Pending | pb::AgentStatus::Running | pb::AgentStatus::Waiting
            );
        if turn_ended {
            self.calls.subagents().settle(SUBAGENTS_CATCH_UP).await;
            for u in self.calls.turn_ended() {
                self.update(u);
            }
            for u in self.connections.turn_ended() {
                self.update(u);
            }
        }
        // The window and cost as they are now, before the prompt's answer.
        if history_through || turn_ended {
            let client = self.session.link().client();
            if let Some(u) = self.usage.refresh(client, &self.session.id).await {
                self.update(u);
            }
        }
        self.session.status_changed(change, restarted);
    }

    /// Asks the editor, in a task of its own; the answer goes up the
    /// attach stream.
    fn ask(&self, ask: pb::PermissionRequest) {
        // Shown again on an attachment made again: the editor has it.
        if !self.session.asking(&ask.request_id) {
            return;
        }
        tokio::spawn(super::permission::ask(
            self.peer.clone(),
            self.session.clone(),
            self.calls.subagents().clone(),
            ask,
        ));
    }
}
