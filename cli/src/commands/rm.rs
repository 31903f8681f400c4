//! `agentctl rm`: delete an agent's record and transcript.

use agentd_shared::proto as pb;

use crate::autostart::Target;
use crate::exit::{Failure, SUCCESS};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Agent id, unique id prefix, or name.
    id: String,
    /// Cancel a live agent first instead of refusing.
    #[arg(long)]
    force: bool,
}

pub async fn run(target: &Target, args: Args) -> Result<u8, Failure> {
    let mut client = target.client().await?;
    let resp = client
        .remove_agent(pb::RemoveAgentRequest {
            id: args.id,
            force: args.force,
        })
        .await?
        .into_inner();
    println!("removed {}", resp.id);
    Ok(SUCCESS)
}
