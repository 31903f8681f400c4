//! `agentctl diff AGENT [--stat]`: the agent's change against its base,
//! committed or not, untracked files included.

use std::io::Write as _;

use agentd_shared::proto as pb;

use crate::autostart::Target;
use crate::exit::{Failure, SUCCESS};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Agent id, unique id prefix, or name.
    id: String,
    /// A diffstat instead of the patch.
    #[arg(long)]
    stat: bool,
}

pub async fn run(target: &Target, args: Args) -> Result<u8, Failure> {
    let mut client = target.client().await?;
    let resp = client
        .diff_agent(pb::DiffAgentRequest {
            id: args.id,
            stat: args.stat,
        })
        .await?
        .into_inner();
    if !resp.notice.is_empty() {
        eprintln!("agentctl: warning: {}", resp.notice);
    }
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(resp.diff.as_bytes());
    let _ = out.flush();
    Ok(SUCCESS)
}
