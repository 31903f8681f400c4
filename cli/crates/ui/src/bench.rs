//! `agentctl ui --bench-frames N`: the dashboard's own loop — the real
//! link (Watch), the real Attach stream of the selected agent, the same
//! model and widgets — drawing into ratatui's off-screen `TestBackend`
//! instead of a terminal, so the bench (tests/src/bin/bench) measures frame
//! time and CPU while agents stream without a terminal to drive. Kept in
//! `agentctl` rather than a library: the loop measured is the one shipped.

use std::time::{Duration, Instant};

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use serde_json::json;

use super::app::{App, Exit, Frames};
use super::link;
use crate::autostart::{Client, Target};
use crate::exit::{Failure, SUCCESS};
use crate::follow::Signals;

/// The off-screen terminal's size: a large window, where frames cost most.
const WIDTH: u16 = 200;
const HEIGHT: u16 = 50;

pub async fn run(
    target: &Target,
    client: Client,
    wanted: usize,
    color: bool,
) -> Result<u8, Failure> {
    let mut tui = Terminal::new(TestBackend::new(WIDTH, HEIGHT))
        .map_err(|e| Failure::failed(format!("cannot make the off-screen terminal: {e}")))?;
    let mut app = App::new(color);
    let mut link = link::start(target.clone(), client);
    let mut signals = Signals::new(true);
    let mut frames = Frames {
        wanted: wanted.max(1),
        ..Default::default()
    };
    let cpu_before = cpu_time();
    let started = Instant::now();
    let exit = app
        .run(&mut tui, &mut link, None, &mut signals, Some(&mut frames))
        .await;
    let wall = started.elapsed();
    let cpu = cpu_time().saturating_sub(cpu_before);
    if let Exit::Quit(code) = exit
        && code != SUCCESS
    {
        return Ok(code);
    }
    let mut times = frames.times.clone();
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let pct = |p: f64| {
        let i = ((times.len() as f64 * p).ceil() as usize).clamp(1, times.len()) - 1;
        ms(times[i])
    };
    let report = json!({
        "frames": times.len(),
        "agents": app.model.len(),
        "events": frames.events,
        "frame_ms": {"p50": pct(0.50), "p99": pct(0.99), "max": pct(1.0)},
        "wall_s": wall.as_secs_f64(),
        "cpu_s": cpu.as_secs_f64(),
        "cpu_share": cpu.as_secs_f64() / wall.as_secs_f64().max(1e-9),
    });
    println!("{report}");
    Ok(SUCCESS)
}

/// User plus system CPU time of this process so far (from /proc; zero
/// where it cannot be read).
fn cpu_time() -> Duration {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return Duration::ZERO;
    };
    // Fields after the command name (which may hold spaces) start at
    // field 3; utime and stime are fields 14 and 15.
    let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
        return Duration::ZERO;
    };
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 = [11, 12]
        .iter()
        .filter_map(|&i| fields.get(i).and_then(|f| f.parse::<u64>().ok()))
        .sum();
    let per_sec = nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)
        .ok()
        .flatten()
        .filter(|&t| t > 0)
        .unwrap_or(100) as u64;
    Duration::from_secs_f64(ticks as f64 / per_sec as f64)
}
