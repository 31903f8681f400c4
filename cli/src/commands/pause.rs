//! `agentctl pause`: stop an agent at its next safe point, continuable.

use agentd_shared::proto as pb;

use crate::autostart::Target;
use crate::exit::{Failure, SUCCESS};
use crate::view::status;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Agent id, unique id prefix, or name.
    id: String,
}

pub async fn run(target: &Target, args: Args) -> Result<u8, Failure> {
    let mut client = target.client().await?;
    let agent = client
        .pause_agent(pb::PauseAgentRequest { id: args.id })
        .await?
        .into_inner();
    println!("{} {}", agent.short_id, status::name(agent.status));
    Ok(SUCCESS)
}
