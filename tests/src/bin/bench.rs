//! Benchmarks of the real binaries and the store. Figures go to BENCHMARKS.md.
//!
//! ```sh
//! cargo build --release --workspace
//! cargo run --release -p agentd-e2e --bin bench -- list [--agents 1000] [--runs 30]
//! cargo run --release -p agentd-e2e --bin bench -- append [--entries 2000] [--writers 1,16]
//! cargo run --release -p agentd-e2e --bin bench -- turns [--turns 200]
//! cargo run --release -p agentd-e2e --bin bench -- relay [--chars 200000]
//! ```
//! Run from a release build: the harness uses the binaries next to this one.

#![allow(clippy::unwrap_used, clippy::print_stdout)]

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::time::{Duration, Instant};

use agentd::store::{Role, Store, TranscriptEntry, now_ms};
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
            let n = client
                .list_agents(pb::ListAgentsRequest::default())
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
        role: Role::Assistant as i32,
        // A typical assistant message with a tool call, ~300 bytes.
        content_json: br#"[{"type":"text","text":"Let me look at the failing test to see what it expects before changing anything."},{"type":"tool_use","id":"toolu_01A09q90qw90lq917835lq9","name":"Read","input":{"file_path":"src/store/transcript.rs","offset":120,"limit":80}}]"#.to_vec(),
        created_at_ms: now_ms(),
        usage: None,
        stop_reason: "tool_use".into(),
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
    for &w in &writers {
        let store = Store::open(&dir.path().join(format!("store-{w}"))).unwrap();
        let per_writer = entries / w;
        let started = Instant::now();
        let mut lat: Vec<Duration> = rt.block_on(async {
            let mut tasks = Vec::new();
            for _ in 0..w {
                let store = store.clone();
                tasks.push(tokio::spawn(async move {
                    let id = uuid::Uuid::now_v7();
                    let mut lat = Vec::with_capacity(per_writer);
                    for seq in 0..per_writer as u64 {
                        let e = entry(seq);
                        let t = Instant::now();
                        store.append_durable(id, &e).await.unwrap();
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
            "sled append_durable, {w} writer(s), {} appends: {:.0} entries/s, p50 {:.3} ms ({:.2}x baseline), p99 {:.3} ms",
            lat.len(),
            lat.len() as f64 / wall.as_secs_f64(),
            ms(percentile(&lat, 0.5)),
            percentile(&lat, 0.5).as_secs_f64() / base_p50.as_secs_f64(),
            ms(percentile(&lat, 0.99)),
        );
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

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("list") => bench_list(&args),
        Some("append") => bench_append(&args),
        Some("turns") => bench_turns(&args),
        Some("relay") => bench_relay(&args),
        _ => {
            eprintln!(
                "usage: bench list [--agents N] [--runs N] | bench append [--entries N] [--writers 1,16]"
            );
            std::process::exit(2);
        }
    }
}
