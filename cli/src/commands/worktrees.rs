//! `agentctl worktrees [--json]` and `agentctl worktrees prune [--dry-run]`.

use agentd_shared::proto as pb;
use agentd_shared::visible;

use crate::autostart::Target;
use crate::exit::{Failure, SUCCESS};
use crate::view::render;
use crate::view::status;
use crate::view::worktree::{WorktreeJson, states};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print JSON.
    #[arg(long)]
    json: bool,
    #[command(subcommand)]
    action: Option<Action>,
}

#[derive(Debug, clap::Subcommand)]
enum Action {
    /// Remove orphaned worktrees (their agent is gone) that hold no work.
    Prune {
        /// Only say what would be removed.
        #[arg(long)]
        dry_run: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

pub async fn run(target: &Target, args: Args) -> Result<u8, Failure> {
    let mut client = target.client().await?;
    if let Some(Action::Prune { dry_run, json }) = args.action {
        let resp = client
            .prune_worktrees(pb::PruneWorktreesRequest {
                dry_run,
                cwd: crate::client_dir::client_dir(),
            })
            .await?
            .into_inner();
        if json {
            #[derive(serde::Serialize)]
            struct Pruned<'a> {
                dry_run: bool,
                removed: Vec<WorktreeJson<'a>>,
                kept: Vec<WorktreeJson<'a>>,
            }
            render::print_json(&Pruned {
                dry_run,
                removed: resp.removed.iter().map(WorktreeJson::of).collect(),
                kept: resp.kept.iter().map(WorktreeJson::of).collect(),
            });
            return Ok(SUCCESS);
        }
        let verb = if dry_run { "would remove" } else { "removed" };
        for w in &resp.removed {
            say!("{verb} {} ({})", w.path, visible::line(&w.branch));
        }
        for w in &resp.kept {
            say!(
                "kept {} ({}): {}",
                w.path,
                visible::line(&w.branch),
                states(w).join(", ")
            );
        }
        if resp.removed.is_empty() && resp.kept.is_empty() {
            say!("no orphaned worktrees");
        }
        return Ok(SUCCESS);
    }
    let resp = client
        .list_worktrees(pb::ListWorktreesRequest {
            cwd: crate::client_dir::client_dir(),
        })
        .await?
        .into_inner();
    if args.json {
        let rows: Vec<WorktreeJson<'_>> = resp.worktrees.iter().map(WorktreeJson::of).collect();
        render::print_json(&rows);
        return Ok(SUCCESS);
    }
    if resp.worktrees.is_empty() {
        say!("no agentd worktrees");
        return Ok(SUCCESS);
    }
    say!(
        "{:<10} {:<10} {:<18} {:<14} {:<24} PATH",
        "AGENT",
        "STATUS",
        "BRANCH",
        "BASE",
        "STATE"
    );
    for w in &resp.worktrees {
        let agent = if w.orphan { "-" } else { &w.agent_short_id };
        let status = if w.orphan {
            "gone"
        } else {
            status::name(w.agent_status)
        };
        say!(
            "{:<10} {:<10} {:<18} {:<14} {:<24} {}",
            render::cell(agent, 10),
            status,
            render::cell(&w.branch, 18),
            render::cell(if w.base.is_empty() { "-" } else { &w.base }, 14),
            states(w).join(", "),
            w.path
        );
        if !w.note.is_empty() {
            say!("  {}", w.note);
        }
    }
    Ok(SUCCESS)
}
