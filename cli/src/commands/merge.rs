//! `agentctl merge AGENT [--squash]`: the agent's branch into the checkout
//! its worktree was made from. Refused, changing nothing, on a dirty
//! checkout or a conflict.

use agentd_shared::proto as pb;
use agentd_shared::visible;

use crate::autostart::Target;
use crate::exit::{Failure, SUCCESS};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Agent id, unique id prefix, or name.
    id: String,
    /// One commit with the agent's change instead of a merge commit.
    #[arg(long)]
    squash: bool,
}

pub async fn run(target: &Target, args: Args) -> Result<u8, Failure> {
    let mut client = target.client().await?;
    let resp = client
        .merge_agent(pb::MergeAgentRequest {
            id: args.id,
            squash: args.squash,
        })
        .await?
        .into_inner();
    println!("{}", visible::line(&summary(&resp)));
    Ok(SUCCESS)
}

/// What a merge did, in one line (`merge` prints it, `ui` shows it).
pub fn summary(resp: &pb::MergeAgentResponse) -> String {
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
