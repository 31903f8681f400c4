//! Agents whose checkout was moved (`mv proj proj2`) or deleted (DESIGN §9).
//! Their records name paths that are gone; the trees moved with the
//! checkout. A client's working directory says where a repository is now:
//! its trees are found there (git's records repaired: `worktree::link`),
//! and the records of their agents follow them. A tree agentd cannot
//! reach is still listed, with where it was and what to do, never silently
//! dropped.

use std::path::{Path, PathBuf};

use super::worktree_admin::WorktreeReport;
use super::{Supervisor, short};
use crate::domain::{AgentRecord, AgentWorktree, WorktreeState};
use crate::error::AgentdError;
use crate::worktree::{self, Found};

/// What to tell a person about the tree `wt` whose checkout is gone.
pub(super) fn unreachable_note(record: &AgentRecord, wt: &AgentWorktree) -> String {
    let main = worktree::repo_dir(wt);
    format!(
        "its checkout {} is gone (moved or deleted). If you moved it, the tree moved with it, to <new place>/{}/{}: run `agentctl worktrees` in the new place and agentd finds it there (then `rm`, `diff` and `merge` work again), or remove it yourself with `git worktree remove` there and `git branch -D {}`. If you deleted the checkout, the tree went with it; `agentctl rm {}` forgets the agent",
        main.display(),
        worktree::WORKTREES_DIR,
        record.short_id,
        wt.branch,
        record.short_id
    )
}

impl Supervisor {
    /// The repositories to look at: every one agentd made a tree in, and the
    /// one holding `cwd` (a client's directory), remembered from now on.
    pub(super) async fn repos_to_look_at(&self, cwd: Option<&Path>) -> Vec<PathBuf> {
        let mut repos = self.store.worktree_repos().unwrap_or_default();
        let here = cwd
            .and_then(worktree::common_dir_of)
            .and_then(|c| c.canonicalize().ok());
        if let Some(here) = here
            && !repos.contains(&here)
        {
            // Only a repository that holds agentd's trees is worth keeping.
            let c = here.clone();
            let holds = super::worktrees::git(move || worktree::agentd_worktrees(&c))
                .await
                .is_ok_and(|found| !found.is_empty());
            if holds {
                if let Err(e) = self.store.remember_repo_durable(&here).await {
                    tracing::warn!(repo = %here.display(), error = %e, "cannot remember the repository");
                }
                repos.push(here);
            }
        }
        repos
    }

    /// `found` is the tree of `record`, somewhere other than its record
    /// says (its checkout moved): the record follows it, durably. Returns
    /// the record as it is now.
    pub(super) async fn follow_moved(
        &self,
        record: AgentRecord,
        found: &Found,
    ) -> Result<AgentRecord, AgentdError> {
        let Some(wt) = record.worktree.as_ref().filter(|w| w.owned) else {
            return Ok(record);
        };
        if wt.path == found.path || !found.exists {
            return Ok(record);
        }
        let (Some(old_main), Some(new_main)) = (
            worktree::checkout_of(&wt.path),
            worktree::checkout_of(&found.path),
        ) else {
            return Ok(record);
        };
        let mut moved = record.clone();
        if let Some(w) = moved.worktree.as_mut() {
            w.path = found.path.clone();
            // The checkout it came from moved with the main one (it was the
            // main checkout, or another agent's tree inside it).
            if let Ok(rest) = w.checkout.strip_prefix(&old_main) {
                w.checkout = new_main.join(rest);
            }
        }
        if let Ok(rest) = moved.cwd.strip_prefix(&old_main) {
            moved.cwd = new_main.join(rest);
        }
        self.store.put_agent_durable(&moved).await?;
        tracing::info!(agent = %record.id, from = %wt.path.display(), to = %found.path.display(), "the agent's worktree moved with its checkout; its record follows");
        Ok(moved)
    }

    /// Trees of agents that no repository agentd can open lists: their
    /// checkout is gone. Listed as missing, with what to do.
    pub(super) fn unreachable_trees(&self, listed: &[WorktreeReport]) -> Vec<WorktreeReport> {
        let mut out = Vec::new();
        let Ok(records) = self.store.agents() else {
            return out;
        };
        for record in records {
            let Some(wt) = record.worktree.clone().filter(|w| w.owned) else {
                continue;
            };
            if wt.state == WorktreeState::Removed
                || worktree::repo_dir(&wt).exists()
                || listed.iter().any(|r| r.found.path == wt.path)
            {
                continue;
            }
            let note = unreachable_note(&record, &wt);
            out.push(WorktreeReport {
                found: Found {
                    name: record.short_id.to_string(),
                    path: wt.path.clone(),
                    checkout: worktree::repo_dir(&wt),
                    branch: wt.branch.clone(),
                    exists: false,
                    marker: None,
                },
                agent: Some((*record).clone()),
                inspection: None,
                note: Some(note),
            });
        }
        out
    }

    /// Follows a move of the checkout holding `cwd` for the agent `record`
    /// (rm, diff, merge from inside the moved checkout): its record as it
    /// is now.
    pub(super) async fn locate_tree(
        &self,
        record: AgentRecord,
        cwd: Option<&Path>,
    ) -> Result<AgentRecord, AgentdError> {
        let Some(wt) = record.worktree.as_ref().filter(|w| w.owned) else {
            return Ok(record);
        };
        if worktree::repo_dir(wt).exists() {
            return Ok(record);
        }
        for common in self.repos_to_look_at(cwd).await {
            let c = common.clone();
            let Ok(found) = super::worktrees::git(move || worktree::agentd_worktrees(&c)).await
            else {
                continue;
            };
            if let Some(f) = found.iter().find(|f| f.name == record.short_id.as_str()) {
                return self.follow_moved(record, f).await;
            }
        }
        tracing::debug!(agent = %short(&record), "the agent's checkout is gone and no repository holds its tree");
        Ok(record)
    }
}
