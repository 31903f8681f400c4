//! `agentctl list`

use std::io::Write;
use std::time::SystemTime;

use agentd_shared::proto as pb;

use crate::autostart::Target;
use crate::exit::{Failure, SUCCESS};
use crate::{list_json, render, tree};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Include agents that ended more than a day ago.
    #[arg(long)]
    all: bool,
    /// Print a JSON array.
    #[arg(long)]
    json: bool,
    /// Show families: each agent under its parent, with its type.
    #[arg(long, conflicts_with = "json")]
    tree: bool,
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
        // One write; the trailing newline is found at once by stdout's
        // line buffering, which then writes the whole buffer through.
        let _ = std::io::stdout()
            .lock()
            .write_all(&list_json::agents(&agents));
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
    if args.tree {
        print!("{}", tree_table(&agents, now));
        return Ok(SUCCESS);
    }
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
                crate::color::status(a.status),
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

/// `list --tree`: families, each agent under its parent, with its type.
fn tree_table(agents: &[pb::Agent], now: SystemTime) -> String {
    let rows: Vec<Vec<String>> = tree::lines(agents)
        .iter()
        .map(|line| {
            let a = line.agent;
            let kind = if a.subagent_type.is_empty() {
                "agent".to_string()
            } else {
                a.subagent_type.clone()
            };
            let description = if line.orphan {
                format!(
                    "{} (parent {} not listed)",
                    a.description,
                    render::clip(&a.parent_id, 8)
                )
            } else {
                a.description.clone()
            };
            vec![
                format!("{}{}", line.prefix, a.short_id),
                if a.name.is_empty() {
                    "-".into()
                } else {
                    a.name.clone()
                },
                kind,
                crate::color::status(a.status),
                render::age(render::system_time(a.created_at.as_ref()), now),
                a.turns.to_string(),
                render::clip(&description, 60),
            ]
        })
        .collect();
    render::table(
        &[
            "ID",
            "NAME",
            "TYPE",
            "STATUS",
            "AGE",
            "TURNS",
            "DESCRIPTION",
        ],
        &rows,
    )
}
