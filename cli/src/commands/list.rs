//! `agentctl list`

use std::time::SystemTime;

use agentd_shared::proto as pb;

use crate::autostart::Target;
use crate::exit::{Failure, SUCCESS};
use crate::render;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Include agents that ended more than a day ago.
    #[arg(long)]
    all: bool,
    /// Print a JSON array.
    #[arg(long)]
    json: bool,
}

pub async fn run(target: &Target, args: Args) -> Result<u8, Failure> {
    let mut client = target.client().await?;
    let agents = client
        .list_agents(pb::ListAgentsRequest {
            all: args.all,
            ..Default::default()
        })
        .await?
        .into_inner()
        .agents;
    if args.json {
        let json: Vec<_> = agents.iter().map(render::AgentJson::of).collect();
        render::print_json(&json);
        return Ok(SUCCESS);
    }
    if agents.is_empty() {
        eprintln!(
            "no agents{}",
            if args.all {
                ""
            } else {
                " (--all includes those that ended over a day ago)"
            }
        );
        return Ok(SUCCESS);
    }
    let now = SystemTime::now();
    let rows: Vec<Vec<String>> = agents
        .iter()
        .map(|a| {
            vec![
                a.short_id.clone(),
                if a.name.is_empty() {
                    "-".into()
                } else {
                    a.name.clone()
                },
                render::status_name(a.status).to_string(),
                render::age(render::system_time(a.created_at.as_ref()), now),
                a.turns.to_string(),
                render::clip(&a.model, 32),
                if a.waiting_for.is_empty() {
                    render::clip(&a.description, 60)
                } else {
                    render::clip(&format!("waiting: {}", a.waiting_for), 60)
                },
            ]
        })
        .collect();
    print!(
        "{}",
        render::table(
            &[
                "ID",
                "NAME",
                "STATUS",
                "AGE",
                "TURNS",
                "MODEL",
                "DESCRIPTION"
            ],
            &rows
        )
    );
    Ok(SUCCESS)
}
