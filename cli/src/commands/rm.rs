//! `agentctl rm`: delete an agent's record and transcript. Its worktree goes
//! too when it holds no work; otherwise it is kept and said so, unless
//! `--discard-worktree`, which first prints what will be lost.

use agentd_shared::proto as pb;
use agentd_shared::visible;

use crate::autostart::Target;
use crate::exit::{Failure, SUCCESS};
use crate::view::worktree::{base_label, work_line};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Agent id, unique id prefix, or name.
    id: String,
    /// Cancel a live agent first instead of refusing.
    #[arg(long)]
    force: bool,
    /// Delete the agent's worktree and branch even if they hold work
    /// (uncommitted or untracked files, commits not on the base).
    #[arg(long)]
    discard_worktree: bool,
}

pub async fn run(target: &Target, args: Args) -> Result<u8, Failure> {
    let mut client = target.client().await?;
    if args.discard_worktree {
        let agent = client
            .get_agent(pb::GetAgentRequest {
                id: args.id.clone(),
            })
            .await?
            .into_inner();
        if let Some(wt) = agent.worktree.as_ref().filter(|w| w.owned) {
            let state = pb::WorktreeState::try_from(wt.state).unwrap_or_default();
            if state != pb::WorktreeState::Removed || std::path::Path::new(&wt.path).exists() {
                say_err!(
                    "discarding {} (branch {}, base {}); what it holds now is lost:",
                    visible::line(&wt.path),
                    visible::line(&wt.branch),
                    visible::line(base_label(&wt.base))
                );
                let stat = client
                    .diff_agent(pb::DiffAgentRequest {
                        id: agent.id.clone(),
                        stat: true,
                    })
                    .await
                    .map(|r| r.into_inner().diff)
                    .unwrap_or_default();
                eprint!("{}", visible::text(&stat));
            }
        }
    }
    let resp = client
        .remove_agent(pb::RemoveAgentRequest {
            id: args.id,
            force: args.force,
            discard_worktree: args.discard_worktree,
            cwd: super::worktrees::client_dir(),
        })
        .await?
        .into_inner();
    for line in outcome_lines(&resp, args.discard_worktree) {
        say!("{}", line);
    }
    Ok(SUCCESS)
}

/// What a removal did, line by line (`rm` prints them, `ui` shows them).
pub fn outcome_lines(resp: &pb::RemoveAgentResponse, discarded: bool) -> Vec<String> {
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
pub fn holds(agent: &pb::Agent) -> String {
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
