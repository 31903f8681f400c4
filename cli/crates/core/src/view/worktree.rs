//! How worktrees read on a terminal and in JSON (`show`, `worktrees`, `rm`).

use agentd_shared::proto as pb;
use serde::Serialize;

/// A base as a person reads it: a branch's short name, or as given.
pub fn base_label(base: &str) -> &str {
    base.strip_prefix("refs/heads/")
        .or_else(|| base.strip_prefix("refs/"))
        .unwrap_or(base)
}

pub fn state_name(state: i32) -> &'static str {
    match pb::WorktreeState::try_from(state).unwrap_or_default() {
        pb::WorktreeState::Unspecified => "unknown",
        pb::WorktreeState::Active => "active",
        pb::WorktreeState::Kept => "kept",
        pb::WorktreeState::Removed => "removed",
    }
}

/// "2 files changed, 1 untracked, 3 commits ahead", or "no changes".
pub fn work_line(w: Option<&pb::WorkSummary>) -> String {
    let w = w.copied().unwrap_or_default();
    let mut parts = Vec::new();
    if w.changed > 0 {
        parts.push(format!("{} changed", count(w.changed, "file")));
    }
    if w.untracked > 0 {
        parts.push(format!("{} untracked", count(w.untracked, "file")));
    }
    if w.ahead > 0 {
        parts.push(format!("ahead {}", count(w.ahead, "commit")));
    }
    if parts.is_empty() {
        "no changes".into()
    } else {
        parts.join(", ")
    }
}

fn count(n: u32, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

/// The states of a listed tree: clean, dirty, untracked, ahead N, locked,
/// orphan, missing.
pub fn states(w: &pb::Worktree) -> Vec<String> {
    let work = w.work.unwrap_or_default();
    let mut out = Vec::new();
    if w.missing {
        out.push("missing".to_string());
    } else {
        if work.changed > 0 {
            out.push("dirty".into());
        }
        if work.untracked > 0 {
            out.push("untracked".into());
        }
        if work.ahead > 0 {
            out.push(format!("ahead {}", work.ahead));
        }
        if out.is_empty() {
            out.push("clean".into());
        }
    }
    if w.locked {
        out.push("locked".into());
    }
    if w.orphan {
        out.push("orphan".into());
    }
    out
}

/// `worktree` in `show --json` and `list --json`.
#[derive(Debug, Serialize)]
pub struct AgentWorktreeJson<'a> {
    pub path: &'a str,
    pub branch: &'a str,
    pub base: &'a str,
    pub state: &'static str,
    pub checkout: &'a str,
    pub owned: bool,
    pub changed: u32,
    pub untracked: u32,
    pub ahead: u32,
    /// What agentd had to do to the tree (left out when nothing).
    #[serde(skip_serializing_if = "str::is_empty")]
    pub notice: &'a str,
}

impl<'a> AgentWorktreeJson<'a> {
    pub fn of(w: &'a pb::AgentWorktree) -> Self {
        let work = w.work.unwrap_or_default();
        AgentWorktreeJson {
            path: &w.path,
            branch: &w.branch,
            base: base_label(&w.base),
            state: state_name(w.state),
            checkout: &w.checkout,
            owned: w.owned,
            changed: work.changed,
            untracked: work.untracked,
            ahead: work.ahead,
            notice: &w.notice,
        }
    }
}

/// One row of `worktrees --json`.
#[derive(Serialize)]
pub struct WorktreeJson<'a> {
    pub path: &'a str,
    pub branch: &'a str,
    pub repo: &'a str,
    pub agent_id: Option<&'a str>,
    pub agent_short_id: Option<&'a str>,
    pub agent_status: Option<&'static str>,
    pub base: Option<&'a str>,
    pub state: Vec<String>,
    pub changed: u32,
    pub untracked: u32,
    pub ahead: u32,
    pub locked: bool,
    pub lock_reason: Option<&'a str>,
    pub orphan: bool,
    pub missing: bool,
    pub paths: &'a [String],
    /// Why agentd cannot reach it and what to do.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<&'a str>,
}

impl<'a> WorktreeJson<'a> {
    pub fn of(w: &'a pb::Worktree) -> Self {
        let work = w.work.unwrap_or_default();
        let opt = |s: &'a str| (!s.is_empty()).then_some(s);
        WorktreeJson {
            path: &w.path,
            branch: &w.branch,
            repo: &w.repo,
            agent_id: opt(&w.agent_id),
            agent_short_id: opt(&w.agent_short_id),
            agent_status: (!w.orphan).then(|| super::status::name(w.agent_status)),
            base: opt(&w.base),
            state: states(w),
            changed: work.changed,
            untracked: work.untracked,
            ahead: work.ahead,
            locked: w.locked,
            lock_reason: opt(&w.lock_reason),
            orphan: w.orphan,
            missing: w.missing,
            paths: &w.paths,
            note: opt(&w.note),
        }
    }
}
