//! `agentctl list`

use std::io::Write;
use std::time::SystemTime;

use agentd_shared::proto as pb;

use crate::autostart::Target;
use crate::exit::{Failure, SUCCESS};
use crate::view::{list_json, plan, render, tree};

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
        let json = list_json::agents(&agents);
        // Exact once parsed; safe on a terminal (`visible::json`).
        let json = match std::str::from_utf8(&json) {
            Ok(text) => match agentd_shared::visible::json(text) {
                std::borrow::Cow::Borrowed(_) => json,
                std::borrow::Cow::Owned(safe) => safe.into_bytes(),
            },
            Err(_) => json,
        };
        let stdout = std::io::stdout();
        grow_pipe(&stdout, json.len());
        let _ = stdout.lock().write_all(&json);
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
                render::cell(&a.short_id, usize::MAX),
                name_cell(a),
                crate::view::color::status(a.status),
                render::age(render::system_time(a.created_at.as_ref()), now),
                a.turns.to_string(),
                plan::progress(&a.plan),
                render::cell(&a.model, 32),
                if a.waiting_for.is_empty() {
                    render::cell(&a.description, 60)
                } else {
                    render::cell(&format!("waiting: {}", a.waiting_for), 60)
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
                "PLAN",
                "MODEL",
                "DESCRIPTION"
            ],
            &rows
        )
    );
    Ok(SUCCESS)
}

/// The NAME column: the agent's name, made visible, or `-`.
fn name_cell(a: &pb::Agent) -> String {
    if a.name.is_empty() {
        "-".into()
    } else {
        render::cell(&a.name, usize::MAX)
    }
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
                render::cell(&a.subagent_type, usize::MAX)
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
                format!("{}{}", line.prefix, render::cell(&a.short_id, usize::MAX)),
                name_cell(a),
                kind,
                crate::view::color::status(a.status),
                render::age(render::system_time(a.created_at.as_ref()), now),
                a.turns.to_string(),
                render::cell(&description, 60),
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

/// Lets a pipe on `out` hold `len` bytes (up to the 1 MiB an unprivileged
/// process may ask for), so that its reader (a script, `jq`) is woken once
/// rather than once per 64 KiB, each wake a scheduling delay on a busy
/// machine. Measured while 1,000 agents stream (`bench scale`, alternating
/// ABBA with the pipe left alone, three runs): `list --json` p50 0.4-0.5 ms
/// lower. Not a pipe, or refused: nothing changes.
fn grow_pipe(out: &impl std::os::fd::AsFd, len: usize) {
    use nix::fcntl::{FcntlArg, fcntl};
    const MAX: usize = 1024 * 1024;
    if let Ok(current) = fcntl(out, FcntlArg::F_GETPIPE_SZ)
        && usize::try_from(current).is_ok_and(|c| c < len)
    {
        let _ = fcntl(out, FcntlArg::F_SETPIPE_SZ(len.min(MAX) as i32));
    }
}

#[cfg(test)]
mod tests {
    use nix::fcntl::{FcntlArg, fcntl};

    use super::grow_pipe;

    #[test]
    fn a_pipe_grows_to_hold_the_listing_up_to_a_mebibyte_and_a_file_is_left_alone() {
        let (_read, write) = nix::unistd::pipe().unwrap();
        let before = fcntl(&write, FcntlArg::F_GETPIPE_SZ).unwrap();
        grow_pipe(&write, 300_000);
        let after = fcntl(&write, FcntlArg::F_GETPIPE_SZ).unwrap();
        assert!(after >= 300_000 && after > before, "{before} -> {after}");
        grow_pipe(&write, 50 * 1024 * 1024);
        let capped = fcntl(&write, FcntlArg::F_GETPIPE_SZ).unwrap();
        assert!(capped >= after && capped <= 1024 * 1024, "{capped}");

        let file = tempfile::tempfile().unwrap();
        grow_pipe(&file, 300_000);
    }
}
