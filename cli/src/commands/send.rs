//! `agentctl send`: message an agent (queued if it runs, revives it if idle).

use agentd_shared::proto as pb;

use crate::autostart::Target;
use crate::exit::{FAILURE, Failure, SUCCESS};
use crate::view::status;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Agent id, unique id prefix, or name.
    id: String,
    /// The message ("-" reads it from stdin).
    message: String,
    /// Wait for the agent to finish the turn and print its new final answer.
    #[arg(long)]
    wait: bool,
    /// Set (or raise) the agent's budget first: a family paused on a spent
    /// budget goes on.
    #[command(flatten)]
    budget: super::budget::BudgetFlags,
}

pub async fn run(target: &Target, args: Args) -> Result<u8, Failure> {
    let message = if args.message == "-" {
        std::io::read_to_string(std::io::stdin())
            .map_err(|e| Failure::failed(format!("cannot read the message from stdin: {e}")))?
    } else {
        args.message
    };
    let (budget_usd, budget_tokens) = args.budget.wire()?;
    let mut client = target.client().await?;
    let resp = client
        .send_message(pb::SendMessageRequest {
            id: args.id,
            message,
            budget_usd,
            budget_tokens,
        })
        .await?
        .into_inner();
    let agent = resp.agent.unwrap_or_default();
    if !args.wait {
        let what = if resp.revived {
            "revived"
        } else {
            "queued for"
        };
        say!("{what} {} ({})", agent.short_id, status::name(agent.status));
        return Ok(SUCCESS);
    }
    let done = client
        .wait_agent(pb::WaitAgentRequest {
            id: agent.id.clone(),
        })
        .await?
        .into_inner();
    if done.status == pb::AgentStatus::Completed as i32 {
        say!("{}", done.result);
        Ok(SUCCESS)
    } else {
        say_err!(
            "agent {} {}{}",
            done.short_id,
            status::name(done.status),
            if done.error.is_empty() {
                String::new()
            } else {
                format!(": {}", done.error)
            }
        );
        Ok(FAILURE)
    }
}
