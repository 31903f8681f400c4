//! `agentctl diff`: an agent's change against its base, committed or not,
//! untracked files included.

use git2::{DiffFormat, DiffOptions, DiffStatsFormat, Oid};

use super::error::WorktreeError;
use super::git_error;
use crate::domain::AgentWorktree;

/// The diff of the worktree (index and files, untracked included) against
/// its base commit: a patch, or with `stat` a diffstat.
pub fn diff(wt: &AgentWorktree, stat: bool) -> Result<String, WorktreeError> {
    // Through git's record of the tree, never the tree's own `.git`.
    let repo =
        super::link::open_tree(&wt.path).map_err(|e| super::link::open_error(&wt.path, e))?;
    let base = Oid::from_str(&wt.base_commit)
        .and_then(|oid| repo.find_commit(oid))
        .and_then(|c| c.tree())
        .map_err(|e| git_error("cannot read the base commit", e))?;
    let mut opts = DiffOptions::new();
    opts.include_untracked(true)
        .recurse_untracked_dirs(true)
        .show_untracked_content(true);
    let diff = repo
        .diff_tree_to_workdir_with_index(Some(&base), Some(&mut opts))
        .map_err(|e| git_error("cannot compute the diff", e))?;
    if stat {
        let stats = diff
            .stats()
            .map_err(|e| git_error("cannot count the diff", e))?;
        let buf = stats
            .to_buf(DiffStatsFormat::FULL, 80)
            .map_err(|e| git_error("cannot format the diffstat", e))?;
        return Ok(String::from_utf8_lossy(&buf).into_owned());
    }
    let mut out = Vec::new();
    diff.print(DiffFormat::Patch, |_, _, line| {
        if matches!(line.origin(), '+' | '-' | ' ') {
            out.push(line.origin() as u8);
        }
        out.extend_from_slice(line.content());
        true
    })
    .map_err(|e| git_error("cannot format the diff", e))?;
    Ok(String::from_utf8_lossy(&out).into_owned())
}
