//! The supervisor's side of the git quarantine (DESIGN §23,
//! `worktree::quarantine`): readied when a confined agent's run starts,
//! taken into the repository when it ends, before `diff`, `merge`,
//! `worktrees` and `rm` read the branch, and at start for every agent a
//! crash cut short; removed with the agent.

use std::path::PathBuf;

use super::Supervisor;
use super::worktrees::git;
use crate::domain::{AgentId, AgentRecord, SandboxMode};
use crate::error::AgentdError;
use crate::sandbox::GitQuarantine;
use crate::worktree::quarantine::{self, Migrated, Place};

/// The directory `record`'s tools may write, when they are confined to
/// one (a read-only agent commits nothing; an unconfined one writes its
/// repository itself).
fn confined_workspace(record: &AgentRecord) -> Option<PathBuf> {
    crate::sandbox::Policy::for_agent(record)
        .filter(|p| p.mode == SandboxMode::WorkspaceWrite)
        .map(|p| p.workspace)
}

/// Where `record` does git, if it has a quarantine to be kept.
fn place_of(record: &AgentRecord) -> Result<Option<Place>, crate::worktree::WorktreeError> {
    match confined_workspace(record) {
        Some(ws) if ws.exists() => quarantine::locate(&ws, record.short_id.as_str()),
        _ => Ok(None),
    }
}

fn log_migrated(record: &AgentRecord, done: &Migrated) {
    if let Some((_, to)) = done.moved {
        tracing::info!(agent = %record.id, commit = %to, objects = done.objects, "took the agent's commits into its branch");
    }
    if let Some(kept) = &done.diverged {
        tracing::warn!(agent = %record.id, kept = %kept, "the agent and someone else both moved its branch: the branch stays, the agent's commit is kept at the ref");
    }
}

impl Supervisor {
    /// The quarantine `record`'s run commits through; None when it has
    /// none. The error says why the run cannot start.
    pub(super) async fn ready_quarantine(
        &self,
        record: &AgentRecord,
    ) -> Result<Option<GitQuarantine>, String> {
        let r = record.clone();
        git(move || {
            let Some(place) = place_of(&r)? else {
                return Ok(None);
            };
            if place.branch.is_empty() {
                return Ok(None);
            }
            quarantine::prepare(&place).map(Some)
        })
        .await
        .map_err(|e| {
            format!(
                "cannot ready the agent's git quarantine (where its commits go before agentd takes them into the repository): {e}; remove {} to start it afresh (what it committed and agentd did not take is lost), or run it with --sandbox off",
                quarantine::QUARANTINE_DIR
            )
        })
    }

    /// Takes `record`'s commits into the repository. A failure is logged
    /// and the branch left as it was.
    pub(super) async fn take_in_commits(&self, record: &AgentRecord) {
        if let Err(e) = self.take_in_commits_or_say(record).await {
            tracing::warn!(agent = %record.id, error = %e, "cannot take the agent's commits into the repository");
        }
    }

    /// `take_in_commits`, the failure returned (for a request that reads
    /// the branch: `merge` refuses rather than merge a stale branch).
    pub(super) async fn take_in_commits_or_say(
        &self,
        record: &AgentRecord,
    ) -> Result<Migrated, AgentdError> {
        let r = record.clone();
        let done = git(move || match place_of(&r)? {
            Some(place) => quarantine::migrate(&place),
            None => Ok(Migrated::default()),
        })
        .await?;
        log_migrated(record, &done);
        Ok(done)
    }

    /// At start: the commits of agents a crash cut short.
    pub(super) async fn take_in_commits_of(&self, ids: &[AgentId]) {
        for id in ids {
            if let Ok(Some(record)) = self.store.get_agent(*id) {
                self.take_in_commits(&record).await;
            }
        }
    }

    /// With `rm`: the quarantine goes, its branch taken in first.
    pub(super) async fn drop_quarantine(&self, record: &AgentRecord) -> Result<(), AgentdError> {
        let r = record.clone();
        let done = git(move || match place_of(&r)? {
            Some(place) => quarantine::remove(&place),
            None => Ok(Migrated::default()),
        })
        .await?;
        log_migrated(record, &done);
        Ok(())
    }
}
