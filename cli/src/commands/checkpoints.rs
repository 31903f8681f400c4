//! `agentctl checkpoints AGENT [--stat] [--json]`: the agent's user turns
//! (from 1), each with when it began, the message that began it, whether
//! its workspace was recorded, and (with `--stat`) what changed since the
//! previous checkpoint (DESIGN §23).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use agentd_shared::proto as pb;
use serde::Serialize;

use crate::autostart::Target;
use crate::exit::{Failure, SUCCESS};
use crate::view::render;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Agent id, unique id prefix, or name.
    id: String,
    /// With each checkpoint, the files changed since the previous one.
    #[arg(long)]
    stat: bool,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Serialize)]
struct CheckpointJson<'a> {
    turn: u32,
    seq: u64,
    at_ms: i64,
    message: &'a str,
    has_files: bool,
    changed: Vec<FileJson<'a>>,
}

#[derive(Serialize)]
struct FileJson<'a> {
    path: &'a str,
    status: &'a str,
}

pub async fn run(target: &Target, args: Args) -> Result<u8, Failure> {
    let mut client = target.client().await?;
    let resp = client
        .list_checkpoints(pb::ListCheckpointsRequest {
            id: args.id.clone(),
            stat: args.stat,
        })
        .await?
        .into_inner();
    if args.json {
        let rows: Vec<CheckpointJson<'_>> = resp
            .checkpoints
            .iter()
            .map(|c| CheckpointJson {
                turn: c.turn,
                seq: c.seq,
                at_ms: c.at_ms,
                message: &c.message,
                has_files: c.has_files,
                changed: c
                    .changed
                    .iter()
                    .map(|f| FileJson {
                        path: &f.path,
                        status: &f.status,
                    })
                    .collect(),
            })
            .collect();
        render::print_json(&rows);
        return Ok(SUCCESS);
    }
    if resp.checkpoints.is_empty() {
        say!("agent {} has no user turns yet", args.id);
        return Ok(SUCCESS);
    }
    say!("{:>4}  {:<8} {:<5} MESSAGE", "TURN", "AGE", "FILES");
    let now = SystemTime::now();
    for c in &resp.checkpoints {
        let at = UNIX_EPOCH + Duration::from_millis(c.at_ms.max(0) as u64);
        let first_line = c.message.lines().next().unwrap_or_default();
        say!(
            "{:>4}  {:<8} {:<5} {}",
            c.turn,
            render::age(at, now),
            if c.has_files { "yes" } else { "-" },
            render::cell(first_line, 60)
        );
        for f in &c.changed {
            say!("              {} {}", f.status, f.path);
        }
    }
    Ok(SUCCESS)
}
