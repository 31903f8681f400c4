//! `agentctl compact`: compact an agent's context now (DESIGN §17). A
//! running agent compacts at its next turn boundary; the command returns
//! once the boundary is on disk.

use agentd_shared::proto as pb;

use crate::autostart::Target;
use crate::exit::{Failure, SUCCESS};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Agent id, unique id prefix, or name.
    id: String,
    /// What the summary should keep or focus on.
    #[arg(long, value_name = "TEXT")]
    instructions: Option<String>,
    /// Print the summary too.
    #[arg(long)]
    show: bool,
}

pub async fn run(target: &Target, args: Args) -> Result<u8, Failure> {
    let mut client = target.client().await?;
    let answer = client
        .compact_agent(pb::CompactAgentRequest {
            id: args.id,
            instructions: args.instructions.unwrap_or_default(),
        })
        .await?
        .into_inner();
    let agent = answer.agent.unwrap_or_default();
    let boundary = answer.boundary.unwrap_or_default();
    say!(
        "{} compacted: ~{} tokens → ~{} (compaction {})",
        agent.short_id,
        boundary.tokens_before,
        boundary.tokens_after,
        agent.compactions
    );
    if args.show {
        say!("{}", boundary.summary);
    }
    Ok(SUCCESS)
}
