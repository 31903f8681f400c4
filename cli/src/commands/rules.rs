//! `agentctl rules list [--json]`: the permission rules (Claude Code's
//! syntax, DESIGN §24) an agent started here is put to, each with the file
//! it came from and whether it applies (a repository's allow rules do not).

use agentd_shared::proto as pb;
use serde::Serialize;

use crate::autostart::Target;
use crate::exit::{Failure, SUCCESS};
use crate::view::render;

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    action: Action,
}

#[derive(Debug, clap::Subcommand)]
enum Action {
    /// The rules in force for an agent started in this directory.
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Serialize)]
struct RuleJson<'a> {
    kind: &'a str,
    rule: &'a str,
    source: &'a str,
    applies: bool,
}

pub async fn run(target: &Target, args: Args) -> Result<u8, Failure> {
    let Action::List { json } = args.action;
    let cwd = crate::client_dir::client_dir();
    let mut client = target.client().await?;
    let resp = client
        .list_rules(pb::ListRulesRequest { cwd })
        .await?
        .into_inner();
    if json {
        let rows: Vec<RuleJson<'_>> = resp
            .rules
            .iter()
            .map(|r| RuleJson {
                kind: &r.kind,
                rule: &r.rule,
                source: &r.source,
                applies: r.applies,
            })
            .collect();
        render::print_json(&rows);
        return Ok(SUCCESS);
    }
    if resp.rules.is_empty() {
        say!("no permission rules: the permission mode decides every call");
        return Ok(SUCCESS);
    }
    say!("{:<5} {:<40} FROM", "KIND", "RULE");
    for r in &resp.rules {
        let note = if r.applies {
            ""
        } else {
            "  (a repository's allow rule: not applied)"
        };
        say!(
            "{:<5} {:<40} {}{note}",
            r.kind,
            render::cell(&r.rule, 40),
            r.source
        );
    }
    Ok(SUCCESS)
}
