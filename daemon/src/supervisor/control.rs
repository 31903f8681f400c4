//! Requests that steer agents: send (queue or revive), pause, cancel
//! (cascading to descendants), remove, and background (release a
//! foreground waiter without disturbing the agent).

use std::sync::Arc;

use uuid::Uuid;

use super::{Supervisor, WaitEnd, short, snapshot_of};
use crate::error::AgentdError;
use crate::store::{AgentRecord, InboxItem, InboxKind, Status, now_ms};

/// Messages larger than this are refused.
pub const MAX_MESSAGE_BYTES: usize = 64 * 1024;

impl Supervisor {
    /// Delivers `message` to an agent: queued for its next turn boundary if
    /// it runs; a paused, completed or interrupted agent is revived for a
    /// new turn. Returns the agent and whether it was revived.
    pub async fn send(
        self: &Arc<Self>,
        query: &str,
        message: &str,
        from: Option<&AgentRecord>,
    ) -> Result<(AgentRecord, bool), AgentdError> {
        if message.trim().is_empty() {
            return Err(AgentdError::invalid("the message is empty"));
        }
        if message.len() > MAX_MESSAGE_BYTES {
            return Err(AgentdError::invalid(format!(
                "the message is {} bytes; the limit is {MAX_MESSAGE_BYTES} bytes (64 KiB)",
                message.len()
            )));
        }
        let record = self.resolve(query)?;
        let status = record.status();
        if matches!(status, Status::Failed | Status::Cancelled) {
            return Err(AgentdError::precondition(format!(
                "agent {} is {}; {} agents cannot be continued — start a new one with `agentctl run` (its transcript stays readable with `agentctl log {}`)",
                short(&record),
                status.as_str(),
                status.as_str(),
                short(&record)
            )));
        }
        if !record.resume_blocked_reason.is_empty() {
            return Err(AgentdError::precondition(format!(
                "agent {} cannot be resumed ({}); start a new one instead",
                short(&record),
                record.resume_blocked_reason
            )));
        }
        let text = match from {
            Some(sender) => format!(
                "<message from=\"{}\">\n{message}\n</message>",
                sender.uuid()
            ),
            None => message.to_string(),
        };
        let item = InboxItem {
            kind: InboxKind::Message as i32,
            text,
            from: from.map(|s| s.id.clone()).unwrap_or_default(),
            created_at_ms: now_ms(),
        };
        let id = record.uuid();
        self.store.push_inbox(id, &item).await?;
        let revived = self.ensure_running(id).await?;
        Ok((self.reload(&record)?, revived))
    }

    /// Makes sure an agent with undelivered messages has a loop to take
    /// them: a running agent takes them at its next boundary; an idle one
    /// (completed, paused, interrupted) is revived. Ok(true) if revived.
    pub(super) async fn ensure_running(self: &Arc<Self>, id: Uuid) -> Result<bool, AgentdError> {
        let Some(record) = self.store.get_agent(id)? else {
            return Ok(false);
        };
        let handle = self.handle(&record)?;
        if handle.is_running() {
            return Ok(false);
        }
        match record.status() {
            Status::Completed | Status::Paused | Status::Interrupted => {}
            _ => return Ok(false),
        }
        if !self.store.has_inbox(id)? {
            return Ok(false);
        }
        self.revive(record).await
    }

    /// Pauses a running agent at its next safe point; it stays continuable.
    pub async fn pause(&self, query: &str) -> Result<AgentRecord, AgentdError> {
        let record = self.resolve(query)?;
        let handle = self.handle(&record)?;
        let token = handle.run().control.as_ref().map(|c| c.pause.clone());
        match token {
            Some(t) => {
                t.cancel();
                self.wait_until_idle(&handle).await?;
                self.reload(&record)
            }
            None => Err(AgentdError::precondition(format!(
                "agent {} is {}, not running; there is nothing to pause",
                short(&record),
                record.status().as_str()
            ))),
        }
    }

    /// Cancels an agent and every descendant: running loops stop at once
    /// (an in-flight model call is dropped, a running tool is killed); idle
    /// agents are marked cancelled. Returns the agent as it ended.
    pub async fn cancel(&self, query: &str) -> Result<AgentRecord, AgentdError> {
        let record = self.resolve(query)?;
        if record.status().is_terminal() {
            return Err(AgentdError::precondition(format!(
                "agent {} has already {}; there is nothing to stop",
                short(&record),
                record.status().as_str()
            )));
        }
        let mut family = vec![record.clone()];
        family.extend(self.descendants(record.uuid())?);
        for member in family.iter().rev() {
            self.cancel_one(member).await?;
        }
        self.reload(&record)
    }

    async fn cancel_one(&self, record: &AgentRecord) -> Result<(), AgentdError> {
        if record.status().is_terminal() {
            return Ok(());
        }
        let handle = self.handle(record)?;
        let token = handle.run().control.as_ref().map(|c| c.cancel.clone());
        match token {
            Some(token) => {
                token.cancel();
                self.wait_until_idle(&handle).await?;
            }
            None => {
                let mut cancelled = self.reload(record)?;
                if cancelled.status().is_terminal() {
                    return Ok(());
                }
                cancelled.set_status(Status::Cancelled);
                cancelled.updated_at_ms = now_ms();
                self.store.put_agent_durable(&cancelled).await?;
                handle.hub.publish_status(snapshot_of(&cancelled));
            }
        }
        Ok(())
    }

    /// Every agent below `id`, parents before children.
    pub fn descendants(&self, id: Uuid) -> Result<Vec<AgentRecord>, AgentdError> {
        let mut all = Vec::new();
        for r in self.store.agents() {
            let r = r?;
            if !r.parent_id.is_empty() {
                all.push(r);
            }
        }
        let mut out = Vec::new();
        let mut frontier = vec![id];
        while let Some(parent) = frontier.pop() {
            for r in all.iter().filter(|r| r.parent_id == parent.as_bytes()) {
                frontier.push(r.uuid());
                out.push(r.clone());
            }
        }
        Ok(out)
    }

    /// Removes an agent's record and transcript. A live agent is refused
    /// unless `force`, which cancels it first.
    pub async fn remove(&self, query: &str, force: bool) -> Result<Uuid, AgentdError> {
        let record = self.resolve(query)?;
        let id = record.uuid();
        let handle = self.handle(&record)?;
        if handle.is_running() || record.status().is_live() {
            if !force {
                return Err(AgentdError::precondition(format!(
                    "agent {} is {}; stop it first or pass --force to cancel and remove it",
                    short(&record),
                    record.status().as_str()
                )));
            }
            self.cancel(&id.to_string()).await?;
        }
        self.store.remove_agent(id).await?;
        self.handles().remove(&id);
        tracing::info!(agent = %id, "agent removed");
        Ok(id)
    }

    /// Releases the agent's foreground waiter at once; the agent keeps
    /// running untouched (DESIGN §4).
    pub async fn background(&self, query: &str) -> Result<AgentRecord, AgentdError> {
        let record = self.resolve(query)?;
        self.background_by_id(record.uuid(), "request").await?;
        let mut record = self.reload(&record)?;
        record.background = true;
        Ok(record)
    }

    pub(super) async fn background_by_id(&self, id: Uuid, why: &str) -> Result<(), AgentdError> {
        let record = self
            .store
            .get_agent(id)?
            .ok_or_else(|| AgentdError::NotFound(format!("agent {id} was removed")))?;
        let handle = self.handle(&record)?;
        let waiter = {
            let mut run = handle.run();
            if run.control.is_none() {
                return Err(AgentdError::precondition(format!(
                    "agent {} is {}, not running; only a running agent can move to the background",
                    short(&record),
                    record.status().as_str()
                )));
            }
            if run.backgrounded || (record.background && run.waiter.is_none()) {
                return Ok(());
            }
            run.backgrounded = true;
            if let Some(control) = run.control.as_ref() {
                control
                    .backgrounded
                    .store(true, std::sync::atomic::Ordering::Relaxed);
            }
            run.waiter.take()
        };
        if let Some(w) = waiter {
            let _ = w.send(WaitEnd::Released);
        }
        handle.hub.publish_released(why);
        tracing::info!(agent = %id, why, "moved to the background");
        Ok(())
    }
}
