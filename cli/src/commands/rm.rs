//! `agentctl rm`: delete an agent's record and transcript. Its worktree goes
//! too when it holds no work; otherwise it is kept and said so, unless
//! `--discard-worktree`, which first prints what will be lost.

use agentd_shared::proto as pb;
use agentd_shared::visible;

use crate::autostart::Target;
use crate::exit::{Failure, SUCCESS};
use crate::view::worktree::base_label;

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
            cwd: crate::client_dir::client_dir(),
        })
        .await?
        .into_inner();
    for line in crate::view::outcome::removal_lines(&resp, args.discard_worktree) {
        say!("{}", line);
    }
    Ok(SUCCESS)
}
