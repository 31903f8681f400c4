//! Benchmarks of the real binaries and the store. Figures go to BENCHMARKS.md.
//!
//! ```sh
//! cargo build --release --workspace
//! cargo run --release -p agentd-e2e --bin bench -- list [--agents 1000] [--runs 30]
//! cargo run --release -p agentd-e2e --bin bench -- append [--entries 2000] [--writers 1,16]
//! cargo run --release -p agentd-e2e --bin bench -- turns [--turns 200]
//! cargo run --release -p agentd-e2e --bin bench -- relay [--chars 200000]
//! cargo run --release -p agentd-e2e --bin bench -- switch [--runs 200]
//! cargo run --release -p agentd-e2e --bin bench -- replay [--entries 100000]
//! cargo run --release -p agentd-e2e --bin bench -- concurrent [--agents 200]
//! cargo run --release -p agentd-e2e --bin bench -- restart [--agents 10000] [--entries-per-agent 100]
//! cargo run --release -p agentd-e2e --bin bench -- resolve [--agents 10000] [--runs 300]
//! cargo run --release -p agentd-e2e --bin bench -- fanout [--forks 5,10,20] [--file-bytes 41300]
//! cargo run --release -p agentd-e2e --bin bench -- worktree [--runs N] [--files 10000]
//! cargo run --release -p agentd-e2e --bin bench -- checkpoint [--files 10000] [--runs 30] [--turns 100]
//! cargo run --release -p agentd-e2e --bin bench -- sandbox [--runs 300] [--files 1000]
//! cargo run --release -p agentd-e2e --bin bench -- service [--runs 100] [--cold-runs 15]
//! cargo run --release -p agentd-e2e --bin bench -- acp [--runs 50]
//! cargo run --release -p agentd-e2e --bin bench -- acp-load [--turns 1000] [--every 250] [--runs 3]
//! cargo run --release -p agentd-e2e --bin bench -- rpc [--runs 5000]
//! cargo run --release -p agentd-e2e --bin bench -- compact [--window 20000] [--step-bytes 1200] [--times 5]
//! cargo run --release -p agentd-e2e --bin bench -- torture [--kills 1000] [--seed N|random] [--faults 0.15] [--disk-full] [--live 8] [--verbose]
//! cargo run --release -p agentd-e2e --bin bench -- scale [--agents 1000] [--agents-10k 10000] [--runs 300] [--delta-ms 100] [--chars 2000] [--starts 5] [--finished 20000]
//! cargo run --release -p agentd-e2e --bin bench -- pueue [--tasks 1000] [--runs 100]
//! cargo run --release -p agentd-e2e --bin bench -- mcp [--calls 200] [--servers 4] [--server-sandbox agent|off]
//! cargo run --release -p agentd-e2e --bin bench -- external [--turns 200] [--busy-turns 50]
//! cargo run --release -p agentd-e2e --bin bench -- ui [--agents 1000] [--frames 1000] [--idle-frames 20] [--round-ms 2000] [--rounds 60]
//! ```
//! Run from a release build: the harness uses the binaries next to this one.

#![allow(clippy::unwrap_used, clippy::print_stdout)]

mod acp;
mod acp_load;
mod checkpoint;
mod compact;
mod external;
mod fanout;
mod mcp;
mod memory;
mod pueue;
mod rpc;
mod sandbox;
mod scale;
mod service;
mod torture;
mod ui;
mod worktree;

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::time::{Duration, Instant};

use agentd::domain::{
    AgentId, AgentRecord, PromptContext, Role, Status, StopReason, TranscriptEntry, now_ms,
};
use agentd::store::{Append, Store, StoreOptions};
use agentd_e2e::Env;
use agentd_e2e::mock::{Block, MockMessage, MockServer, Reply};
use agentd_e2e::script::{script, text, turn};
use agentd_shared::proto as pb;

fn arg(args: &[String], name: &str, default: &str) -> String {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
        .unwrap_or_else(|| default.to_string())
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn time_command(env: &Env, args: &[&str], runs: usize) -> Vec<Duration> {
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs {
        let started = Instant::now();
        let out = env.ctl(args);
        times.push(started.elapsed());
        assert_eq!(out.code, 0, "{}", out.stderr);
    }
    times.sort();
    times
}

fn bench_list(args: &[String]) {
    let agents: usize = arg(args, "--agents", "1000").parse().unwrap();
    let runs: usize = arg(args, "--runs", "30").parse().unwrap();
    let env = Env::new();
    let _daemon = env.start_daemon();
    let model = env.script("s.json", &script(vec![turn(vec![text("ok")])]));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let started = Instant::now();
    rt.block_on(async {
        let mut client = agentd_shared::client::agent_client(&env.socket())
            .await
            .unwrap();
        for i in 0..agents {
            client
                .create_agent(pb::CreateAgentRequest {
                    prompt: format!("agent number {i}: summarize the repository"),
                    model: model.clone(),
                    cwd: env.project().display().to_string(),
                    background: true,
                    ..Default::default()
                })
                .await
                .unwrap();
        }
    });
    println!(
        "created {agents} agents in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    // Let them all finish so the listing is stable.
    let listed = env.ctl(&["list", "--json"]);
    let count = listed.json().as_array().unwrap().len();
    assert_eq!(count, agents);
    let rpc: Vec<Duration> = rt.block_on(async {
        let mut client = agentd_shared::client::agent_client(&env.socket())
            .await
            .unwrap();
        let mut times = Vec::new();
        for _ in 0..runs {
            let t = Instant::now();
            list_all(&mut client, agents).await;
            times.push(t.elapsed());
        }
        times.sort();
        times
    });
    println!(
        "ListAgents RPC alone, {agents} agents ({runs} runs): p50 {:.2} ms, p90 {:.2} ms",
        ms(percentile(&rpc, 0.5)),
        ms(percentile(&rpc, 0.9))
    );
    let baseline = time_command(&env, &["status", "--json"], runs);
    let list = time_command(&env, &["list", "--json"], runs);
    let bytes = env.ctl(&["list", "--json"]).stdout.len();
    println!(
        "agentctl status --json (baseline, {runs} runs): p50 {:.2} ms, p90 {:.2} ms",
        ms(percentile(&baseline, 0.5)),
        ms(percentile(&baseline, 0.9))
    );
    println!(
        "agentctl list --json, {agents} agents, {bytes} bytes ({runs} runs): p50 {:.2} ms, p90 {:.2} ms, {:.2}x baseline p50",
        ms(percentile(&list, 0.5)),
        ms(percentile(&list, 0.9)),
        percentile(&list, 0.5).as_secs_f64() / percentile(&baseline, 0.5).as_secs_f64()
    );
}

fn entry(seq: u64) -> TranscriptEntry {
    TranscriptEntry {
        seq,
        role: Role::Assistant,
        // A typical assistant message with a tool call, ~300 bytes.
        content_json: br#"[{"type":"text","text":"Let me look at the failing test to see what it expects before changing anything."},{"type":"tool_use","id":"toolu_01A09q90qw90lq917835lq9","name":"Read","input":{"file_path":"src/store/transcript.rs","offset":120,"limit":80}}]"#.to_vec(),
        created_at_ms: now_ms(),
        usage: None,
        stop_reason: Some(StopReason::ToolUse),
        cache_point: None,
        compact: None,
        file_changes: Vec::new(),
        rule_decisions: Vec::new(),
    }
}

fn bench_append(args: &[String]) {
    let entries: usize = arg(args, "--entries", "2000").parse().unwrap();
    let writers: Vec<usize> = arg(args, "--writers", "1,16")
        .split(',')
        .map(|w| w.parse().unwrap())
        .collect();
    let dir = tempfile::tempdir().unwrap();

    // Baseline: the cheapest durable append there is on this disk, a
    // write(2) plus fdatasync(2) on an open file.
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(dir.path().join("baseline.log"))
        .unwrap();
    let payload = entry(0).content_json;
    let mut base = Vec::with_capacity(entries);
    for _ in 0..entries {
        let t = Instant::now();
        file.write_all(&payload).unwrap();
        file.sync_data().unwrap();
        base.push(t.elapsed());
    }
    base.sort();
    let base_p50 = percentile(&base, 0.5);
    println!(
        "baseline write+fdatasync, {entries} appends: p50 {:.3} ms, p99 {:.3} ms, {:.0} appends/s",
        ms(base_p50),
        ms(percentile(&base, 0.99)),
        entries as f64 / base.iter().sum::<Duration>().as_secs_f64()
    );

    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    for shape in ["entries", "with-record"] {
        for &w in &writers {
            let store = Store::open(
                &dir.path().join(format!("store-{shape}-{w}")),
                StoreOptions::default(),
            )
            .unwrap();
            let per_writer = entries / w;
            let started = Instant::now();
            let mut lat: Vec<Duration> = rt.block_on(async {
                let mut tasks = Vec::new();
                for _ in 0..w {
                    let store = store.clone();
                    tasks.push(tokio::spawn(async move {
                        let (id, short) = store.issue_agent_id().unwrap();
                        let mut record = AgentRecord::new(id, short, now_ms());
                        let mut lat = Vec::with_capacity(per_writer);
                        for seq in 0..per_writer as u64 {
                            let e = [entry(seq)];
                            record.updated_at_ms = now_ms();
                            let append = if shape == "entries" {
                                Append::entries(&e)
                            } else {
                                Append::with_record(&e, &record)
                            };
                            let t = Instant::now();
                            store.append_durable(id, append).await.unwrap();
                            lat.push(t.elapsed());
                        }
                        lat
                    }));
                }
                let mut all = Vec::new();
                for t in tasks {
                    all.extend(t.await.unwrap());
                }
                all
            });
            let wall = started.elapsed();
            lat.sort();
            println!(
                "append_durable ({shape}), {w} writer(s), {} appends: {:.0} entries/s, p50 {:.3} ms ({:.2}x baseline), p99 {:.3} ms",
                lat.len(),
                lat.len() as f64 / wall.as_secs_f64(),
                ms(percentile(&lat, 0.5)),
                percentile(&lat, 0.5).as_secs_f64() / base_p50.as_secs_f64(),
                ms(percentile(&lat, 0.99)),
            );
        }
    }
}

/// Daemon overhead per turn: from the end of a model response (its last
/// SSE event leaves the mock) to the start of the next request. In between
/// the daemon parses the message, persists it (fsync), runs one Read of a
/// small file, persists the result (fsync) and builds the next body.
fn bench_turns(args: &[String]) {
    let turns: usize = arg(args, "--turns", "200").parse().unwrap();
    let mock = MockServer::start();
    let env = Env::new();
    env.use_mock(&mock.url());
    let _daemon = env.start_daemon();
    std::fs::write(env.project().join("small.txt"), "one line\n").unwrap();
    for i in 0..turns {
        mock.enqueue(Reply::Message(MockMessage::text("Reading again.").with(
            Block::ToolUse {
                id: format!("toolu_{i:04}"),
                name: "Read".into(),
                input: serde_json::json!({"file_path": "small.txt"}),
            },
        )));
    }
    mock.enqueue(Reply::Message(MockMessage::text("done")));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let id = rt.block_on(async {
        let mut client = agentd_shared::client::agent_client(&env.socket())
            .await
            .unwrap();
        client
            .create_agent(pb::CreateAgentRequest {
                prompt: "Read small.txt many times.".into(),
                model: "anthropic:claude-bench".into(),
                cwd: env.project().display().to_string(),
                max_turns: turns as u32 + 10,
                background: true,
                ..Default::default()
            })
            .await
            .unwrap()
            .into_inner()
            .id
    });
    env.ctl(&["wait", &id]).expect_code(0);
    let reqs = mock.requests();
    assert_eq!(reqs.len(), turns + 1);
    let mut gaps: Vec<Duration> = reqs
        .windows(2)
        .map(|w| w[1].received_at - w[0].completed_at.expect("response completed"))
        .collect();
    gaps.sort();
    let body = reqs.last().map_or(0, |r| r.body.len());
    println!(
        "turn overhead over {turns} turns (Read tool, 2 durable appends per turn, last body {body} bytes): p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms",
        ms(percentile(&gaps, 0.5)),
        ms(percentile(&gaps, 0.99)),
        ms(*gaps.last().unwrap())
    );
}

/// Streaming relay: text deltas per second from the mock through the daemon
/// to an attached client. The baseline is the source: how fast the daemon
/// takes the same deltas in from the mock (request received -> last event
/// sent). Deltas waiting together are coalesced into one message, so the
/// client may receive fewer, larger deltas carrying the same text.
fn bench_relay(args: &[String]) {
    let chars: usize = arg(args, "--chars", "200000").parse().unwrap();
    let text: String = "The quick brown fox jumps over the lazy dog. "
        .chars()
        .cycle()
        .take(chars)
        .collect();
    let mock = MockServer::start();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let env = Env::new();
    env.use_mock(&mock.url());
    let _daemon = env.start_daemon();
    mock.enqueue(Reply::Message(MockMessage::text(&text)));
    let (messages, received, done) = rt.block_on(async {
        let mut client = agentd_shared::client::agent_client(&env.socket())
            .await
            .unwrap();
        let (tx, rx) = tokio::sync::mpsc::channel(4);
        let agent = client
            .create_agent(pb::CreateAgentRequest {
                prompt: "Say a lot.".into(),
                model: "anthropic:claude-bench".into(),
                cwd: env.project().display().to_string(),
                background: true,
                ..Default::default()
            })
            .await
            .unwrap()
            .into_inner();
        tx.send(pb::AttachRequest {
            request: Some(pb::attach_request::Request::Start(pb::AttachStart {
                id: agent.id,
                from_seq: 0,
                as_seen: false,
            })),
        })
        .await
        .unwrap();
        let mut events = client
            .attach(tokio_stream::wrappers::ReceiverStream::new(rx))
            .await
            .unwrap()
            .into_inner();
        let (mut messages, mut received) = (0usize, String::new());
        let mut last = Instant::now();
        while let Some(ev) = events.message().await.unwrap() {
            match ev.event {
                Some(pb::attach_event::Event::Delta(pb::ContentDelta {
                    delta: Some(pb::content_delta::Delta::Text(t)),
                    ..
                })) => {
                    messages += 1;
                    received.push_str(&t);
                    last = Instant::now();
                }
                Some(pb::attach_event::Event::Status(s))
                    if s.status == pb::AgentStatus::Completed as i32 =>
                {
                    break;
                }
                _ => {}
            }
        }
        drop(tx);
        (messages, received, last)
    });
    assert_eq!(received, text, "the client got the whole text, in order");
    let req = mock.requests().last().cloned().unwrap();
    let source_deltas = agentd_e2e::mock::stream::split_text(&text).len();
    let source_time = req.completed_at.unwrap() - req.received_at;
    let relay_time = done - req.received_at;
    let source_rate = source_deltas as f64 / source_time.as_secs_f64();
    let relay_rate = source_deltas as f64 / relay_time.as_secs_f64();
    println!(
        "source, mock -> agentd (baseline): {source_deltas} text deltas in {:.1} ms = {source_rate:.0} deltas/s",
        ms(source_time)
    );
    println!(
        "relay, mock -> agentd -> attached client: the same {source_deltas} deltas ({chars} chars, as {messages} messages) in {:.1} ms = {relay_rate:.0} deltas/s ({:.2}x baseline); the last reached the client {:.2} ms after the mock sent it",
        ms(relay_time),
        relay_rate / source_rate,
        ms(done - req.completed_at.unwrap())
    );
}

fn create_fg(
    rt: &tokio::runtime::Runtime,
    client: &mut pb::agent_service_client::AgentServiceClient<tonic::transport::Channel>,
    env: &Env,
    prompt: &str,
    background: bool,
) -> pb::Agent {
    rt.block_on(client.create_agent(pb::CreateAgentRequest {
        prompt: prompt.into(),
        model: "anthropic:claude-bench".into(),
        cwd: env.project().display().to_string(),
        background,
        ..Default::default()
    }))
    .unwrap()
    .into_inner()
}

/// Background switch latency: from sending `Background` for a foreground
/// agent whose model call is in flight to its waiter's release, as seen by
/// an attached client (the `Released` event `agentctl run` exits on).
fn bench_switch(args: &[String]) {
    let runs: usize = arg(args, "--runs", "200").parse().unwrap();
    let mock = MockServer::start();
    let env = Env::new();
    env.use_mock(&mock.url());
    env.write_config("max_running_agents = 512\n");
    let _daemon = env.start_daemon();
    mock.when(
        |_| true,
        Reply::Message(MockMessage::text("slow").delay_start(Duration::from_secs(30))),
    );
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut client = rt
        .block_on(agentd_shared::client::agent_client(&env.socket()))
        .unwrap();
    let mut lat = Vec::with_capacity(runs);
    for i in 0..runs {
        let agent = create_fg(&rt, &mut client, &env, &format!("switch {i}"), false);
        let d = rt.block_on(async {
            let (tx, rx) = tokio::sync::mpsc::channel(4);
            tx.send(pb::AttachRequest {
                request: Some(pb::attach_request::Request::Start(pb::AttachStart {
                    id: agent.id.clone(),
                    from_seq: 0,
                    as_seen: false,
                })),
            })
            .await
            .unwrap();
            let mut events = client
                .clone()
                .attach(tokio_stream::wrappers::ReceiverStream::new(rx))
                .await
                .unwrap()
                .into_inner();
            // Wait until the model call is in flight.
            loop {
                if let Some(pb::attach_event::Event::Status(s)) =
                    events.message().await.unwrap().unwrap().event
                    && s.status == pb::AgentStatus::Running as i32
                {
                    break;
                }
            }
            let t = Instant::now();
            client
                .background(pb::BackgroundRequest {
                    id: agent.id.clone(),
                })
                .await
                .unwrap();
            loop {
                if let Some(pb::attach_event::Event::Released(_)) =
                    events.message().await.unwrap().unwrap().event
                {
                    break;
                }
            }
            drop(tx);
            t.elapsed()
        });
        lat.push(d);
        let _ = rt.block_on(client.cancel_agent(pb::CancelAgentRequest { id: agent.id }));
    }
    lat.sort();
    println!(
        "background switch, {runs} foreground agents with a model call in flight: Background RPC sent -> Released at an attached client p50 {:.3} ms, p99 {:.3} ms",
        ms(percentile(&lat, 0.5)),
        ms(percentile(&lat, 0.99))
    );
}

/// Puts an agent with `entries` transcript entries straight into the store
/// of `env` (before its daemon starts), the way the daemon creates one.
/// `agents` agents named `worker-<i>` with 2 entries each, written
/// straight into `env`'s store (no daemon running).
fn seed_named(rt: &tokio::runtime::Runtime, env: &Env, agents: usize) -> Vec<AgentId> {
    let store = Store::open(&env.data_dir(), StoreOptions::default()).unwrap();
    (0..agents)
        .map(|i| seed_agent(rt, &store, 2, &format!("worker-{i}")))
        .collect()
}

fn seed_agent(rt: &tokio::runtime::Runtime, store: &Store, entries: usize, name: &str) -> AgentId {
    let (id, short) = store.issue_agent_id().unwrap();
    let mut record = AgentRecord::new(id, short, now_ms());
    record.name = name.to_string();
    record.description = "seeded".into();
    record.model = "anthropic:claude-bench".into();
    record.cwd = "/".into();
    record.turns = (entries / 2) as u32;
    record.max_turns = 100;
    record.status = Status::Completed;
    let all: Vec<TranscriptEntry> = (0..entries.max(1) as u64).map(entry).collect();
    let mut chunks = all.chunks(10_000);
    let first = chunks.next().unwrap_or_default();
    let prompt = PromptContext::default();
    rt.block_on(store.append_durable(
        id,
        Append {
            created: Some(&prompt),
            ..Append::with_record(first, &record)
        },
    ))
    .unwrap();
    for batch in chunks {
        rt.block_on(store.append_durable(id, Append::with_record(batch, &record)))
            .unwrap();
    }
    id
}

/// Attach replay throughput: a client attaching from seq 0 to an agent
/// with a long transcript, until it has every entry.
fn bench_replay(args: &[String]) {
    let entries: usize = arg(args, "--entries", "100000").parse().unwrap();
    let env = Env::new();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let id = {
        let store = Store::open(&env.data_dir(), StoreOptions::default()).unwrap();
        seed_agent(&rt, &store, entries, "")
    };
    let _daemon = env.start_daemon();
    let (n, took) = rt.block_on(async {
        let mut client = agentd_shared::client::agent_client(&env.socket())
            .await
            .unwrap();
        let (tx, rx) = tokio::sync::mpsc::channel(4);
        tx.send(pb::AttachRequest {
            request: Some(pb::attach_request::Request::Start(pb::AttachStart {
                id: id.to_string(),
                from_seq: 0,
                as_seen: false,
            })),
        })
        .await
        .unwrap();
        let t = Instant::now();
        let mut events = client
            .attach(tokio_stream::wrappers::ReceiverStream::new(rx))
            .await
            .unwrap()
            .into_inner();
        let mut n = 0usize;
        while n < entries {
            if let Some(pb::attach_event::Event::Entry(_)) =
                events.message().await.unwrap().unwrap().event
            {
                n += 1;
            }
        }
        drop(tx);
        (n, t.elapsed())
    });
    println!(
        "attach replay of {n} entries (~300 bytes each): {:.1} ms = {:.0} entries/s",
        ms(took),
        n as f64 / took.as_secs_f64()
    );
}

/// A KiB figure from /proc/PID/status: `key` is e.g. "VmRSS:" or "VmHWM:"
/// (the peak).
fn status_kb(pid: i32, key: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap()
        .lines()
        .find(|l| l.starts_with(key))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// The process's RSS in KiB and the CPU time it has used (user + system),
/// in seconds.
/// One `ListAgents` call (the default listing), checked to hold all
/// `agents`.
async fn list_all(
    client: &mut pb::agent_service_client::AgentServiceClient<tonic::transport::Channel>,
    agents: usize,
) {
    let listed = client
        .list_agents(pb::ListAgentsRequest::default())
        .await
        .unwrap()
        .into_inner()
        .agents
        .len();
    assert_eq!(listed, agents, "the listing has every agent");
}

fn proc_stat(pid: i32) -> (u64, f64) {
    let rss_kb = status_kb(pid, "VmRSS:");
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let fields: Vec<&str> = stat
        .rsplit(") ")
        .next()
        .unwrap()
        .split_whitespace()
        .collect();
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    let hz = nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)
        .ok()
        .flatten()
        .unwrap_or(100) as f64;
    (rss_kb, ticks as f64 / hz)
}

/// 200 agents streaming at once against the mock: the daemon's memory and
/// CPU per agent.
fn bench_concurrent(args: &[String]) {
    let agents: usize = arg(args, "--agents", "200").parse().unwrap();
    let mock = MockServer::start();
    let env = Env::new();
    env.use_mock(&mock.url());
    env.write_config(&format!("max_running_agents = {}\n", agents + 8));
    let daemon = env.start_daemon();
    let pid = daemon.pid();
    // Each agent streams 200 text deltas over about 10 s, then ends.
    let text: String = "word ".repeat(160);
    mock.when(
        |_| true,
        Reply::Message(MockMessage::text(text).slow(Duration::from_millis(50))),
    );
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut client = rt
        .block_on(agentd_shared::client::agent_client(&env.socket()))
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let (rss0, cpu0) = proc_stat(pid);
    let t0 = Instant::now();
    let ids: Vec<String> = (0..agents)
        .map(|i| create_fg(&rt, &mut client, &env, &format!("agent {i}"), true).id)
        .collect();
    std::thread::sleep(Duration::from_secs(4));
    let (rss_mid, _) = proc_stat(pid);
    for id in &ids {
        rt.block_on(client.wait_agent(pb::WaitAgentRequest { id: id.clone() }))
            .unwrap();
    }
    let wall = t0.elapsed();
    let (rss_end, cpu_end) = proc_stat(pid);
    let cpu = cpu_end - cpu0;
    println!(
        "{agents} concurrent streaming agents: daemon RSS idle {:.1} MiB, during {:.1} MiB ({:.1} KiB per agent), after {:.1} MiB; CPU {:.2} s over {:.1} s wall = {:.1} ms CPU per agent ({:.1}% of one core)",
        rss0 as f64 / 1024.0,
        rss_mid as f64 / 1024.0,
        (rss_mid.saturating_sub(rss0)) as f64 / agents as f64,
        rss_end as f64 / 1024.0,
        cpu,
        wall.as_secs_f64(),
        cpu * 1000.0 / agents as f64,
        100.0 * cpu / wall.as_secs_f64()
    );
}

/// Restart to ready with many agents and transcript entries on disk.
fn bench_restart(args: &[String]) {
    let agents: usize = arg(args, "--agents", "10000").parse().unwrap();
    let per: usize = arg(args, "--entries-per-agent", "100").parse().unwrap();
    let env = Env::new();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let seeded = Instant::now();
    {
        let store = Store::open(&env.data_dir(), StoreOptions::default()).unwrap();
        for _ in 0..agents {
            seed_agent(&rt, &store, per, "");
        }
    }
    println!(
        "seeded {agents} agents x {per} entries in {:.1} s",
        seeded.elapsed().as_secs_f64()
    );
    let mut times = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        let daemon = env.start_daemon();
        times.push(t.elapsed());
        assert!(daemon.terminate().success());
    }
    times.sort();
    let du: u64 = walk_size(&env.data_dir());
    println!(
        "restart to ready (READY=1) with {agents} agents and {} entries ({:.0} MiB on disk), 5 starts: min {:.1} ms, median {:.1} ms, max {:.1} ms",
        agents * per,
        du as f64 / 1048576.0,
        ms(times[0]),
        ms(times[2]),
        ms(times[4])
    );
}

fn walk_size(dir: &std::path::Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(Result::ok)
                .map(|e| {
                    let p = e.path();
                    if p.is_dir() {
                        walk_size(&p)
                    } else {
                        e.metadata().map(|m| m.len()).unwrap_or(0)
                    }
                })
                .sum()
        })
        .unwrap_or(0)
}

/// Resolving what a user typed, with many agents in the store: a name and
/// a short id go through their indexes, an id prefix through a range scan.
/// Baseline: `GetAgent` by full id, a direct key lookup. For scale, the
/// cost of reading every record (what name resolution used to do) is
/// `ListAgents --all`.
fn bench_resolve(args: &[String]) {
    let agents: usize = arg(args, "--agents", "10000").parse().unwrap();
    let runs: usize = arg(args, "--runs", "300").parse().unwrap();
    let env = Env::new();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let seeded = Instant::now();
    let ids = seed_named(&rt, &env, agents);
    println!(
        "seeded {agents} named agents in {:.1} s",
        seeded.elapsed().as_secs_f64()
    );
    let _daemon = env.start_daemon();
    let shorts: Vec<String> = ids.iter().map(|id| id.hex()[..8].to_string()).collect();
    let time = |query: &dyn Fn(usize) -> String| -> Vec<Duration> {
        rt.block_on(async {
            let mut client = agentd_shared::client::agent_client(&env.socket())
                .await
                .unwrap();
            let mut times = Vec::with_capacity(runs);
            for r in 0..runs {
                let i = (r * 7919) % agents;
                let q = query(i);
                let t = Instant::now();
                let a = client
                    .get_agent(pb::GetAgentRequest { id: q })
                    .await
                    .unwrap()
                    .into_inner();
                times.push(t.elapsed());
                assert_eq!(a.id, ids[i].to_string());
            }
            times.sort();
            times
        })
    };
    // Warm the daemon's caches first; then the baseline.
    let _ = time(&|i| ids[i].to_string());
    let by_id = time(&|i| ids[i].to_string());
    let by_name = time(&|i| format!("worker-{i}"));
    let by_short = time(&|i| shorts[i].clone());
    let by_prefix = time(&|i| shorts[i][..7].to_string());
    let scan: Vec<Duration> = rt.block_on(async {
        let mut client = agentd_shared::client::agent_client(&env.socket())
            .await
            .unwrap();
        let mut times = Vec::new();
        for _ in 0..10 {
            let t = Instant::now();
            let n = client
                .list_agents(pb::ListAgentsRequest {
                    all: true,
                    ..Default::default()
                })
                .await
                .unwrap()
                .into_inner()
                .agents
                .len();
            times.push(t.elapsed());
            assert_eq!(n, agents);
        }
        times.sort();
        times
    });
    let base = percentile(&by_id, 0.5);
    for (what, t) in [
        ("GetAgent by full id (baseline)", &by_id),
        ("GetAgent by name", &by_name),
        ("GetAgent by short id", &by_short),
        ("GetAgent by 7-digit id prefix", &by_prefix),
    ] {
        println!(
            "{what}, {agents} agents ({runs} runs): p50 {:.3} ms, p99 {:.3} ms, {:.2}x baseline p50",
            ms(percentile(t, 0.5)),
            ms(percentile(t, 0.99)),
            percentile(t, 0.5).as_secs_f64() / base.as_secs_f64()
        );
    }
    println!(
        "ListAgents all={agents} (every record read; 10 runs): p50 {:.1} ms = {:.0}x the by-name p50",
        ms(percentile(&scan, 0.5)),
        percentile(&scan, 0.5).as_secs_f64() / percentile(&by_name, 0.5).as_secs_f64()
    );
}

fn main() {
    // `bench sandbox` contains commands as the daemon does: the namespace's
    // keepers and init exec this binary in a helper mode.
    if let Some(mode) = std::env::args()
        .nth(1)
        .as_deref()
        .and_then(agentd::sandbox::pid_namespace::helper_mode)
    {
        agentd::sandbox::pid_namespace::helper_main(mode);
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("resolve") => bench_resolve(&args),
        Some("list") => bench_list(&args),
        Some("append") => bench_append(&args),
        Some("turns") => bench_turns(&args),
        Some("relay") => bench_relay(&args),
        Some("switch") => bench_switch(&args),
        Some("replay") => bench_replay(&args),
        Some("concurrent") => bench_concurrent(&args),
        Some("restart") => bench_restart(&args),
        Some("fanout") => fanout::bench_fanout(&args),
        Some("worktree") => worktree::bench_worktree(&args),
        Some("checkpoint") => checkpoint::bench_checkpoint(&args),
        Some("sandbox") => sandbox::bench_sandbox(&args),
        Some("service") => service::bench_service(&args),
        Some("acp") => acp::bench_acp(&args),
        Some("acp-load") => acp_load::bench_acp_load(&args),
        Some("rpc") => rpc::bench_rpc(&args),
        Some("compact") => compact::bench_compact(&args),
        Some("torture") => torture::bench_torture(&args),
        Some("scale") => {
            scale::bench_scale(&args);
            memory::bench_finished(&args);
        }
        Some("ui") => ui::bench_ui(&args),
        Some("pueue") => pueue::bench_pueue(&args),
        Some("mcp") => mcp::bench_mcp(&args),
        Some("external") => external::bench_external(&args),
        _ => {
            eprintln!(
                "usage: bench list|append|turns|relay|switch|replay|concurrent|restart|resolve|fanout|worktree|sandbox|service|acp|acp-load|rpc|scale|pueue|mcp|external|ui [options] (see the source's header)"
            );
            std::process::exit(2);
        }
    }
}
