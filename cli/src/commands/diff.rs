//! `agentctl diff AGENT [--stat]`: the agent's change against its base,
//! committed or not, untracked files included.
//!
//! The patch is the repository's and the agent's text. On a terminal it is
//! printed made visible (`agentd_shared::visible`); to a pipe or a file it
//! is exact, so that `agentctl diff A > fix.patch` applies.

use std::io::{IsTerminal as _, Write as _};

use agentd_shared::proto as pb;
use agentd_shared::visible;

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
        eprintln!("agentctl: warning: {}", visible::text(&resp.notice));
    }
    let mut out = std::io::stdout().lock();
    let shown = if out.is_terminal() {
        visible::text(&resp.diff)
    } else {
        std::borrow::Cow::Borrowed(resp.diff.as_str())
    };
    let _ = out.write_all(shown.as_bytes());
    let _ = out.flush();
    Ok(SUCCESS)
}
