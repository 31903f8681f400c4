//! Agents' worktrees through an agent's life (DESIGN §9): made before the
//! agent is stored, locked while it runs, settled when it ends (removed
//! with its branch when it holds no work, kept otherwise), made again when
//! an agent whose clean tree was removed is continued. What people do with
//! trees (`worktrees`, prune, the startup sweep, diff, merge, `rm`) is in
//! `worktree_admin`.
//!
//! git work runs on the blocking pool. Every settlement and removal holds
//! the worktree lock (`tree_keeping`), so two of them never race on one tree; the
//! check for work is made inside `worktree::remove`, under the tree's own
//! git lock, immediately before anything is deleted.

use std::path::Path;

use super::Supervisor;
use crate::domain::{
    AgentId, AgentRecord, AgentWorktree, Isolation, ResumeBlocked, ResumeBlockedReason, ShortId,
    Status, WorkSummary, WorktreeState,
};
use crate::error::AgentdError;
use crate::worktree::{self, Plan, Settled, Target};

/// Runs blocking git work on the blocking pool, with the person's file
/// mask: what it writes in their repository is theirs.
pub(super) async fn git<T: Send + 'static, E: Into<AgentdError> + Send + 'static>(
    f: impl FnOnce() -> Result<T, E> + Send + 'static,
) -> Result<T, AgentdError> {
    tokio::task::spawn_blocking(|| crate::umask::as_the_person(f))
        .await
        .map_err(|e| AgentdError::refused(format!("git work failed: {e}")))?
        .map_err(Into::into)
}

/// The short id of the agentd tree `cwd` lies in, if it lies in one.
pub(super) fn host_tree_name(cwd: &std::path::Path) -> Option<String> {
    let mut dir = Some(cwd);
    while let Some(d) = dir {
        if let Some(name) = d.file_name().and_then(|n| n.to_str())
            && worktree::is_agentd_tree(d, name)
        {
            return Some(name.to_string());
        }
        dir = d.parent();
    }
    None
}

pub(super) fn target_of(record: &AgentRecord, wt: &AgentWorktree) -> Target {
    Target {
        checkout: worktree::repo_dir(wt),
        name: record.short_id.to_string(),
        path: wt.path.clone(),
        branch: wt.branch.clone(),
        base: wt.base.clone(),
        base_commit: wt.base_commit.clone(),
    }
}

impl Supervisor {
    /// The worktree a new agent gets with worktree isolation, planned from
    /// the checkout `cwd` is in and named after its short id; none
    /// without.
    pub(super) fn plan_tree(
        &self,
        isolation: Isolation,
        cwd: &Path,
        base: Option<&str>,
        short_id: &ShortId,
    ) -> Result<Option<Plan>, AgentdError> {
        Ok(match isolation {
            Isolation::Worktree => Some(worktree::plan(
                cwd,
                base,
                short_id.as_str(),
                self.store.instance_id(),
            )?),
            Isolation::None => None,
        })
    }

    /// Makes the planned worktree for `record` (which is not stored yet):
    /// its repository is recorded first, so a crash between the two leaves
    /// an orphan the startup sweep finds. The tree counts as being made
    /// (never an orphan to prune) until the returned guard is dropped,
    /// once the record is stored. Submodules may take long to check out:
    /// no lock is held meanwhile.
    pub(super) async fn make_worktree(
        &self,
        plan: &Plan,
        record: &AgentRecord,
    ) -> Result<super::tree_keeping::Making<'_>, AgentdError> {
        let common = worktree::common_dir_of(&plan.checkout).ok_or_else(|| {
            AgentdError::refused(format!(
                "{} is no longer a git checkout",
                plan.checkout.display()
            ))
        })?;
        self.store.remember_repo_durable(&common).await?;
        let making = self.trees.making(plan.name.clone());
        let plan = plan.clone();
        let reason = worktree::running_reason(record.short_id.as_str(), &record.name);
        git(move || worktree::create(&plan, &reason)).await?;
        Ok(making)
    }

    /// Removes the tree made for an agent whose record could not be stored
    /// (it is fresh: nothing in it is anybody's work).
    pub(super) async fn unmake_worktree(&self, record: &AgentRecord) {
        let Some(wt) = record.worktree.as_ref().filter(|w| w.owned) else {
            return;
        };
        let target = target_of(record, wt);
        let _guard = self.trees.lock().await;
        if let Err(e) = git(move || worktree::remove_if_clean(&target)).await {
            tracing::warn!(agent = %record.id, error = %e, "cannot remove the worktree of an agent that was not stored");
        }
    }

    /// At the end of a run: a terminal agent's own tree is removed with
    /// its branch if it holds no work, else kept (and `record` says what it
    /// holds); an agent that stops otherwise (paused) has its lock lifted.
    /// An agent interrupted by a shutdown keeps its lock: it resumes. An
    /// agent that worked inside another agent's tree lets that tree be
    /// settled now if it waited for it.
    pub(super) async fn settle_worktree(&self, record: &mut AgentRecord) {
        if record.status.is_terminal() {
            self.settle_host_tree(record).await;
        }
        let Some(wt) = record.worktree.clone().filter(|w| w.owned) else {
            return;
        };
        if wt.state != WorktreeState::Active {
            return;
        }
        if !record.status.is_terminal() {
            if record.status != Status::Interrupted {
                self.unlock_tree(record, &wt).await;
            }
            return;
        }
        if let Some(user) = self.tree_user(&wt.path, Some(record.id)) {
            // A child started in this tree (it inherited the agent's
            // directory) has not ended: the tree stays for it, and is
            // settled when the last such child ends (`settle_host_tree`).
            tracing::info!(agent = %record.id, user = %user.id, "worktree kept while another agent works in it");
            self.unlock_tree(record, &wt).await;
            if let Some(w) = record.worktree.as_mut() {
                w.state = WorktreeState::Kept;
            }
            return;
        }
        let (state, work, notice) = self.settle_ended(record, &wt).await;
        if let Some(w) = record.worktree.as_mut() {
            w.state = state;
            w.work = work;
            w.notice = notice.or(w.notice.take());
        }
    }

    /// Checks an ended agent's tree and removes it if it holds no work.
    async fn settle_ended(
        &self,
        record: &AgentRecord,
        wt: &AgentWorktree,
    ) -> (WorktreeState, WorkSummary, Option<String>) {
        let target = target_of(record, wt);
        // Everything the agent started has ended (its namespace with its
        // run): its tree's .git link is put back before anything reads it.
        let path = wt.path.clone();
        let restored = git(move || worktree::link::restore(&path)).await;
        let notice = match restored {
            Ok(notice) => notice,
            Err(e) => {
                tracing::warn!(agent = %record.id, error = %e, "cannot restore the worktree's .git link; keeping the tree");
                return (WorktreeState::Kept, WorkSummary::default(), None);
            }
        };
        if let Some(n) = &notice {
            tracing::warn!(agent = %record.id, path = %wt.path.display(), "{n}");
        }
        let settled = {
            let _guard = self.trees.lock().await;
            git(move || worktree::remove_if_clean(&target)).await
        };
        let (state, work) = match settled {
            Ok(Settled::Removed(_) | Settled::Gone) => {
                (WorktreeState::Removed, WorkSummary::default())
            }
            Ok(Settled::Kept(i)) => (WorktreeState::Kept, i.work),
            Ok(Settled::Untouchable(why)) => {
                tracing::warn!(agent = %record.id, why, "the agent's worktree was left as it is");
                (WorktreeState::Kept, WorkSummary::default())
            }
            Err(e) => {
                tracing::warn!(agent = %record.id, error = %e, "cannot check the agent's worktree; keeping it");
                (WorktreeState::Kept, WorkSummary::default())
            }
        };
        if state == WorktreeState::Kept {
            tracing::info!(agent = %record.id, path = %wt.path.display(), %work, "worktree kept");
        }
        if state == WorktreeState::Removed
            && let Some(main) = worktree::checkout_of(&wt.path)
            && let Some(common) = worktree::common_dir_of(&main)
        {
            let name = record.short_id.as_str().to_string();
            if let Err(e) = git(move || worktree::quarantine::discard(&main, &common, &name)).await
            {
                tracing::warn!(agent = %record.id, error = %e, "cannot remove the agent's git quarantine");
            }
        }
        (state, work, notice)
    }

    /// `child` ended: if it worked inside another agent's tree whose agent
    /// has ended and kept the tree only for agents working in it, and no
    /// other does any more, that tree is settled now.
    async fn settle_host_tree(&self, child: &AgentRecord) {
        let Some(name) = host_tree_name(&child.cwd) else {
            return;
        };
        if Some(name.as_str()) == Some(child.short_id.as_str()) {
            return;
        }
        let Some(mut host) = crate::domain::ShortId::from_stored(&name)
            .and_then(|s| self.store.agent_by_short_id(&s).ok().flatten())
            .and_then(|id| self.store.get_agent(id).ok().flatten())
        else {
            return;
        };
        let Some(wt) = host.worktree.clone().filter(|w| w.owned) else {
            return;
        };
        if !host.status.is_terminal()
            || wt.state != WorktreeState::Kept
            || !wt.work.is_empty()
            || self.tree_user(&wt.path, Some(child.id)).is_some()
        {
            return;
        }
        let (state, work, notice) = self.settle_ended(&host, &wt).await;
        if let Some(w) = host.worktree.as_mut() {
            w.state = state;
            w.work = work;
            w.notice = notice.or(w.notice.take());
        }
        if let Err(e) = self.store.put_agent_durable(&host).await {
            tracing::warn!(agent = %host.id, error = %e, "cannot record what became of the worktree");
        }
    }

    /// Lifts the agent's own lock from its tree.
    async fn unlock_tree(&self, record: &AgentRecord, wt: &AgentWorktree) {
        let (repo, name) = (worktree::repo_dir(wt), record.short_id.to_string());
        if let Err(e) = git(move || worktree::unlock(&repo, &name)).await {
            tracing::warn!(agent = %record.id, error = %e, "cannot unlock the worktree");
        }
    }

    /// After a revival was refused: the tree `ready_worktree` locked is
    /// unlocked again.
    pub(super) async fn release_worktree(&self, record: &AgentRecord) {
        if let Some(wt) = record
            .worktree
            .as_ref()
            .filter(|w| w.owned && w.path.is_dir())
        {
            self.unlock_tree(record, wt).await;
        }
    }

    /// Before an existing agent runs again: its tree is there and locked
    /// for it, or made again (see `worktree::recreate`). A pinned tree that
    /// is gone blocks the resume.
    pub(super) async fn ready_worktree(
        &self,
        record: &mut AgentRecord,
    ) -> Result<(), ResumeBlocked> {
        let Some(wt) = record.worktree.clone() else {
            return Ok(());
        };
        let missing = |detail: String| ResumeBlocked {
            reason: ResumeBlockedReason::WorktreeMissing,
            detail,
        };
        let name = record.short_id.to_string();
        let reason = worktree::running_reason(&name, &record.name);
        if !wt.owned {
            return if wt.path.is_dir() {
                Ok(())
            } else {
                Err(missing(format!(
                    "the pinned worktree {} is gone",
                    wt.path.display()
                )))
            };
        }
        let _guard = self.trees.lock().await;
        let store = self.store.instance_id().to_string();
        if wt.path.is_dir() {
            let (checkout, lock_reason) = (worktree::repo_dir(&wt), reason);
            if let Err(e) = git(move || worktree::lock(&checkout, &name, &lock_reason)).await {
                tracing::warn!(agent = %record.id, error = %e, "cannot lock the worktree; running anyway");
            }
        } else {
            // Removed clean at its end (made anew from the base), or deleted
            // by someone (its branch, with its commits, is checked out again).
            let w = wt.clone();
            git(move || worktree::recreate(&w, &name, &reason, &store))
                .await
                .map_err(|e| {
                    missing(format!(
                        "its worktree {} is gone and cannot be made again: {e}",
                        wt.path.display()
                    ))
                })?;
            tracing::info!(agent = %record.id, path = %wt.path.display(), "made the agent's worktree again");
        }
        if let Some(w) = record.worktree.as_mut() {
            w.state = WorktreeState::Active;
            w.work = WorkSummary::default();
        }
        Ok(())
    }

    /// An agent other than `except` that has not ended and whose working
    /// directory lies inside `tree`.
    pub(super) fn tree_user(
        &self,
        tree: &std::path::Path,
        except: Option<AgentId>,
    ) -> Option<AgentRecord> {
        let ids = self
            .store
            .ids_by_status(|s| !s.is_terminal())
            .unwrap_or_default();
        ids.into_iter()
            .filter(|id| Some(*id) != except)
            .filter_map(|id| self.store.get_agent(id).ok().flatten())
            .find(|a| a.cwd.starts_with(tree))
    }
}
