//! `agentctl bg`: release an agent's foreground waiter; it keeps running.

use agentd_shared::proto as pb;

use super::one_shot;
use crate::autostart::{Client, Target};
use crate::exit::Failure;

pub use one_shot::Args;

pub async fn run(target: &Target, args: Args) -> Result<u8, Failure> {
    let call = async |c: &mut Client, id| c.background(pb::BackgroundRequest { id }).await;
    one_shot::run(target, args, call, |agent| {
        format!("{} running in the background", agent.short_id)
    })
    .await
}
