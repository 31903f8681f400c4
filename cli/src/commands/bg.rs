//! `agentctl bg`: release an agent's foreground waiter; it keeps running.

use agentd_shared::proto as pb;

use crate::autostart::Target;
use crate::exit::{Failure, SUCCESS};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Agent id, unique id prefix, or name.
    id: String,
}

pub async fn run(target: &Target, args: Args) -> Result<u8, Failure> {
    let mut client = target.client().await?;
    let agent = client
        .background(pb::BackgroundRequest { id: args.id })
        .await?
        .into_inner();
    println!("{} running in the background", agent.short_id);
    Ok(SUCCESS)
}
