//! After a crash or a stop (DESIGN §5): tool processes the old daemon left
//! behind are killed, every agent that was live becomes `interrupted`, and
//! (config `resume_on_start`) resumes; idle agents with undelivered
//! messages or notifications are woken. What a resumed agent does with
//! tool calls whose results were never recorded is the turn loop's
//! (`agent::turn::interrupted`).

use std::sync::Arc;

use super::Supervisor;
use crate::domain::{AgentId, Status, now_ms};
use crate::error::AgentdError;
use crate::process::reap;

impl Supervisor {
    /// Kills the tool processes a previous life of this daemon left
    /// behind, then marks every agent that was live (pending, running,
    /// waiting) `interrupted`: none has a turn loop any more. Returns the
    /// ids of every interrupted agent that may resume: those just marked
    /// (a crash) and those a clean stop interrupted at a safe point —
    /// `interrupted` means stopped by agentd, not by anyone's wish, and
    /// not finished. One whose resume was blocked is left as it is.
    pub async fn recover(&self) -> Result<Vec<AgentId>, AgentdError> {
        let reaped = reap::reap_orphans(self.store.instance_id());
        if reaped > 0 {
            tracing::warn!(
                reaped,
                "killed tool processes left running by the previous agentd"
            );
        }
        self.recover_merges().await;
        let mut ids = self.mark_interrupted().await?;
        // What they committed is on their branches before anyone asks.
        self.take_in_commits_of(&ids).await;
        // A rewind a crash cut short is finished before anything runs.
        self.recover_rewinds().await;
        for id in self.store.ids_by_status(|s| s == Status::Interrupted)? {
            if !ids.contains(&id)
                && let Some(record) = self.store.get_agent(id)?
                && record.resume_blocked.is_none()
            {
                ids.push(id);
            }
        }
        Ok(ids)
    }

    /// Merges a crash cut short (`agentctl merge`) are finished or undone
    /// before anything else runs: the person's checkout is never left half
    /// merged. A journal entry stays while it cannot be settled (the disk
    /// is full, the checkout cannot be opened): the next start tries again.
    async fn recover_merges(&self) {
        let journals = match self.store.merges_in_progress() {
            Ok(j) => j,
            Err(e) => {
                tracing::error!(error = %e, "cannot read the merge journal");
                return;
            }
        };
        for (key, journal) in journals {
            let j = journal.clone();
            let recovered =
                super::worktrees::git(move || crate::worktree::merge_journal::recover(&j)).await;
            let checkout = journal.checkout.display().to_string();
            match recovered {
                Ok(r) => {
                    use crate::worktree::merge_journal::Recovered;
                    match &r {
                        Recovered::Finished { written, left } => tracing::warn!(
                            checkout,
                            written,
                            ?left,
                            "finished a merge a crash had cut short (its branch had moved)"
                        ),
                        Recovered::Undone { written, left } => tracing::warn!(
                            checkout,
                            written,
                            ?left,
                            "undid a merge a crash had cut short (its branch had not moved)"
                        ),
                        Recovered::Left(why) => tracing::warn!(
                            checkout,
                            why,
                            "left a merge a crash had cut short as it is"
                        ),
                    }
                    if let Err(e) = self.store.end_merge_durable(key).await {
                        tracing::warn!(error = %e, "cannot forget a settled merge's journal");
                    }
                }
                Err(e) => {
                    tracing::error!(checkout, error = %e, "cannot settle a merge a crash cut short; trying again at the next start")
                }
            }
        }
    }

    /// A full disk does not stop the daemon from starting: the marks are
    /// kept until space is back (and shown meanwhile).
    pub(super) async fn mark_interrupted(&self) -> Result<Vec<AgentId>, AgentdError> {
        let mut marked = Vec::new();
        let mut deferred = false;
        for id in self.store.ids_by_status(Status::is_live)? {
            if let Some(mut record) = self.store.get_agent(id)? {
                record.status = Status::Interrupted;
                record.updated_at_ms = now_ms();
                match self.store.put_agent_or_defer(&record) {
                    Ok(()) => {}
                    Err(e) if e.is_disk_full() => deferred = true,
                    Err(e) => return Err(e.into()),
                }
                marked.push(id);
            }
        }
        if deferred {
            tracing::warn!(
                "the disk is full: agents are marked interrupted in memory, and resume once space is back"
            );
        } else if !marked.is_empty() {
            self.store.flush().await?;
        }
        Ok(marked)
    }

    /// At start, after `recover`: resumes the interrupted agents (config
    /// `resume_on_start`) and wakes idle agents with undelivered messages or
    /// notifications. Returns (resumed, blocked).
    pub async fn resume_after_start(
        self: &Arc<Self>,
        interrupted: &[AgentId],
    ) -> Result<(usize, usize), AgentdError> {
        let (mut resumed, mut blocked) = (0, 0);
        if self.config().resume_on_start {
            for id in interrupted {
                let Some(record) = self.store.get_agent(*id)? else {
                    continue;
                };
                match self.revive(record).await {
                    Ok(true) => resumed += 1,
                    Ok(false) => {}
                    Err(AgentdError::Store(e)) if e.is_disk_full() => {
                        self.runs.resume_later(*id);
                        tracing::warn!(agent = %id, "the disk is full: resuming once space is back");
                    }
                    Err(e) => {
                        blocked += 1;
                        tracing::warn!(agent = %id, error = %e, "cannot resume");
                    }
                }
            }
        }
        self.wake_idle_with_inbox().await?;
        self.sweep_worktrees_in_background();
        Ok((resumed, blocked))
    }

    /// Whether a full disk keeps this interrupted agent from resuming (it
    /// resumes on its own once space is back).
    pub fn resume_deferred_for_disk(&self, agent: AgentId) -> bool {
        self.runs.resumes_later(agent)
    }

    /// Resumes the agents a full disk kept from resuming at start.
    pub(super) async fn resume_deferred(self: &Arc<Self>) {
        let ids: Vec<AgentId> = self.runs.take_resume_later();
        if !ids.is_empty()
            && let Err(e) = self.resume_after_start(&ids).await
        {
            tracing::warn!(error = %e, "cannot resume agents after the store healed");
        }
    }

    /// Revives completed and paused agents that have something in their
    /// inbox (after a restart, or after deferred notifications were
    /// written once disk space came back).
    pub(super) async fn wake_idle_with_inbox(self: &Arc<Self>) -> Result<(), AgentdError> {
        let mut waiting = Vec::new();
        for id in self.store.agents_with_inbox()? {
            if let Some(record) = self.store.get_agent(id)?
                && matches!(record.status, Status::Completed | Status::Paused)
            {
                waiting.push(id);
            }
        }
        for id in waiting {
            if let Err(e) = self.ensure_running(id).await {
                tracing::warn!(agent = %id, error = %e, "cannot wake an agent with undelivered messages");
            }
        }
        Ok(())
    }
}
