//! `agentctl usage`: what agents cost — tokens, requests and USD, per agent
//! and in total, with what the prompt cache saved.

use agentd_shared::proto as pb;

use crate::autostart::Target;
use crate::exit::{Failure, SUCCESS};
use crate::view::cost::{self, ReportJson};
use crate::view::render;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Agent id, unique id prefix, or name [default: every agent].
    id: Option<String>,
    /// The agent and all its descendants (subagents and forks).
    #[arg(long, requires = "id")]
    family: bool,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

pub async fn run(target: &Target, args: Args) -> Result<u8, Failure> {
    let mut client = target.client().await?;
    let report = client
        .get_usage(pb::GetUsageRequest {
            id: args.id.unwrap_or_default(),
            family: args.family,
        })
        .await?
        .into_inner();
    if args.json {
        render::print_json(&ReportJson::of(&report));
        return Ok(SUCCESS);
    }
    let rows: Vec<Vec<String>> = report
        .agents
        .iter()
        .map(|a| {
            let u = a.usage.unwrap_or_default();
            vec![
                render::cell(&a.short_id, usize::MAX),
                if a.subagent_type.is_empty() {
                    "agent".into()
                } else {
                    render::cell(&a.subagent_type, usize::MAX)
                },
                render::cell(&a.model, 28),
                a.requests.to_string(),
                cost::tokens(u.input_tokens),
                cost::tokens(u.output_tokens),
                cost::tokens(u.cache_read_input_tokens),
                cost::tokens(u.cache_creation_input_tokens),
                a.cost.map_or("-".into(), |c| {
                    // An external agent's own figure is marked: agentd did
                    // not price it, and it says nothing of a cache.
                    let mark = if a.cost_reported { "*" } else { "" };
                    format!("{}{mark}", cost::usd(c.usd))
                }),
                match a.cost {
                    Some(c) if !a.cost_reported => cost::usd(c.without_cache_usd),
                    _ => "-".into(),
                },
            ]
        })
        .collect();
    print!(
        "{}",
        render::table(
            &[
                "ID",
                "TYPE",
                "MODEL",
                "REQUESTS",
                "INPUT",
                "OUTPUT",
                "CACHE READ",
                "CACHE WRITE",
                "COST",
                "NO-CACHE COST",
            ],
            &rows
        )
    );
    let t = report.total.unwrap_or_default();
    say!(
        "\ntotal: {} agents · {} requests{} · input {} · output {} · cache read {} · cache write {}",
        report.agents.len(),
        report.requests,
        match report.compactions {
            0 => String::new(),
            n => format!(" ({n} of them compactions)"),
        },
        t.input_tokens,
        t.output_tokens,
        t.cache_read_input_tokens,
        t.cache_creation_input_tokens
    );
    say!(
        "cost:  {}",
        cost::cost_line(&report.cost.unwrap_or_default())
    );
    // Budgets, each over its holder's whole family (DESIGN §24).
    for a in &report.agents {
        if let Some(b) = &a.budget {
            say!(
                "{} (agent {} and its descendants)",
                render::budget_line(b),
                render::cell(&a.short_id, usize::MAX)
            );
        }
    }
    if report.agents.iter().any(|a| a.cost_reported) {
        say!("* as the external agent reported it (agentd did not price its tokens)");
    }
    if !report.unpriced_models.is_empty() {
        say!(
            "not priced: {} (add [prices.\"<scheme>:<model>\"] with input and output in USD per million tokens to config.toml)",
            report.unpriced_models.join(", ")
        );
    }
    Ok(SUCCESS)
}
