//! `agentctl interrupt`: stop an agent now — the model call or tool in
//! flight is aborted and recorded — leaving it paused; `send` continues it.

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
        .interrupt_agent(pb::InterruptAgentRequest { id: args.id })
        .await?
        .into_inner();
    println!("{} {}", agent.short_id, status::name(agent.status));
    Ok(SUCCESS)
}
