//! `agentctl wait`: block until an agent ends.

use std::time::Duration;

use agentd_shared::proto as pb;

use crate::autostart::Target;
use crate::exit::{FAILURE, Failure, SUCCESS, TIMEOUT};
use crate::view::status;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Agent id, unique id prefix, or name.
    id: String,
    /// Give up after this many seconds (exit 124).
    #[arg(long)]
    timeout: Option<f64>,
}

pub async fn run(target: &Target, args: Args) -> Result<u8, Failure> {
    let mut client = target.client().await?;
    let call = client.wait_agent(pb::WaitAgentRequest {
        id: args.id.clone(),
    });
    let agent = match args.timeout {
        Some(secs) if !(secs.is_finite() && secs >= 0.0) => {
            return Err(Failure::new(
                2,
                format!("invalid --timeout {secs}: give a number of seconds"),
            ));
        }
        Some(secs) => match tokio::time::timeout(Duration::from_secs_f64(secs), call).await {
            Ok(r) => r?,
            Err(_) => {
                say_err!("agentctl: agent {} still running after {secs}s", args.id);
                return Ok(TIMEOUT);
            }
        },
        None => call.await?,
    }
    .into_inner();
    let status = pb::AgentStatus::try_from(agent.status).unwrap_or_default();
    if status == pb::AgentStatus::Completed {
        if !agent.result.is_empty() {
            say!("{}", agent.result);
        }
        return Ok(SUCCESS);
    }
    let why = if agent.error.is_empty() {
        String::new()
    } else {
        format!(": {}", agent.error)
    };
    say_err!(
        "agent {} {}{}",
        agent.short_id,
        status::name(agent.status),
        why
    );
    Ok(FAILURE)
}
