//! What `bg`, `pause`, `stop` and `interrupt` share: one call on the agent
//! named on the command line, answered with one line about the agent as
//! the call left it.

use agentd_shared::proto as pb;
use agentd_shared::visible;

use crate::autostart::{Client, Target};
use crate::exit::{Failure, SUCCESS};

/// The one argument of these commands.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Agent id, unique id prefix, or name.
    id: String,
}

/// Connects, makes `call` with the id `args` gives, and prints `report`
/// of the agent the daemon answers with.
pub async fn run(
    target: &Target,
    args: Args,
    call: impl AsyncFnOnce(&mut Client, String) -> Result<tonic::Response<pb::Agent>, tonic::Status>,
    report: fn(&pb::Agent) -> String,
) -> Result<u8, Failure> {
    let mut client = target.client().await?;
    let agent = call(&mut client, args.id).await?.into_inner();
    println!("{}", visible::line(&report(&agent)));
    Ok(SUCCESS)
}
