//! `bench scale`: the scale figures, in two parts.
//!
//! Streaming: `--agents` (1,000) background agents stream slowly from the
//! mock at once (`--chars` of text, one SSE event every `--delta-ms`, so
//! they overlap for about half a minute). While all of them run: the
//! daemon's RSS (sampled, and its high-water mark), its CPU time per agent
//! and per agent-second, and `agentctl list --json` against the baseline
//! `agentctl status --json`, alternating with three controls: the
//! `ListAgents` call from a warm client and from a new connection (the
//! daemon's share), and a process that does nothing (the machine's share
//! of any command). Then every agent must complete with the whole text.
//!
//! Stored: `--agents-10k` (10,000; 0 skips) named agents written straight
//! into a store. Restart to ready against an empty store, alternating;
//! then `list`, `show` by full id, by name and by id prefix, each against
//! `status --json`, alternating.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use agentd::domain::AgentId;
use agentd_e2e::Env;
use agentd_e2e::mock::{MockMessage, MockServer, Reply};
use agentd_shared::proto as pb;

use super::{arg, list_all, ms, percentile, proc_stat, seed_named, status_kb};

pub fn bench_scale(args: &[String]) {
    let agents: usize = arg(args, "--agents", "1000").parse().unwrap();
    let stored: usize = arg(args, "--agents-10k", "10000").parse().unwrap();
    let runs: usize = arg(args, "--runs", "300").parse().unwrap();
    if agents > 0 {
        let delta = Duration::from_millis(arg(args, "--delta-ms", "100").parse().unwrap());
        let chars: usize = arg(args, "--chars", "2000").parse().unwrap();
        streaming(agents, runs, delta, chars);
    }
    if stored > 0 {
        let starts: usize = arg(args, "--starts", "5").parse().unwrap();
        stored_agents(stored, runs, starts);
    }
}

/// One timed `agentctl` process: its wall time and stdout.
fn timed(env: &Env, args: &[&str]) -> (Duration, String) {
    let t = Instant::now();
    let out = env.ctl(args);
    let took = t.elapsed();
    assert_eq!(out.code, 0, "agentctl {args:?}: {}", out.stderr);
    (took, out.stdout)
}

/// One process that does nothing (`true`), spawned and read the way
/// [`timed`] runs `agentctl`: the floor any command's latency stands on.
fn timed_nothing() -> Duration {
    let t = Instant::now();
    let out = std::process::Command::new("true")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run true");
    let took = t.elapsed();
    assert!(out.status.success());
    took
}

/// Prints one row per series: p50, p99, and p50 against the first (the
/// baseline).
fn table(title: &str, rows: Vec<(String, Vec<Duration>)>) {
    println!("{title}");
    println!(
        "  {:<52} {:>6} {:>10} {:>10} {:>10}",
        "what", "runs", "p50 ms", "p99 ms", "p50 ratio"
    );
    let base = {
        let mut b = rows[0].1.clone();
        b.sort();
        percentile(&b, 0.5)
    };
    for (what, mut times) in rows {
        times.sort();
        let p50 = percentile(&times, 0.5);
        println!(
            "  {what:<52} {:>6} {:>10.2} {:>10.2} {:>9.2}x",
            times.len(),
            ms(p50),
            ms(percentile(&times, 0.99)),
            p50.as_secs_f64() / base.as_secs_f64()
        );
    }
}

/// Samples the daemon's VmRSS every 50 ms until dropped; the maximum seen.
struct RssSampler {
    max_kb: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl RssSampler {
    fn start(pid: i32) -> RssSampler {
        let (max_kb, stop) = (
            Arc::new(AtomicU64::new(0)),
            Arc::new(AtomicBool::new(false)),
        );
        let (m, s) = (max_kb.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                m.fetch_max(status_kb(pid, "VmRSS:"), Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(50));
            }
        });
        RssSampler {
            max_kb,
            stop,
            thread: Some(thread),
        }
    }

    fn max_mib(&self) -> f64 {
        self.max_kb.load(Ordering::Relaxed) as f64 / 1024.0
    }
}

impl Drop for RssSampler {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn mib(kb: u64) -> f64 {
    kb as f64 / 1024.0
}

/// Agents the daemon counts as running.
fn running(env: &Env) -> u64 {
    env.rpc(async |c| c.get_status(pb::GetStatusRequest {}).await.unwrap())
        .into_inner()
        .agents
        .iter()
        .find(|c| c.status == pb::AgentStatus::Running as i32)
        .map_or(0, |c| c.count)
}

/// Part (a): many agents streaming at once.
fn streaming(agents: usize, runs: usize, delta: Duration, chars: usize) {
    let mock = MockServer::start();
    let env = Env::new();
    env.use_mock(&mock.url());
    env.write_config(&format!("max_running_agents = {}\n", agents + 8));
    let daemon = env.start_daemon();
    let pid = daemon.pid();
    let text: String = "word ".chars().cycle().take(chars).collect();
    let events = agentd_e2e::mock::stream::split_text(&text).len();
    mock.when(
        |_| true,
        Reply::Message(MockMessage::text(text.clone()).slow(delta)),
    );
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let rss_idle = status_kb(pid, "VmRSS:");
    let (_, cpu0) = proc_stat(pid);
    let sampler = RssSampler::start(pid);

    // Create them from 8 concurrent clients: one at a time would take
    // longer than an agent streams.
    let t0 = Instant::now();
    let ids: Vec<String> = rt.block_on(async {
        let mut tasks = Vec::new();
        for w in 0..8 {
            let socket = env.socket();
            let cwd = env.project().display().to_string();
            tasks.push(tokio::spawn(async move {
                let mut client = agentd_shared::client::agent_client(&socket).await.unwrap();
                let mut ids = Vec::new();
                for i in (w..agents).step_by(8) {
                    let a = client
                        .create_agent(pb::CreateAgentRequest {
                            prompt: format!("agent {i}: stream slowly"),
                            model: "anthropic:claude-bench".into(),
                            cwd: cwd.clone(),
                            background: true,
                            ..Default::default()
                        })
                        .await
                        .unwrap()
                        .into_inner();
                    ids.push(a.id);
                }
                ids
            }));
        }
        let mut all = Vec::new();
        for t in tasks {
            all.extend(t.await.unwrap());
        }
        all
    });
    let created = t0.elapsed();
    let deadline = Instant::now() + Duration::from_secs(30);
    while (running(&env) as usize) < agents {
        assert!(
            Instant::now() < deadline,
            "only {} of {agents} agents running 30 s after creation",
            running(&env)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let all_running = t0.elapsed();
    let rss_running = status_kb(pid, "VmRSS:");

    // A quiet window: the daemon's CPU for streaming alone.
    let quiet = Duration::from_secs(5);
    let (_, cpu_q0) = proc_stat(pid);
    let bench_pid = std::process::id() as i32;
    let (_, bench_q0) = proc_stat(bench_pid);
    std::thread::sleep(quiet);
    let (_, cpu_q1) = proc_stat(pid);
    let (_, bench_q1) = proc_stat(bench_pid);
    let running_after_quiet = running(&env);

    // Listing while they stream, alternating with the baseline; the
    // ListAgents call alone from a warm client separates the daemon's
    // share from the process's, the same call on a new connection shows
    // what connecting adds, and a process that does nothing shows what
    // the machine adds to any process.
    let mut client = rt
        .block_on(agentd_shared::client::agent_client(&env.socket()))
        .unwrap();
    let (mut base, mut list, mut rpc) = (Vec::new(), Vec::new(), Vec::new());
    let (mut fresh, mut nothing) = (Vec::new(), Vec::new());
    let mut min_running = usize::MAX;
    let mut bytes = 0;
    let listing = Instant::now();
    for _ in 0..runs {
        base.push(timed(&env, &["status", "--json"]).0);
        let t = Instant::now();
        rt.block_on(list_all(&mut client, agents));
        rpc.push(t.elapsed());
        let t = Instant::now();
        rt.block_on(async {
            let mut fresh_client = agentd_shared::client::agent_client(&env.socket())
                .await
                .expect("connect");
            list_all(&mut fresh_client, agents).await
        });
        fresh.push(t.elapsed());
        nothing.push(timed_nothing());
        let (t, out) = timed(&env, &["list", "--json"]);
        list.push(t);
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        let listed = v.as_array().unwrap();
        assert_eq!(listed.len(), agents, "the listing has every agent");
        min_running = min_running.min(listed.iter().filter(|a| a["status"] == "running").count());
        bytes = out.len();
    }
    let listing = listing.elapsed();
    let (_, cpu_listed) = proc_stat(pid);
    let (_, bench_listed) = proc_stat(bench_pid);
    let rss_listing = status_kb(pid, "VmRSS:");

    // Every agent completes with the whole text.
    let results: Vec<pb::Agent> = rt.block_on(async {
        let mut client = agentd_shared::client::agent_client(&env.socket())
            .await
            .unwrap();
        let mut out = Vec::new();
        for id in &ids {
            out.push(
                client
                    .wait_agent(pb::WaitAgentRequest { id: id.clone() })
                    .await
                    .unwrap()
                    .into_inner(),
            );
        }
        out
    });
    let wall = t0.elapsed();
    let (_, cpu_end) = proc_stat(pid);
    let hwm = status_kb(pid, "VmHWM:");
    let rss_end = status_kb(pid, "VmRSS:");
    let sampled_max = sampler.max_mib();
    drop(sampler);
    let completed = results
        .iter()
        .filter(|a| a.status == pb::AgentStatus::Completed as i32 && a.result == text)
        .count();
    assert_eq!(
        completed, agents,
        "every agent completed with the whole text"
    );
    let reqs = mock.requests();
    assert_eq!(
        reqs.len(),
        agents,
        "one model call per agent, none repeated"
    );
    let mut streams: Vec<Duration> = reqs
        .iter()
        .map(|r| r.completed_at.expect("every stream ended properly") - r.received_at)
        .collect();
    let agent_secs: f64 = streams.iter().map(Duration::as_secs_f64).sum();
    streams.sort();
    let listed = env.ctl(&["list", "--json"]).json();
    assert_eq!(
        listed
            .as_array()
            .unwrap()
            .iter()
            .filter(|a| a["status"] == "completed")
            .count(),
        agents,
        "the listing shows every agent completed"
    );

    let quiet_cpu = cpu_q1 - cpu_q0;
    let total_cpu = cpu_end - cpu0;
    let listing_cpu = cpu_listed - cpu_q1;
    println!(
        "streaming: {agents} agents, each {chars} chars as {events} text deltas, one event every {} ms (a stream took p50 {:.1} s); created in {:.1} s from 8 clients, all running at {:.1} s, all completed at {:.1} s",
        delta.as_millis(),
        percentile(&streams, 0.5).as_secs_f64(),
        created.as_secs_f64(),
        all_running.as_secs_f64(),
        wall.as_secs_f64()
    );
    println!(
        "  daemon RSS: idle {:.1} MiB; all running {:.1} MiB ({:.1} KiB per agent); during the listing {:.1} MiB; max sampled (50 ms) {sampled_max:.1} MiB; peak (VmHWM) {:.1} MiB; after {:.1} MiB",
        mib(rss_idle),
        mib(rss_running),
        rss_running.saturating_sub(rss_idle) as f64 / agents as f64,
        mib(rss_listing),
        mib(hwm),
        mib(rss_end)
    );
    println!(
        "  daemon CPU, streaming only ({:.0} s window, {running_after_quiet} running at its end): {quiet_cpu:.2} s = {:.0}% of one core = {:.3} ms CPU per agent-second",
        quiet.as_secs_f64(),
        100.0 * quiet_cpu / quiet.as_secs_f64(),
        1000.0 * quiet_cpu / (agents as f64 * quiet.as_secs_f64())
    );
    println!(
        "  daemon CPU, whole life (create -> completed, {:.0} agent-seconds streamed, including {listing_cpu:.2} s during the {:.1} s listing phase): {total_cpu:.2} s = {:.1} ms per agent, {:.3} ms per agent-second",
        agent_secs,
        listing.as_secs_f64(),
        1000.0 * total_cpu / agents as f64,
        1000.0 * total_cpu / agent_secs
    );
    println!(
        "  the bench's own process (the mock model and the clients): {:.0}% of one core while they stream, {:.0}% during the listing phase",
        100.0 * (bench_q1 - bench_q0) / quiet.as_secs_f64(),
        100.0 * (bench_listed - bench_q1) / listing.as_secs_f64()
    );
    println!(
        "  every agent completed with its whole text: {completed}/{agents}; model calls {} (none lost, none repeated); at least {min_running} of {agents} were running during each listing",
        reqs.len()
    );
    table(
        &format!("  while {agents} agents stream (alternating, {bytes} bytes of list JSON):"),
        vec![
            ("agentctl status --json (baseline)".into(), base),
            (format!("agentctl list --json, {agents} agents"), list),
            ("ListAgents RPC alone (warm client, in process)".into(), rpc),
            ("ListAgents on a new connection, in process".into(), fresh),
            (
                "a process that does nothing (true), same spawn".into(),
                nothing,
            ),
        ],
    );
}

/// Part (b): many agents in the store.
fn stored_agents(agents: usize, runs: usize, starts: usize) {
    let env = Env::new();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let seeded = Instant::now();
    let ids: Vec<AgentId> = seed_named(&rt, &env, agents);
    println!(
        "stored: {agents} named agents (2 entries each) seeded in {:.1} s",
        seeded.elapsed().as_secs_f64()
    );

    // Restart to ready, alternating with a daemon on an empty store.
    let empty = Env::new();
    let (mut base, mut full) = (Vec::new(), Vec::new());
    for _ in 0..starts {
        let t = Instant::now();
        let d = empty.start_daemon();
        base.push(t.elapsed());
        assert!(d.terminate().success());
        let t = Instant::now();
        let d = env.start_daemon();
        full.push(t.elapsed());
        assert!(d.terminate().success());
    }
    let daemon = env.start_daemon();
    let rss_idle = status_kb(daemon.pid(), "VmRSS:");

    let shorts: Vec<String> = ids.iter().map(|id| id.hex()[..7].to_string()).collect();
    let (mut status, mut list, mut by_id, mut by_name, mut by_prefix) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut bytes = 0;
    for r in 0..runs {
        let i = (r * 7919) % agents;
        status.push(timed(&env, &["status", "--json"]).0);
        let (t, out) = timed(&env, &["list", "--json"]);
        list.push(t);
        if r == 0 {
            let v: serde_json::Value = serde_json::from_str(&out).unwrap();
            assert_eq!(v.as_array().unwrap().len(), agents, "the listing has all");
            bytes = out.len();
        }
        let id = ids[i].to_string();
        for (series, q) in [
            (&mut by_id, id.clone()),
            (&mut by_name, format!("worker-{i}")),
            (&mut by_prefix, shorts[i].clone()),
        ] {
            let (t, out) = timed(&env, &["show", &q, "--json"]);
            series.push(t);
            let v: serde_json::Value = serde_json::from_str(&out).unwrap();
            assert_eq!(v["id"], id.as_str(), "{q} resolves to its agent");
        }
    }
    let rss = status_kb(daemon.pid(), "VmRSS:");
    println!(
        "  daemon RSS with {agents} stored agents: after start {:.1} MiB, after the runs {:.1} MiB",
        mib(rss_idle),
        mib(rss)
    );
    table(
        &format!("  restart to ready (spawn -> READY=1), alternating, {starts} starts each:"),
        vec![
            ("empty store (baseline)".into(), base),
            (format!("{agents} agents in the store"), full),
        ],
    );
    table(
        &format!(
            "  {agents} stored agents, whole agentctl processes, alternating ({bytes} bytes of list JSON):"
        ),
        vec![
            ("agentctl status --json (baseline)".into(), status),
            (format!("agentctl list --json, {agents} agents"), list),
            ("agentctl show <full id> --json".into(), by_id),
            ("agentctl show <name> --json".into(), by_name),
            ("agentctl show <7-digit id prefix> --json".into(), by_prefix),
        ],
    );
}
