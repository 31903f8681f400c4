//! `bench sandbox`: what the tool sandbox costs a Bash call — `true`, and
//! a `find` over 1,000 files — confined (Landlock ruleset built in the
//! daemon, applied in the child before exec; with and without the read
//! denials carved out of it; with the network namespace and proxy of the
//! default `network = "proxy"`) against unconfined, calls in rotating
//! order so noise hits all. Then a loop of 100 `curl` requests to a local
//! server, through the agent's proxy (each connection recorded durably in
//! a real store, opened and closed, as the daemon records it) against the
//! same loop direct.

use std::io::{BufRead as _, BufReader, Write as _};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use agentd::domain::{AgentId, ConnectionDecision, ConnectionRecord, NetTarget, NetworkMode};
use agentd::network::{BoxFuture, Egress};
use agentd::store::{Store, StoreOptions};
use agentd::tools::AgentProcesses;

use agentd::domain::{SandboxMode, ToolName};
use agentd::sandbox::{Policy, ReadDenials};
use agentd::tools::{ToolContext, run_tool};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::{arg, ms, percentile};

pub fn bench_sandbox(args: &[String]) {
    let runs: usize = arg(args, "--runs", "300").parse().unwrap();
    let files: usize = arg(args, "--files", "1000").parse().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("project");
    for i in 0..files {
        let sub = project.join(format!("d{:02}", i % 50));
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::write(sub.join(format!("f{i}.txt")), "x").unwrap();
    }
    let project = project.canonicalize().unwrap();
    let tmp = dir.path().join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let plain = ToolContext::new(project.clone(), CancellationToken::new());
    let mut confined = plain.clone();
    confined.sandbox = Some(Policy {
        mode: SandboxMode::WorkspaceWrite,
        network: NetworkMode::Full,
        workspace: project.clone(),
        tmpdir: tmp,
        also_writable: Vec::new(),
    });
    // As the daemon builds them: its own directories and the secret
    // stores, carved out of every grant (DESIGN §22).
    let mut denying = confined.clone();
    let own: Vec<std::path::PathBuf> = vec![
        agentd_shared::paths::data_dir(None),
        agentd_shared::paths::socket_path(None)
            .parent()
            .map(std::path::PathBuf::from)
            .unwrap_or_default(),
        agentd::sandbox::tmp_root(),
        agentd_shared::paths::config_dir(),
    ];
    let mut env = (*denying.env).clone();
    env.read_denials = ReadDenials::new(&agentd_shared::paths::home_dir(), &own, &[], &[]);
    let denied = env.read_denials.paths.len();
    denying.env = std::sync::Arc::new(env);
    // The default: the same, in a network namespace whose proxy records
    // every connection in a real store.
    let store = Store::open(&dir.path().join("data"), StoreOptions::default()).unwrap();
    let (agent, _) = store.issue_agent_id().unwrap();
    let mut proxied = denying.clone();
    if let Some(policy) = proxied.sandbox.as_mut() {
        policy.network = NetworkMode::Proxy;
    }
    proxied.processes = Arc::new(AgentProcesses::new(
        Arc::new(Recorded {
            store,
            agent,
            seq: AtomicU64::new(0),
        }),
        None,
    ));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    agentd::sandbox::pid_namespace::set_helper().unwrap();
    println!(
        "Landlock ABI {}; commands contained in {}; {files} files; {denied} paths denied to reads; Bash tool calls through agentd::tools::run_tool, in rotating order.",
        agentd::sandbox::kernel_abi(),
        agentd::sandbox::pid_namespace::support()
            .map(|m| m.describe())
            .unwrap_or("nothing")
    );
    println!(
        "| command | runs | unconfined p50 | confined, network full, no read denials p50 | confined, network full p50 | confined, proxy (default) p50 | confined, proxy p90 | no denials / unconfined | full / unconfined | proxy / unconfined (p50) |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |");
    let contexts = [&plain, &confined, &denying, &proxied];
    for (label, command, n) in [
        ("true", "true".to_string(), runs),
        (
            "find, 1,000 files",
            "find . -type f | wc -l".to_string(),
            runs / 3,
        ),
    ] {
        let input = json!({"command": command});
        let mut times = [Vec::new(), Vec::new(), Vec::new(), Vec::new()];
        for i in 0..n + 5 {
            for j in 0..contexts.len() {
                // Rotate which goes first, so noise hits all alike.
                let k = (i + j) % contexts.len();
                let started = Instant::now();
                let out = rt.block_on(run_tool(ToolName::Bash, &input, contexts[k]));
                let took = started.elapsed();
                assert!(!out.is_error, "{}", out.content);
                if i >= 5 {
                    times[k].push(took);
                }
            }
        }
        for t in &mut times {
            t.sort();
        }
        let p = |t: &[Duration], q| ms(percentile(t, q));
        println!(
            "| {label} | {n} | {:.3} ms | {:.3} ms | {:.3} ms | {:.3} ms | {:.3} ms | {:.2}x | {:.2}x | {:.2}x |",
            p(&times[0], 0.5),
            p(&times[1], 0.5),
            p(&times[2], 0.5),
            p(&times[3], 0.5),
            p(&times[3], 0.9),
            p(&times[1], 0.5) / p(&times[0], 0.5),
            p(&times[2], 0.5) / p(&times[0], 0.5),
            p(&times[3], 0.5) / p(&times[0], 0.5)
        );
    }
    let loops: usize = arg(args, "--curl-loops", "10").parse().unwrap();
    curl_loop(&rt, loops, [&plain, &denying, &proxied]);
}

/// The egress of the bench's proxy: allows every connection and records
/// it as the daemon does (durably, when it opens and when it closes).
struct Recorded {
    store: Store,
    agent: AgentId,
    seq: AtomicU64,
}

impl Egress for Recorded {
    fn open<'a>(
        &'a self,
        target: &'a NetTarget,
        method: &'a str,
    ) -> BoxFuture<'a, ConnectionRecord> {
        Box::pin(async move {
            let c = ConnectionRecord {
                seq: self.seq.fetch_add(1, Ordering::Relaxed),
                agent: self.agent,
                target: target.clone(),
                method: method.to_string(),
                decision: ConnectionDecision::Allowed,
                reason: "bench".into(),
                bytes_sent: 0,
                bytes_received: 0,
                started_at_ms: agentd::domain::now_ms(),
                ended_at_ms: None,
                error: None,
            };
            self.store.record_connection_durable(&c).await.unwrap();
            c
        })
    }

    fn close(&self, mut record: ConnectionRecord) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            record.ended_at_ms = Some(agentd::domain::now_ms());
            self.store.record_connection_durable(&record).await.unwrap();
        })
    }
}

/// A local HTTP server answering each request with a short body, one
/// connection at a time (curl opens one per request).
fn origin() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            while reader.read_line(&mut line).unwrap_or(0) > 0 && line != "\r\n" {
                line.clear();
            }
            let mut stream = stream;
            let _ = stream
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok");
        }
    });
    port
}

/// 100 `curl` requests in one Bash call: unconfined and confined with the
/// network full (direct), and confined through the proxy; loops in
/// rotating order.
fn curl_loop(rt: &tokio::runtime::Runtime, loops: usize, contexts: [&ToolContext; 3]) {
    let port = origin();
    // `--noproxy ''`: through the proxy where the variables name one (the
    // proxied context), direct where none is set.
    let input = json!({"command": format!(
        "for i in $(seq 100); do curl -s -o /dev/null -w '%{{http_code}}\\n' --noproxy '' http://127.0.0.1:{port}/; done | sort | uniq -c"
    )});
    let mut times = [Vec::new(), Vec::new(), Vec::new()];
    for i in 0..loops + 1 {
        for j in 0..contexts.len() {
            let k = (i + j) % contexts.len();
            let started = Instant::now();
            let out = rt.block_on(run_tool(ToolName::Bash, &input, contexts[k]));
            let took = started.elapsed();
            assert!(
                !out.is_error && out.content.trim() == "100 200",
                "context {k}: {}",
                out.content
            );
            if i >= 1 {
                times[k].push(took);
            }
        }
    }
    for t in &mut times {
        t.sort();
    }
    let p = |t: &[Duration]| ms(percentile(t, 0.5));
    println!();
    println!(
        "| 100 `curl` requests to 127.0.0.1, one Bash call | loops | unconfined, direct p50 | confined, network full, direct p50 | confined, through the proxy p50 | per request, through the proxy | proxy / direct (confined) | proxy / unconfined |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- |");
    println!(
        "| curl loop | {loops} | {:.1} ms | {:.1} ms | {:.1} ms | {:.3} ms | {:.2}x | {:.2}x |",
        p(&times[0]),
        p(&times[1]),
        p(&times[2]),
        p(&times[2]) / 100.0,
        p(&times[2]) / p(&times[1]),
        p(&times[2]) / p(&times[0])
    );
}
