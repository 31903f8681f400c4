//! `agentctl pause`: stop an agent at its next safe point, continuable.

use agentd_shared::proto as pb;

use super::one_shot;
use crate::autostart::{Client, Target};
use crate::exit::Failure;
use crate::view::outcome::status_line;

pub use one_shot::Args;

pub async fn run(target: &Target, args: Args) -> Result<u8, Failure> {
    let call = async |c: &mut Client, id| c.pause_agent(pb::PauseAgentRequest { id }).await;
    one_shot::run(target, args, call, status_line).await
}
