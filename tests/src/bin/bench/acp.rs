//! `bench acp`: what the editor bridge adds to a turn. The same one-turn
//! prompt (the scripted model answers at once), N times on one agent:
//! through `agentctl acp` (session/prompt until its response) against
//! SendMessage plus Attach until the status ends the turn, in-process —
//! alternating so noise hits both.

use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;
use std::time::{Duration, Instant};

use agentd_e2e::Env;
use agentd_e2e::script::{script, text, turn};
use agentd_shared::proto as pb;
use serde_json::{Value, json};

use super::{arg, ms, percentile};

fn report(name: &str, mut times: Vec<Duration>) -> Duration {
    times.sort();
    let p50 = percentile(&times, 0.5);
    println!(
        "{name:<40} p50 {:>8.3} ms   p90 {:>8.3} ms   (n={})",
        ms(p50),
        ms(percentile(&times, 0.9)),
        times.len()
    );
    p50
}

pub fn bench_acp(args: &[String]) {
    let runs: usize = arg(args, "--runs", "50").parse().unwrap();
    let env = Env::new();
    let _daemon = env.start_daemon();
    // Enough turns for every prompt of both ways.
    let turns: Vec<Value> = (0..runs * 2 + 2)
        .map(|i| turn(vec![text(&format!("answer {i}"))]))
        .collect();
    let model = env.script("s.json", &script(turns));

    let mut bridge = env
        .ctl_command(&["acp", "--model", &model])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = bridge.stdin.take().unwrap();
    let mut stdout = BufReader::new(bridge.stdout.take().unwrap());
    let mut call = |id: u64, method: &str, params: Value| -> Value {
        writeln!(
            stdin,
            "{}",
            json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
        )
        .unwrap();
        stdin.flush().unwrap();
        let mut line = String::new();
        loop {
            line.clear();
            stdout.read_line(&mut line).unwrap();
            let m: Value = serde_json::from_str(&line).unwrap();
            if m["id"] == id && m.get("method").is_none() {
                return m;
            }
        }
    };
    call(0, "initialize", json!({"protocolVersion": 1}));
    let acp_session = call(
        1,
        "session/new",
        json!({"cwd": env.project().display().to_string(), "mcpServers": []}),
    )["result"]["sessionId"]
        .as_str()
        .unwrap()
        .to_string();

    let grpc_agent = env.rpc(async |c| {
        c.create_agent(pb::CreateAgentRequest {
            idle: true,
            model: model.clone(),
            cwd: env.project().display().to_string(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner()
        .id
    });
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut client = rt
        .block_on(agentd_shared::client::agent_client(&env.socket()))
        .unwrap();

    let (mut through_acp, mut through_grpc) = (Vec::new(), Vec::new());
    for i in 0..runs {
        let t = Instant::now();
        let r = call(
            10 + i as u64,
            "session/prompt",
            json!({"sessionId": acp_session, "prompt": [{"type": "text", "text": format!("q{i}")}]}),
        );
        through_acp.push(t.elapsed());
        assert_eq!(r["result"]["stopReason"], "end_turn", "{r}");

        let t = Instant::now();
        rt.block_on(async {
            let (tx, rx) = tokio::sync::mpsc::channel(4);
            let len = client
                .get_agent(pb::GetAgentRequest {
                    id: grpc_agent.clone(),
                })
                .await
                .unwrap()
                .into_inner()
                .transcript_len;
            tx.send(agentd_e2e::attach_start(&grpc_agent, len))
                .await
                .unwrap();
            let mut events = client
                .attach(tokio_stream::wrappers::ReceiverStream::new(rx))
                .await
                .unwrap()
                .into_inner();
            client
                .send_message(pb::SendMessageRequest {
                    id: grpc_agent.clone(),
                    message: format!("q{i}"),
                    ..Default::default()
                })
                .await
                .unwrap();
            let mut seen_running = false;
            while let Some(e) = events.message().await.unwrap() {
                if let Some(pb::attach_event::Event::Status(s)) = e.event {
                    if s.status == pb::AgentStatus::Running as i32 {
                        seen_running = true;
                    } else if seen_running && s.status == pb::AgentStatus::Completed as i32 {
                        break;
                    }
                }
            }
            drop(tx);
        });
        through_grpc.push(t.elapsed());
    }
    let a = report("one turn through agentctl acp", through_acp);
    let g = report("one turn through gRPC (send + attach)", through_grpc);
    println!("  ratio acp / gRPC: {:.2}", ms(a) / ms(g));
    drop(stdin);
    let _ = bridge.wait();
}
