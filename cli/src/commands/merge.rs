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
    println!(
        "{}",
        visible::line(&crate::view::outcome::merge_summary(&resp))
    );
    Ok(SUCCESS)
}
