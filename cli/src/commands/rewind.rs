//! `agentctl rewind AGENT --to N [--code | --conversation | --both]
//! [--force]`: back to how things were when the agent's user turn N began
//! (DESIGN §23). The agent must not be running.

use agentd_shared::proto as pb;

use crate::autostart::Target;
use crate::exit::{Failure, SUCCESS};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Agent id, unique id prefix, or name.
    id: String,
    /// The user turn (from 1, as `agentctl checkpoints` counts them) to go back to the beginning of.
    #[arg(long, value_name = "N")]
    to: u32,
    /// Only the workspace: files changed since turn N began are put back, files made since removed.
    #[arg(long, conflicts_with_all = ["conversation", "both"])]
    code: bool,
    /// Only the conversation: the agent's next request ends where turn N began (nothing is deleted).
    #[arg(long, conflicts_with_all = ["code", "both"])]
    conversation: bool,
    /// Both (the default).
    #[arg(long, conflicts_with_all = ["code", "conversation"])]
    both: bool,
    /// Also rewind files someone changed since the agent last worked.
    #[arg(long)]
    force: bool,
}

pub async fn run(target: &Target, args: Args) -> Result<u8, Failure> {
    let scope = if args.code {
        pb::RewindScope::Code
    } else if args.conversation {
        pb::RewindScope::Conversation
    } else {
        pb::RewindScope::Both
    };
    let mut client = target.client().await?;
    let resp = client
        .rewind_agent(pb::RewindAgentRequest {
            id: args.id,
            to_turn: args.to,
            scope: scope as i32,
            force: args.force,
        })
        .await?
        .into_inner();
    let agent = resp.agent.unwrap_or_default();
    let mut what = Vec::new();
    if scope != pb::RewindScope::Conversation {
        what.push(format!(
            "{} files written back, {} removed",
            resp.written.len(),
            resp.removed.len()
        ));
    }
    if resp.conversation {
        what.push("its next request starts from there".to_string());
    }
    say!(
        "{} rewound to the beginning of turn {}: {}",
        agent.short_id,
        args.to,
        what.join("; ")
    );
    for p in &resp.written {
        say!("  M {p}");
    }
    for p in &resp.removed {
        say!("  D {p}");
    }
    Ok(SUCCESS)
}
