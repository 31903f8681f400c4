//! `agentctl log`: the transcript, paged from the daemon and printed as it
//! arrives, so a long transcript never sits whole in memory.

use std::io::Write;

use agentd_shared::proto as pb;

use crate::autostart::Target;
use crate::exit::{Failure, SUCCESS};
use crate::view::render;
use crate::view::transcript::TranscriptView;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Agent id, unique id prefix, or name.
    id: String,
    /// Print a JSON array of entries (content blocks in the Anthropic Messages format).
    #[arg(long)]
    json: bool,
}

pub async fn run(target: &Target, args: Args) -> Result<u8, Failure> {
    let mut client = target.client().await?;
    // Resolve once, so every page reads the same agent.
    let agent = client
        .get_agent(pb::GetAgentRequest { id: args.id })
        .await?
        .into_inner();
    let mut view = TranscriptView::with_user_text();
    let mut out = std::io::BufWriter::with_capacity(64 * 1024, std::io::stdout().lock());
    let mut first = true;
    if args.json {
        let _ = out.write_all(b"[");
    }
    let mut from_seq = 0;
    loop {
        let page = client
            .get_transcript(pb::GetTranscriptRequest {
                id: agent.id.clone(),
                from_seq,
                limit: 0,
            })
            .await?
            .into_inner();
        for e in &page.entries {
            if args.json {
                if !first {
                    let _ = out.write_all(b",");
                }
                first = false;
                // One entry at a time, made terminal-safe (exact once
                // parsed: see `visible::json`).
                let text = serde_json::to_string(&render::EntryJson::of(e)).unwrap_or_default();
                let _ = out.write_all(agentd_shared::visible::json(&text).as_bytes());
            } else {
                view.entry(e);
            }
        }
        if page.end || page.entries.is_empty() {
            break;
        }
        from_seq = page.next_seq;
    }
    if args.json {
        let _ = out.write_all(b"]\n");
    }
    let _ = out.flush();
    view.finish();
    Ok(SUCCESS)
}
