//! What people do with agents' worktrees (DESIGN §9): list them, prune
//! and sweep orphans, diff and merge an agent's work, and what `rm` does
//! with a tree. Every removal holds the worktree lock (`tree_keeping`); the check
//! for work is `worktree::remove`'s.

use std::path::{Path, PathBuf};

use super::worktrees::{git, host_tree_name, target_of};
use super::{Supervisor, short};
use crate::domain::{AgentRecord, AgentWorktree, WorktreeState};
use crate::error::AgentdError;
use crate::worktree::{self, Found, Inspection, Merged, Settled, Target};

/// One agentd worktree, with its agent (None: an orphan) and what it holds.
#[derive(Clone, Debug)]
pub struct WorktreeReport {
    pub found: Found,
    pub agent: Option<AgentRecord>,
    /// None when it could not be inspected (its directory is gone).
    pub inspection: Option<Inspection>,
    /// Why agentd cannot reach it and what to do (its checkout moved or
    /// was deleted).
    pub note: Option<String>,
}

impl WorktreeReport {
    pub fn base(&self) -> String {
        self.agent
            .as_ref()
            .and_then(|a| a.worktree.as_ref())
            .map(|w| w.base.as_str())
            .or(self.found.marker.as_ref().map(|m| m.base.as_str()))
            .map(|b| worktree::base_label(b).to_string())
            .unwrap_or_default()
    }
}

/// What `rm` did with an agent's worktree.
#[derive(Clone, Debug)]
pub struct RemovedTree {
    pub report: WorktreeReport,
    pub removed: bool,
}

/// An orphan, judged against the base its marker records; always on its
/// own branch `agentd/<name>` (never a branch someone switched it to).
fn orphan_target(found: &Found) -> Target {
    let marker = found.marker.clone().unwrap_or_default();
    let (base, base_commit) = (marker.base, marker.base_commit);
    Target {
        checkout: found.checkout.clone(),
        name: found.name.clone(),
        path: found.path.clone(),
        branch: worktree::branch_for(&found.name),
        base,
        base_commit,
    }
}

impl Supervisor {
    /// Whether the tree `name` is being made, or its agent was stored since
    /// it was listed (checked in that order: a tree's maker stores the
    /// record before it stops counting as being made).
    fn made_meanwhile(&self, name: &str) -> bool {
        if self.trees.is_making(name) {
            return true;
        }
        // A short id stays reserved after its agent is removed: look for
        // the record itself.
        crate::domain::ShortId::from_stored(name)
            .and_then(|s| self.store.agent_by_short_id(&s).ok().flatten())
            .is_some_and(|id| !matches!(self.store.get_agent(id), Ok(None)))
    }

    /// Every agentd worktree of every repository agentd has used, and of
    /// the one holding `cwd` (a client's directory: a checkout that moved
    /// is found there). Agents whose trees moved have their records follow
    /// them; trees no repository lists (their checkout is gone) are listed
    /// as missing, with what to do.
    pub async fn worktrees(&self, cwd: Option<&Path>) -> Result<Vec<WorktreeReport>, AgentdError> {
        let mut reports = Vec::new();
        for common in self.repos_to_look_at(cwd).await {
            let listed = {
                let c = common.clone();
                git(move || worktree::agentd_worktrees(&c)).await
            };
            let found = match listed {
                Ok(f) => f,
                Err(e) => {
                    tracing::warn!(repo = %common.display(), error = %e, "cannot list the repository's worktrees");
                    continue;
                }
            };
            for f in found {
                let mut report = self.report(f).await?;
                if let Some(agent) = report.agent.take() {
                    report.agent = Some(self.follow_moved(agent, &report.found).await?);
                }
                reports.push(report);
            }
        }
        let unreachable = self.unreachable_trees(&reports);
        reports.extend(unreachable);
        Ok(reports)
    }

    async fn report(&self, found: Found) -> Result<WorktreeReport, AgentdError> {
        let agent = match crate::domain::ShortId::from_stored(&found.name) {
            Some(short) => match self.store.agent_by_short_id(&short)? {
                Some(id) => self.store.get_agent(id)?,
                None => None,
            },
            None => None,
        };
        let (base, base_commit) = agent
            .as_ref()
            .and_then(|a| a.worktree.as_ref())
            .map(|w| (w.base.clone(), w.base_commit.clone()))
            .or_else(|| {
                found
                    .marker
                    .as_ref()
                    .map(|m| (m.base.clone(), m.base_commit.clone()))
            })
            .unwrap_or_default();
        if let Some(a) = &agent {
            // Its branch as the agent left it, commits and all.
            self.take_in_commits(a).await;
        }
        let inspection = if found.exists {
            let (path, branch) = (found.path.clone(), worktree::branch_for(&found.name));
            git(move || worktree::work_in(&path, &branch, &base, &base_commit))
                .await
                .ok()
        } else {
            None
        };
        Ok(WorktreeReport {
            found,
            agent,
            inspection,
            note: None,
        })
    }

    /// Removes orphans that hold no work and nobody else locked (with
    /// `dry_run`, only says which). Returns (removed, kept).
    pub async fn prune_worktrees(
        &self,
        dry_run: bool,
        cwd: Option<&Path>,
    ) -> Result<(Vec<WorktreeReport>, Vec<WorktreeReport>), AgentdError> {
        let (mut removed, mut kept) = (Vec::new(), Vec::new());
        let _guard = self.trees.lock().await;
        for report in self.worktrees(cwd).await? {
            // Only trees agentd names (a short id) can be its orphans; a
            // tree someone else put under .agentd/worktrees is theirs.
            // Only a tree agentd marked when it made it can be its orphan;
            // anything else under .agentd/worktrees is someone else's.
            if report.agent.is_some()
                || report
                    .found
                    .marker
                    .as_ref()
                    .is_none_or(|m| m.store != self.store.instance_id())
                || self.made_meanwhile(&report.found.name)
            {
                continue;
            }
            let target = orphan_target(&report.found);
            if dry_run {
                match git(move || worktree::would_remove(&target)).await {
                    Ok(true) => removed.push(report),
                    _ => kept.push(report),
                }
                continue;
            }
            match git(move || worktree::remove_if_clean(&target)).await {
                Ok(Settled::Removed(_) | Settled::Gone) => removed.push(report),
                Ok(Settled::Kept(i)) => kept.push(WorktreeReport {
                    inspection: Some(i),
                    ..report
                }),
                Ok(Settled::Untouchable(_)) => kept.push(report),
                Err(e) => {
                    tracing::warn!(path = %report.found.path.display(), error = %e, "cannot check an orphaned worktree; keeping it");
                    kept.push(report);
                }
            }
        }
        Ok((removed, kept))
    }

    /// The start's sweep (`sweep_worktrees`), after the daemon is ready:
    /// it reads every tree's status, which for many large trees takes long,
    /// and nothing waits for it (every removal takes the worktree lock and
    /// checks for work itself).
    pub(super) fn sweep_worktrees_in_background(self: &std::sync::Arc<Self>) {
        let sup = self.clone();
        tokio::spawn(async move {
            tokio::select! {
                () = sup.runs.shutdown_token().cancelled() => {}
                () = sup.sweep_worktrees() => {}
            }
        });
    }

    /// At start: trees whose removal a crash cut short (renamed, checked
    /// clean) are finished; orphans without work are removed, the rest
    /// logged (and listed by `agentctl worktrees`).
    pub(super) async fn sweep_worktrees(&self) {
        for common in self.store.worktree_repos().unwrap_or_default() {
            let main = git2::Repository::open(&common)
                .ok()
                .and_then(|r| r.workdir().and_then(|w| w.canonicalize().ok()));
            let Some(main) = main else { continue };
            let dir = main.join(worktree::WORKTREES_DIR);
            // Through the directory as verified: never through a link.
            let places = match worktree::Places::verify(&main, &common, false) {
                Ok(p) => p,
                Err(e) => {
                    if dir.symlink_metadata().is_ok() {
                        tracing::warn!(path = %dir.display(), "not sweeping worktrees: {e}");
                    }
                    continue;
                }
            };
            let Ok(entries) = std::fs::read_dir(places.tree_path("")) else {
                continue;
            };
            for entry in entries.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                if name.starts_with(worktree::TOMBSTONE_PREFIX) {
                    let shown = dir.join(&name);
                    let path = places.tree_path(&name);
                    let removed =
                        tokio::task::spawn_blocking(move || std::fs::remove_dir_all(&path)).await;
                    match removed {
                        Ok(Ok(())) => {
                            tracing::info!(path = %shown.display(), "finished removing a worktree a crash interrupted")
                        }
                        _ => {
                            tracing::warn!(path = %shown.display(), "cannot finish removing a worktree a crash interrupted")
                        }
                    }
                }
            }
        }
        match self.prune_worktrees(false, None).await {
            Ok((removed, kept)) => {
                for r in &removed {
                    tracing::info!(path = %r.found.path.display(), "removed an orphaned worktree that held no work");
                }
                for k in &kept {
                    tracing::warn!(path = %k.found.path.display(), "kept an orphaned worktree (it holds work or someone locked it); see `agentctl worktrees`");
                }
            }
            Err(e) => tracing::warn!(error = %e, "cannot sweep worktrees"),
        }
        tracing::info!("worktree sweep done");
    }

    /// What `rm` does with the agent's own tree (the agent is no longer
    /// live): removed with its branch when it holds no work or `discard`;
    /// kept otherwise. None when it has no tree left.
    pub(super) async fn remove_agent_tree(
        &self,
        record: &AgentRecord,
        discard: bool,
    ) -> Result<Option<RemovedTree>, AgentdError> {
        let Some(wt) = record.worktree.clone().filter(|w| w.owned) else {
            return Ok(None);
        };
        if wt.state == WorktreeState::Removed && !wt.path.exists() {
            return Ok(None);
        }
        if !worktree::repo_dir(&wt).exists() {
            // Its checkout moved (and no client showed agentd where) or was
            // deleted: nothing agentd can reach is touched; the person is
            // told where the tree was and what to do.
            let note = super::moved_checkouts::unreachable_note(record, &wt);
            if discard {
                return Err(AgentdError::refused(format!(
                    "agent {}'s worktree {} cannot be discarded: {note}",
                    short(record),
                    wt.path.display()
                )));
            }
            return Ok(Some(RemovedTree {
                report: WorktreeReport {
                    found: Found {
                        name: record.short_id.to_string(),
                        path: wt.path.clone(),
                        checkout: worktree::repo_dir(&wt),
                        branch: wt.branch.clone(),
                        exists: false,
                        marker: None,
                    },
                    agent: Some(record.clone()),
                    inspection: None,
                    note: Some(note),
                },
                removed: false,
            }));
        }
        if let Some(user) = self.tree_user(&wt.path, Some(record.id)) {
            return Err(AgentdError::refused(format!(
                "agent {} works in agent {}'s worktree and has not ended; stop it first",
                user.short_id,
                short(record)
            )));
        }
        let target = target_of(record, &wt);
        let found = Found {
            name: target.name.clone(),
            path: wt.path.clone(),
            checkout: worktree::repo_dir(&wt),
            branch: wt.branch.clone(),
            exists: wt.path.is_dir(),
            marker: Some(worktree::Marker {
                base: wt.base.clone(),
                base_commit: wt.base_commit.clone(),
                store: self.store.instance_id().to_string(),
            }),
        };
        let _guard = self.trees.lock().await;
        let settled = git(move || {
            if discard {
                worktree::discard(&target)
            } else {
                worktree::remove_if_clean(&target)
            }
        })
        .await?;
        let (inspection, removed) = match settled {
            Settled::Removed(i) => (Some(i), true),
            Settled::Gone => (None, true),
            Settled::Kept(i) => (Some(i), false),
            Settled::Untouchable(why) => {
                return Err(AgentdError::refused(format!(
                    "agent {}'s worktree {} cannot be removed: {why}; nothing was removed",
                    short(record),
                    wt.path.display()
                )));
            }
        };
        Ok(Some(RemovedTree {
            report: WorktreeReport {
                found,
                agent: Some(record.clone()),
                inspection,
                note: None,
            },
            removed,
        }))
    }

    /// `agentctl diff`.
    pub async fn diff_agent(
        &self,
        query: &str,
        stat: bool,
    ) -> Result<(String, AgentWorktree, Option<String>), AgentdError> {
        let record = self.resolve(query)?;
        let wt = self.tree_of(&record)?;
        self.take_in_commits(&record).await;
        let w = wt.clone();
        let (text, link) = git(move || {
            Ok::<_, worktree::WorktreeError>((
                worktree::diff(&w, stat)?,
                worktree::link::check(&w.path),
            ))
        })
        .await?;
        let notice = match link {
            worktree::link::Link::Replaced(what) => Some(format!(
                "the agent replaced its worktree's .git link ({what}); this diff was read through git's own record of the tree; do not run git in {} until agentd restores the link (when the agent ends)",
                wt.path.display()
            )),
            _ => None,
        };
        Ok((text, wt, notice))
    }

    /// `agentctl merge`: the agent must have ended or paused.
    pub async fn merge_agent(
        &self,
        query: &str,
        squash: bool,
    ) -> Result<(Merged, PathBuf), AgentdError> {
        let record = self.resolve(query)?;
        let wt = self.tree_of(&record)?;
        if !wt.owned {
            return Err(AgentdError::refused(format!(
                "agent {} works in a pinned worktree ({}), not one of its own; merge its branch {} with git",
                short(&record),
                wt.path.display(),
                wt.branch
            )));
        }
        if record.status.is_live() || self.handle(&record)?.is_running() {
            return Err(AgentdError::refused(format!(
                "agent {} is {}; merge it once it has stopped (`agentctl wait {}`)",
                short(&record),
                record.status,
                short(&record)
            )));
        }
        let label = if record.description.is_empty() {
            format!("agent {}", short(&record))
        } else {
            format!("agent {}: {}", short(&record), record.description)
        };
        // A merge of a branch missing the agent's last commits would be
        // a merge of something else: refused instead.
        self.take_in_commits_or_say(&record).await?;
        let mut wt = wt;
        if !wt.checkout.is_dir()
            && let Some(main) = worktree::checkout_of(&wt.path)
        {
            // It came from another agent's tree, removed since: its work
            // goes to the repository's main checkout instead.
            wt.checkout = main;
        }
        // Into another agent's tree only while nothing runs there.
        if let Some(host) = host_tree_name(&wt.checkout) {
            let owner = crate::domain::ShortId::from_stored(&host)
                .and_then(|s| self.store.agent_by_short_id(&s).ok().flatten())
                .and_then(|id| self.store.get_agent(id).ok().flatten());
            if let Some(owner) = owner
                && (owner.status.is_live() || self.handle(&owner)?.is_running())
            {
                return Err(AgentdError::refused(format!(
                    "agent {} runs in {}, which agent {} came from; merge once it has stopped",
                    owner.short_id,
                    wt.checkout.display(),
                    short(&record)
                )));
            }
            if let Some(user) = self.tree_user(&wt.checkout, None) {
                return Err(AgentdError::refused(format!(
                    "agent {} works in {}; merge once it has stopped",
                    user.short_id,
                    wt.checkout.display()
                )));
            }
        }
        let _guard = self.trees.lock().await;
        let w = wt.clone();
        let prepared = git(move || worktree::prepare(&w, squash, &label)).await?;
        let merged = match prepared {
            worktree::Prepared::Done(m) => m,
            worktree::Prepared::Write {
                journal,
                merged,
                log,
            } => {
                // On disk before the checkout changes: a crash mid-way is
                // finished or undone at the next start.
                let key = self.store.begin_merge_durable(&journal).await?;
                let j = journal.clone();
                let applied = git(move || worktree::merge_journal::apply(&j, &log)).await;
                // Failed part way (the index could not be written after the
                // branch moved, say): settled now as a restart would; the
                // journal stays if even that fails, for the next start.
                let complete = match &applied {
                    Ok(()) => true,
                    Err(_) => {
                        let j = journal.clone();
                        git(move || worktree::merge_journal::recover(&j))
                            .await
                            .inspect_err(|e| tracing::error!(error = %e, "cannot settle a merge that failed part way; the next start tries again"))
                            .is_ok()
                    }
                };
                if complete && let Err(e) = self.store.end_merge_durable(key).await {
                    tracing::warn!(error = %e, "cannot forget a finished merge's journal; the next start checks it again");
                }
                applied?;
                merged
            }
        };
        Ok((merged, wt.checkout))
    }

    fn tree_of(&self, record: &AgentRecord) -> Result<AgentWorktree, AgentdError> {
        let wt = record.worktree.clone().ok_or_else(|| {
            AgentdError::refused(format!(
                "agent {} has no worktree (start agents with --worktree to get one)",
                short(record)
            ))
        })?;
        if wt.state == WorktreeState::Removed && !wt.path.exists() {
            return Err(AgentdError::refused(format!(
                "agent {} ended with no changes, so its worktree was removed",
                short(record)
            )));
        }
        Ok(wt)
    }
}
