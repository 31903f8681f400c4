//! `bench scale`, part (c): what a finished agent leaves in the daemon's
//! memory. `--finished` (20,000; 0 skips) short agents (one prompt, one
//! answer from the mock) are run through one daemon from 8 clients, in
//! quarters; its RSS is read after each quarter and again after the idle
//! handles are swept. The baseline is a fresh daemon started on the same
//! store: what the agents cost once nothing of their runs is left. The
//! goal is at most 2× that baseline. The idle daemon reopens its
//! store to drop sled's cache (`store::refresh`); the time it took is read
//! from the daemon's log.

use std::time::{Duration, Instant};

use agentd_e2e::mock::{MockServer, Reply};
use agentd_e2e::{Env, short_agents};

use super::{arg, status_kb};

/// Longer than the daemon's sweep of idle handles (30 s).
const PAST_A_SWEEP: Duration = Duration::from_secs(35);

fn mib(kb: u64) -> f64 {
    kb as f64 / 1024.0
}

pub fn bench_finished(args: &[String]) {
    let agents: usize = arg(args, "--finished", "20000").parse().unwrap();
    if agents == 0 {
        return;
    }
    let mock = MockServer::start();
    mock.when(|_| true, Reply::text("done"));
    let env = Env::new();
    env.use_mock(&mock.url());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let daemon = env.start_daemon();
    let pid = daemon.pid();
    let fresh_empty = status_kb(pid, "VmRSS:");
    let mut after = Vec::new();
    let t0 = Instant::now();
    let quarter = agents.div_ceil(4);
    for q in 0..4 {
        let from = q * quarter;
        let to = ((q + 1) * quarter).min(agents);
        run_short_agents(&rt, &env, from, to);
        after.push((to, status_kb(pid, "VmRSS:")));
    }
    let elapsed = t0.elapsed();
    std::thread::sleep(PAST_A_SWEEP);
    let idle = status_kb(pid, "VmRSS:");
    let reopen_ms = idle_reopen_ms(&env.daemon_log_text());
    assert!(daemon.terminate().success());
    let again = env.start_daemon();
    std::thread::sleep(Duration::from_millis(300));
    let fresh_store = status_kb(again.pid(), "VmRSS:");
    // The same daemon once it has listed the agents: the in-memory record
    // index every listing uses (the idle daemon's reopen dropped its own).
    env.ctl(&["list", "--all", "--json"]).expect_code(0);
    let fresh_listed = status_kb(again.pid(), "VmRSS:");
    assert!(again.terminate().success());

    println!(
        "finished agents: {agents} short agents (one answer each) in {:.1} s from 8 clients",
        elapsed.as_secs_f64()
    );
    println!(
        "  daemon RSS, fresh on an empty store: {:.1} MiB",
        mib(fresh_empty)
    );
    for (n, kb) in &after {
        println!("  after {n} agents: {:.1} MiB", mib(*kb));
    }
    println!(
        "  after idling past a sweep: {:.1} MiB; a fresh daemon on the same store: {:.1} MiB",
        mib(idle),
        mib(fresh_store)
    );
    match reopen_ms {
        Some(ms) => {
            println!("  the idle daemon reopened its store (sled's cache dropped) in {ms} ms")
        }
        None => println!("  the idle daemon did not reopen its store"),
    }
    println!(
        "  ratio, idle after the runs / fresh on the same store: {:.2}x (goal <= 2x); per finished agent above the fresh daemon: {:.1} KiB",
        idle as f64 / fresh_store.max(1) as f64,
        idle.saturating_sub(fresh_store) as f64 / agents as f64
    );
    println!(
        "  the fresh daemon after one `list --all`: {:.1} MiB; ratio idle / that: {:.2}x",
        mib(fresh_listed),
        idle as f64 / fresh_listed.max(1) as f64
    );
}

/// Runs agents `from..to` to completion, 8 clients at a time.
fn run_short_agents(rt: &tokio::runtime::Runtime, env: &Env, from: usize, to: usize) {
    let cwd = env.project().display().to_string();
    rt.block_on(short_agents::run(
        env.socket(),
        cwd,
        "anthropic:claude-bench",
        from..to,
        8,
    ));
}

/// How long the daemon's last idle reopen of its store took, from its log.
fn idle_reopen_ms(log: &str) -> Option<u64> {
    let line = log
        .lines()
        .rev()
        .find(|l| l.contains("reopened the idle store"))?;
    let (_, after) = line.split_once("took_ms=")?;
    after
        .split(|c: char| !c.is_ascii_digit())
        .next()?
        .parse()
        .ok()
}
