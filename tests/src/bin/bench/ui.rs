//! `bench ui`: the dashboard's frame time and CPU (DESIGN §20: "smooth with
//! 1,000 agents"), from `agentctl ui --bench-frames N` — the shipped event
//! loop (Watch, the selected agent's Attach, the same model and widgets)
//! drawing into an off-screen 200x50 terminal, which prints frame-time
//! percentiles, the Watch events it applied, and its CPU share as JSON.
//!
//! Streaming: `--agents` (1,000) background agents on scripted models, each
//! working through `--rounds` rounds of `--round-ms` (spread over 0.75x to
//! 1.2x so they do not tick in step): a line of text and a `TodoWrite`
//! that moves its plan on, which the daemon publishes on Watch (Watch
//! carries lifecycle — created, status, plan, asks — not text; the text
//! goes to the selected agent's Attach stream). `--frames` frames are
//! measured while every agent is running.
//!
//! Baseline, same run: once the agents are cancelled (all 1,000 ended, no
//! events), the same dashboard for `--idle-frames` frames; with nothing
//! changing it draws only when the ages tick (once a second).

use std::time::{Duration, Instant};

use agentd_e2e::Env;
use agentd_e2e::script::{delayed, script, text, tool, turn};
use agentd_shared::proto as pb;
use serde_json::{Value, json};

use super::arg;

/// Scripts with different round lengths, so the agents drift apart.
const VARIANTS: usize = 8;

pub fn bench_ui(args: &[String]) {
    let agents: usize = arg(args, "--agents", "1000").parse().unwrap();
    let frames: usize = arg(args, "--frames", "1000").parse().unwrap();
    let idle_frames: usize = arg(args, "--idle-frames", "20").parse().unwrap();
    let round_ms: u64 = arg(args, "--round-ms", "2000").parse().unwrap();
    let rounds: usize = arg(args, "--rounds", "60").parse().unwrap();

    let env = Env::new();
    env.write_config(&format!("max_running_agents = {}\n", agents + 8));
    let daemon = env.start_daemon();
    let models: Vec<String> = (0..VARIANTS)
        .map(|k| {
            let ms = round_ms * (12 + k as u64) / 16;
            env.script(&format!("rounds-{k}.json"), &model_script(rounds, ms))
        })
        .collect();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();

    let t0 = Instant::now();
    let ids = rt.block_on(create_all(&env, &models, agents));
    let created = t0.elapsed();
    let deadline = Instant::now() + Duration::from_secs(60);
    while running(&env) < agents as u64 {
        assert!(
            Instant::now() < deadline,
            "only {} of {agents} agents running 60 s after creation",
            running(&env)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let all_running = t0.elapsed();
    let (_, daemon_cpu0) = super::proc_stat(daemon.pid());
    let streaming = dashboard(&env, frames);
    let (_, daemon_cpu1) = super::proc_stat(daemon.pid());
    let still_running = running(&env);
    let stream_wall = streaming["wall_s"].as_f64().unwrap();

    // Every agent ended: cancel what is left, then the idle dashboard.
    rt.block_on(async {
        let mut c = agentd_shared::client::agent_client(&env.socket())
            .await
            .unwrap();
        for id in &ids {
            let _ = c
                .cancel_agent(pb::CancelAgentRequest { id: id.clone() })
                .await;
        }
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    while live(&env) > 0 {
        assert!(Instant::now() < deadline, "agents still live after cancel");
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_secs(1));
    let idle = dashboard(&env, idle_frames);

    println!(
        "ui: {agents} agents on scripted models, {rounds} rounds of ~{round_ms} ms (0.75x-1.2x), each a line of text and a TodoWrite (a plan event on Watch); created in {:.1} s, all running at {:.1} s; {still_running} still running when the streaming measurement ended",
        created.as_secs_f64(),
        all_running.as_secs_f64()
    );
    println!(
        "  daemon CPU during the streaming measurement: {:.0}% of one core",
        100.0 * (daemon_cpu1 - daemon_cpu0) / stream_wall
    );
    println!(
        "  {:<34} {:>7} {:>7} {:>9} {:>8} {:>8} {:>8} {:>8} {:>9}",
        "agentctl ui --bench-frames",
        "frames",
        "agents",
        "events/s",
        "p50 ms",
        "p99 ms",
        "max ms",
        "wall s",
        "CPU %"
    );
    for (what, r) in [
        (format!("{agents} agents streaming"), &streaming),
        (format!("{agents} ended, idle (baseline)"), &idle),
    ] {
        let f = &r["frame_ms"];
        println!(
            "  {what:<34} {:>7} {:>7} {:>9.0} {:>8.2} {:>8.2} {:>8.2} {:>8.1} {:>8.1}%",
            r["frames"],
            r["agents"],
            r["events"].as_f64().unwrap() / r["wall_s"].as_f64().unwrap(),
            f["p50"].as_f64().unwrap(),
            f["p99"].as_f64().unwrap(),
            f["max"].as_f64().unwrap(),
            r["wall_s"].as_f64().unwrap(),
            100.0 * r["cpu_share"].as_f64().unwrap()
        );
    }
    let ratio = |k: &str| {
        streaming["frame_ms"][k].as_f64().unwrap() / idle["frame_ms"][k].as_f64().unwrap()
    };
    println!(
        "  streaming / idle: p50 frame {:.2}x, p99 frame {:.2}x; CPU per frame {:.2}x",
        ratio("p50"),
        ratio("p99"),
        (streaming["cpu_s"].as_f64().unwrap() / streaming["frames"].as_f64().unwrap())
            / (idle["cpu_s"].as_f64().unwrap() / idle["frames"].as_f64().unwrap())
    );
    println!("  raw: streaming {streaming}");
    println!("  raw: idle {idle}");
}

/// One `agentctl ui --bench-frames` run: its JSON report.
fn dashboard(env: &Env, frames: usize) -> Value {
    let out = env.ctl(&["ui", "--bench-frames", &frames.to_string()]);
    assert_eq!(out.code, 0, "agentctl ui --bench-frames: {}", out.stderr);
    let report = out.json();
    assert_eq!(
        report["frames"].as_u64(),
        Some(frames as u64),
        "every frame drawn"
    );
    report
}

/// A model working through `rounds` rounds of `ms` each: a line of text and
/// a TodoWrite moving its plan on, then a closing answer.
fn model_script(rounds: usize, ms: u64) -> Value {
    let round = |i: usize| {
        let todos: Vec<Value> = (0..5)
            .map(|j| {
                let status = match j.cmp(&(i % 5)) {
                    std::cmp::Ordering::Less => "completed",
                    std::cmp::Ordering::Equal => "in_progress",
                    std::cmp::Ordering::Greater => "pending",
                };
                json!({
                    "content": format!("round {i}, step {j}"),
                    "activeForm": format!("working on round {i}, step {j}"),
                    "status": status,
                })
            })
            .collect();
        delayed(
            ms,
            vec![
                text(&format!(
                    "Round {i}: looked at the next part of the code and moved the plan on."
                )),
                tool("TodoWrite", json!({"todos": todos})),
            ],
        )
    };
    let mut turns: Vec<Value> = (0..rounds).map(round).collect();
    turns.push(turn(vec![text("All rounds done.")]));
    script(turns)
}

/// Creates `agents` background agents from 8 concurrent clients, spreading
/// them over the model variants; their ids.
async fn create_all(env: &Env, models: &[String], agents: usize) -> Vec<String> {
    let mut tasks = Vec::new();
    for w in 0..8 {
        let socket = env.socket();
        let cwd = env.project().display().to_string();
        let models = models.to_vec();
        tasks.push(tokio::spawn(async move {
            let mut client = agentd_shared::client::agent_client(&socket).await.unwrap();
            let mut ids = Vec::new();
            for i in (w..agents).step_by(8) {
                let a = client
                    .create_agent(pb::CreateAgentRequest {
                        prompt: format!("agent {i}: work through the rounds"),
                        model: models[i % models.len()].clone(),
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
}

fn count(env: &Env, statuses: &[pb::AgentStatus]) -> u64 {
    env.rpc(async |c| c.get_status(pb::GetStatusRequest {}).await.unwrap())
        .into_inner()
        .agents
        .iter()
        .filter(|c| statuses.iter().any(|s| c.status == *s as i32))
        .map(|c| c.count)
        .sum()
}

fn running(env: &Env) -> u64 {
    count(env, &[pb::AgentStatus::Running])
}

fn live(env: &Env) -> u64 {
    count(
        env,
        &[
            pb::AgentStatus::Pending,
            pb::AgentStatus::Running,
            pb::AgentStatus::Waiting,
        ],
    )
}
