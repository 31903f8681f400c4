//! `agentctl ui` (DESIGN §20): a terminal dashboard for many agents — the
//! tree of every agent on the left, the selected one's live output on the
//! right, keys to steer them. A client of the public API like the rest of
//! `agentctl`: ListAgents once, then Watch; Attach for the output pane;
//! the same calls as the commands for everything the keys do.
//!
//! Files: `model` (the state), `tree`, `output`, `bar` and `screen` (the
//! drawing), `keys` (the key map), `prompt` (the input line), `actions`
//! (API calls), `link` (Watch and reconnection), `attach` (the output
//! pane's stream), `app` (the loop), `screen_guard` (raw mode and its
//! restoration), `bench` (`--bench-frames`).

use agentctl_core::{autostart, backoff, exit, follow, permission_prompt, view};

mod actions;
mod app;
mod ask_box;
mod attach;
mod bar;
mod bench;
mod keys;
mod link;
mod model;
mod output;
mod prompt;
mod screen;
mod screen_guard;
mod tree;

use std::io::IsTerminal;

use agentd_shared::proto as pb;
use crossterm::event::EventStream;

use crate::autostart::Target;
use crate::exit::{Failure, SUCCESS};
use crate::follow::{Follower, Signals, follow};
use crate::view::color;

/// History shown when Enter attaches full screen (as `agentctl attach`).
const ATTACH_RECENT: u64 = 20;

#[derive(Debug, clap::Args)]
#[command(after_help = keys::HELP)]
pub struct Args {
    /// Measure instead of showing: draw N frames of the live dashboard into
    /// an off-screen 200x50 terminal, then print frame-time and CPU
    /// statistics as JSON (for the bench).
    #[arg(long, hide = true, value_name = "N")]
    bench_frames: Option<usize>,
}

pub async fn run(target: &Target, args: Args) -> Result<u8, Failure> {
    let client = target.client().await?;
    if let Some(n) = args.bench_frames {
        // Measured with colour: the costlier frames.
        return bench::run(target, client, n, true).await;
    }
    // `--color` and NO_COLOR were decided once, in main; crossterm, which
    // reads NO_COLOR on its own, is told the decision (`--color always`
    // overrides NO_COLOR, as everywhere in agentctl).
    let color = color::enabled();
    crossterm::style::force_color_output(color);
    if !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
        return Err(Failure::failed(
            "agentctl ui needs a terminal (stdin and stdout); `agentctl list` and `agentctl events` work without one",
        ));
    }
    let mut guard = screen_guard::Guard::new()
        .map_err(|e| Failure::failed(format!("cannot take the terminal: {e}")))?;
    let mut app = app::App::new(color);
    let mut link = link::start(target.clone(), client);
    let mut signals = Signals::new(true);
    loop {
        let mut keys = EventStream::new();
        let exit = app
            .run(
                &mut guard.tui,
                &mut link,
                Some(&mut keys),
                &mut signals,
                None,
            )
            .await;
        // The full-screen attach reads the keys itself.
        drop(keys);
        match exit {
            app::Exit::Quit(code) => return Ok(code),
            app::Exit::Attach(agent) => {
                guard.suspend();
                let result = full_screen(app.client(), &agent).await;
                guard
                    .resume()
                    .map_err(|e| Failure::failed(format!("cannot take the terminal back: {e}")))?;
                match result {
                    Ok(_) => app.bar.say(format!("back from {}", agent.short_id)),
                    Err(f) => app.bar.error(f.message),
                }
            }
        }
    }
}

/// Enter: the agent followed exactly as `agentctl attach` follows it, on
/// the normal screen; Ctrl-D comes back.
async fn full_screen(
    client: Option<crate::autostart::Client>,
    agent: &pb::Agent,
) -> Result<u8, Failure> {
    let Some(mut client) = client else {
        return Err(Failure::failed("not connected to agentd"));
    };
    let agent = client
        .get_agent(pb::GetAgentRequest {
            id: agent.id.clone(),
        })
        .await?
        .into_inner();
    eprintln!(
        "agentctl ui: attached to {} (Ctrl-D returns to the dashboard)",
        agent.short_id
    );
    let from = agent.transcript_len.saturating_sub(ATTACH_RECENT);
    follow(&mut client, &agent, from, Follower::Dashboard).await?;
    Ok(SUCCESS)
}
