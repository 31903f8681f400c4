//! What an action on an agent did, in words: a merge, a removal (and what
//! one would leave behind), an agent's status in one line. `agentctl`'s
//! commands print them; the dashboard shows them.

use agentd_shared::proto as pb;

use super::status;
use super::worktree::work_line;

/// What a merge did, in one line (`merge` prints it, `ui` shows it).
pub fn merge_summary(resp: &pb::MergeAgentResponse) -> String {
    let short = |c: &str| c.chars().take(12).collect::<String>();
    match pb::MergeResult::try_from(resp.result).unwrap_or_default() {
        pb::MergeResult::UpToDate => format!("{} already has the agent's commits", resp.checkout),
        pb::MergeResult::FastForward => format!(
            "fast-forwarded {} in {} to {}",
            resp.branch,
            resp.checkout,
            short(&resp.commit)
        ),
        pb::MergeResult::MergeCommit => format!(
            "merged into {} in {}: {}",
            resp.branch,
            resp.checkout,
            short(&resp.commit)
        ),
        pb::MergeResult::SquashCommit => format!(
            "squashed into {} in {}: {}",
            resp.branch,
            resp.checkout,
            short(&resp.commit)
        ),
        pb::MergeResult::Unspecified => "merged".to_string(),
    }
}

/// What a removal did, line by line (`rm` prints them, `ui` shows them).
pub fn removal_lines(resp: &pb::RemoveAgentResponse, discarded: bool) -> Vec<String> {
    let mut out = vec![format!("removed {}", resp.id)];
    let Some(w) = &resp.worktree else {
        return out;
    };
    let held = work_line(w.work.as_ref());
    if resp.worktree_removed && discarded && held != "no changes" {
        out.push(format!(
            "discarded its worktree {} and branch {}: {held}",
            w.path, w.branch
        ));
        out.extend(w.paths.iter().map(|p| format!("  lost {p}")));
    } else if resp.worktree_removed {
        out.push(format!(
            "removed its worktree {} and branch {} (no changes)",
            w.path, w.branch
        ));
    } else if !w.note.is_empty() {
        out.push(format!(
            "could not reach its worktree {}: {}",
            w.path, w.note
        ));
    } else {
        out.push(format!(
            "kept its worktree {} and branch {}: {held}; it is an orphan now (`agentctl worktrees`); delete it with git once you have what you need",
            w.path, w.branch
        ));
    }
    out
}

/// What removing `agent` would leave behind, for asking first (`ui`): its
/// worktree and the work it holds, or that it has none.
pub fn removal_holds(agent: &pb::Agent) -> String {
    match agent.worktree.as_ref().filter(|w| w.owned) {
        None => "no worktree".into(),
        Some(w) => format!(
            "worktree {} (branch {}): {}; a tree with work is kept",
            w.path,
            w.branch,
            work_line(w.work.as_ref())
        ),
    }
}

/// The agent's short id and its status now: "3f2a1b9c paused".
pub fn status_line(agent: &pb::Agent) -> String {
    format!("{} {}", agent.short_id, status::name(agent.status))
}
