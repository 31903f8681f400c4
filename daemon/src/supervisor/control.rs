//! Requests that steer agents: send (queue or revive), pause, cancel
//! (cascading to descendants) and remove.

use std::sync::Arc;

use super::{RemovedTree, Supervisor, short};
use crate::agent::events::StatusSnapshot;
use crate::domain::{AgentId, AgentRecord, InboxItem, InboxKind, Status, now_ms};
use crate::error::AgentdError;

/// Messages larger than this are refused.
pub const MAX_MESSAGE_BYTES: usize = 64 * 1024;

impl Supervisor {
    /// Delivers `message` to an agent: queued for its next turn boundary if
    /// it runs; a paused, completed or interrupted agent is revived for a
    /// new turn. A message that cannot reach its agent (its revival fails)
    /// is taken back out of the inbox and the error says why. Returns the
    /// agent and whether it was revived.
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
        let status = record.status;
        if matches!(status, Status::Failed | Status::Cancelled) {
            return Err(AgentdError::refused(format!(
                "agent {s} is {status}; {status} agents cannot be continued — start a new one with `agentctl run` (its transcript stays readable with `agentctl log {s}`)",
                s = short(&record),
            )));
        }
        if let Some(blocked) = record
            .resume_blocked
            .as_ref()
            .filter(|b| b.reason == crate::domain::ResumeBlockedReason::BudgetExhausted)
        {
            return Err(AgentdError::refused(format!(
                "agent {} is paused: {} (or send with --budget to the agent whose budget it is)",
                short(&record),
                blocked.detail
            )));
        }
        if let Some(blocked) = &record.resume_blocked {
            return Err(AgentdError::refused(format!(
                "agent {} cannot be resumed ({}: {}); start a new one instead",
                short(&record),
                blocked.reason.as_str(),
                blocked.detail
            )));
        }
        if from.is_none() && record.description.is_empty() {
            self.describe_from_first_message(&record, message).await?;
        }
        let text = match from {
            Some(sender) => format!("<message from=\"{}\">\n{message}\n</message>", sender.id),
            None => message.to_string(),
        };
        let item = InboxItem {
            kind: InboxKind::Message,
            text,
            from: from.map(|s| s.id),
            created_at_ms: now_ms(),
        };
        let key = self.store.push_inbox(record.id, &item).await?;
        match self.ensure_running(record.id).await {
            Ok(revived) => Ok((self.reload(&record)?, revived)),
            Err(e) => {
                // Not left behind silently: the sender is told, and the
                // message is not delivered by some later revival instead.
                if let Err(w) = self.store.withdraw_inbox_item(&key).await {
                    tracing::error!(agent = %record.id, error = %w, "could not take back an undeliverable message");
                }
                Err(e)
            }
        }
    }

    /// An agent created idle without a description (an editor's new
    /// session) takes it from its first message, as `run` takes it from its
    /// prompt: lists and editors' titles show what it is for.
    async fn describe_from_first_message(
        &self,
        record: &AgentRecord,
        message: &str,
    ) -> Result<(), AgentdError> {
        let handle = self.handle(record)?;
        let _transition = handle.transition.lock().await;
        // A running loop owns its record; this is for agents between turns.
        if handle.is_running() {
            return Ok(());
        }
        let mut record = self.reload(record)?;
        if !record.description.is_empty() {
            return Ok(());
        }
        record.description = super::create::describe(message);
        record.updated_at_ms = now_ms();
        self.store.put_agent_durable(&record).await?;
        Ok(())
    }

    /// Makes sure an agent with undelivered messages has a loop to take
    /// them: a running agent takes them at its next boundary; an idle one
    /// (completed, paused, interrupted) is revived. Ok(true) if revived.
    pub(super) async fn ensure_running(self: &Arc<Self>, id: AgentId) -> Result<bool, AgentdError> {
        let Some(record) = self.store.get_agent(id)? else {
            return Ok(false);
        };
        let handle = self.handle(&record)?;
        if handle.is_running() {
            return Ok(false);
        }
        match record.status {
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
        let token = handle.run().as_ref().map(|c| c.stops.pause.clone());
        match token {
            Some(t) => {
                t.cancel();
                self.wait_until_idle(&handle).await?;
                let paused = self.reload(&record)?;
                self.store.ensure_on_disk(record.id, || {
                    format!("agent {} stopped ({})", short(&record), paused.status)
                })?;
                Ok(paused)
            }
            None => Err(AgentdError::refused(format!(
                "agent {} is {}, not running; there is nothing to pause",
                short(&record),
                record.status
            ))),
        }
    }

    /// Interrupts an agent now: the model call or tool in flight is
    /// aborted and recorded as such, and the agent is `paused`, continuable
    /// with `send` (unlike `pause`, which waits for a safe point, and
    /// `cancel`, which ends it). Descendants running in its foreground (a
    /// subagent it waits for) are interrupted with it; background ones go
    /// on. Returns the agent as it stopped.
    pub async fn interrupt(&self, query: &str) -> Result<AgentRecord, AgentdError> {
        let record = self.resolve(query)?;
        // The agent, and the chain of foreground subagents below it.
        let mut family = vec![record.clone()];
        let mut rest: Vec<AgentRecord> = self
            .descendants(record.id)?
            .into_iter()
            .filter(|d| !d.background)
            .collect();
        while let Some(i) = rest
            .iter()
            .position(|d| family.iter().any(|f| Some(f.id) == d.parent))
        {
            family.push(rest.swap_remove(i));
        }
        let mut stopping = Vec::new();
        for member in &family {
            let handle = self.handle(member)?;
            // A revival in progress (a message that just arrived) finishes
            // first, so that the run it starts is the one interrupted.
            let token = {
                let _transition = handle.transition.lock().await;
                handle.run().as_ref().map(|c| c.stops.interrupt.clone())
            };
            if let Some(token) = token {
                token.cancel();
                stopping.push(handle);
            }
        }
        if stopping.is_empty() {
            return Err(AgentdError::refused(format!(
                "agent {} is {}, not running; there is nothing to interrupt",
                short(&record),
                record.status
            )));
        }
        for handle in &stopping {
            self.wait_until_idle(handle).await?;
        }
        for member in &family {
            self.store.ensure_on_disk(member.id, || {
                format!("agent {} was interrupted", short(member))
            })?;
        }
        self.reload(&record)
    }

    /// Changes the permission mode or model of an agent that does not run
    /// now; its next turns use them.
    pub async fn update(
        &self,
        query: &str,
        mode: Option<crate::domain::PermissionMode>,
        model: Option<String>,
    ) -> Result<AgentRecord, AgentdError> {
        let record = self.resolve(query)?;
        let handle = self.handle(&record)?;
        let _transition = handle.transition.lock().await;
        if handle.is_running() {
            return Err(AgentdError::refused(format!(
                "agent {} is running; change it between turns (interrupt or pause it first)",
                short(&record)
            )));
        }
        let mut record = self.reload(&record)?;
        if let Some(mode) = mode {
            // Fail closed: a subagent whose parent cannot be read keeps its mode.
            let parent = match record.parent {
                None => None,
                Some(p) => Some(self.store.get_agent(p)?.ok_or_else(|| {
                    AgentdError::refused(format!(
                        "agent {} is a subagent whose parent is gone; its permission mode cannot change",
                        short(&record)
                    ))
                })?),
            };
            if let Some(parent) = parent
                && mode.stricter(parent.permission_mode) != mode
            {
                return Err(AgentdError::refused(format!(
                    "agent {} is a subagent of {}, whose permission mode is {}; it cannot have a looser one",
                    short(&record),
                    short(&parent),
                    parent.permission_mode.as_str()
                )));
            }
            record.permission_mode = mode;
        }
        if let Some(model) = model {
            if let Some(ext) = &record.external {
                return Err(AgentdError::refused(format!(
                    "agent {} is run by {}, which picks its own model; its model cannot be changed here",
                    short(&record),
                    ext.agent
                )));
            }
            let spec = crate::model::ModelSpec::parse(&model)?;
            crate::model::Provider::from_spec(&spec, &record.cwd, self.settings.models())?;
            record.model = model;
        }
        record.updated_at_ms = now_ms();
        self.store.put_agent_durable(&record).await?;
        Ok(record)
    }

    /// Cancels an agent and every descendant: running loops stop at once
    /// (an in-flight model call is dropped, a running tool is killed); idle
    /// agents are marked cancelled. Returns the agent as it ended.
    pub async fn cancel(&self, query: &str) -> Result<AgentRecord, AgentdError> {
        let record = self.resolve(query)?;
        if record.status.is_terminal() {
            return Err(AgentdError::refused(format!(
                "agent {} has already {}; there is nothing to stop",
                short(&record),
                record.status
            )));
        }
        let mut family = vec![record.clone()];
        family.extend(self.descendants(record.id)?);
        for member in family.iter().rev() {
            self.cancel_one(member).await?;
        }
        for member in &family {
            self.store.ensure_on_disk(member.id, || {
                format!("agent {} was cancelled", short(member))
            })?;
        }
        self.reload(&record)
    }

    async fn cancel_one(&self, record: &AgentRecord) -> Result<(), AgentdError> {
        if record.status.is_terminal() {
            return Ok(());
        }
        let handle = self.handle(record)?;
        let token = {
            // Against a revival starting a run at this moment (`revive`).
            let _transition = handle.transition.lock().await;
            let token = handle.run().as_ref().map(|c| c.stops.cancel.clone());
            if token.is_none() {
                let mut cancelled = self.reload(record)?;
                if cancelled.status.is_terminal() {
                    return Ok(());
                }
                cancelled.status = Status::Cancelled;
                cancelled.updated_at_ms = now_ms();
                self.settle_worktree(&mut cancelled).await;
                self.store.put_agent_durable(&cancelled).await?;
                handle.hub.publish_status(StatusSnapshot::of(&cancelled));
                self.end_external(&cancelled).await;
            }
            token
        };
        if let Some(token) = token {
            token.cancel();
            self.wait_until_idle(&handle).await?;
        }
        Ok(())
    }

    /// Removes an agent's record and transcript. A live agent is refused
    /// unless `force`, which cancels it first. Its own worktree goes with
    /// its branch if it holds no work (or `discard_worktree`); otherwise it
    /// is kept, and the answer says what it holds.
    /// `cwd`: the client's directory, where a checkout that moved may be
    /// found (`moved_checkouts`).
    pub async fn remove(
        &self,
        query: &str,
        force: bool,
        discard_worktree: bool,
        cwd: Option<&std::path::Path>,
    ) -> Result<(AgentId, Option<RemovedTree>), AgentdError> {
        let record = self.resolve(query)?;
        let record = self.locate_tree(record, cwd).await?;
        let id = record.id;
        let handle = self.handle(&record)?;
        if handle.is_running() || record.status.is_live() {
            if !force {
                return Err(AgentdError::refused(format!(
                    "agent {} is {}; stop it first or pass --force to cancel and remove it",
                    short(&record),
                    record.status
                )));
            }
            self.cancel(&id.to_string()).await?;
        }
        // Against a revival starting meanwhile (`revive` holds it too);
        // after a cancel, the record says what became of the tree.
        let _transition = handle.transition.lock().await;
        let record = self.reload(&record)?;
        if record.status.is_live() || handle.is_running() {
            return Err(AgentdError::refused(format!(
                "agent {} started again meanwhile; stop it first",
                short(&record)
            )));
        }
        self.drop_quarantine(&record).await?;
        let tree = self.remove_agent_tree(&record, discard_worktree).await?;
        self.store.remove_agent(id).await?;
        self.registry.remove(id);
        crate::tools::spool::Spool::new(&self.settings.info().data_dir, id).remove();
        crate::agent::external::home::remove(&self.settings.info().data_dir, id);
        self.drop_checkpoints(id);
        tracing::info!(agent = %id, "agent removed");
        Ok((id, tree))
    }
}
