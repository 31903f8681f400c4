//! `bench service`: what running as a user service costs and what the
//! client pays for it. In one run, alternating where it matters:
//! - the first request of a cold start, through socket activation
//!   (systemd-socket-activate holding the socket, agentd exec'd on the
//!   first connection) against agentctl's own autostart;
//! - a warm `agentctl status` (a new process, connect, health probe, the
//!   request), and in-process the health probe agentctl now sends first
//!   against the GetStatus that follows it;
//! - a reload: SIGHUP until the daemon reports READY again.

use std::os::unix::net::UnixDatagram;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use agentd_e2e::{Env, agentd_bin, wait_until};

use super::{arg, ms, percentile};

fn report(name: &str, mut times: Vec<Duration>) -> Duration {
    times.sort();
    let p50 = percentile(&times, 0.5);
    println!(
        "{name:<44} p50 {:>8.3} ms   p90 {:>8.3} ms   (n={})",
        ms(p50),
        ms(percentile(&times, 0.9)),
        times.len()
    );
    p50
}

fn activated_cold_start(env: &Env) -> Duration {
    std::fs::create_dir_all(env.socket().parent().unwrap()).unwrap();
    let _ = std::fs::remove_file(env.socket());
    let mut activator = Command::new("systemd-socket-activate")
        .arg("--listen")
        .arg(env.socket())
        .arg(format!("-EHOME={}", env.home().display()))
        .arg(agentd_bin())
        .arg("--data-dir")
        .arg(env.data_dir())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_until("the socket", Duration::from_secs(10), || {
        env.socket().exists()
    });
    let started = Instant::now();
    env.ctl(&["status"]).expect_code(0);
    let took = started.elapsed();
    env.ctl(&["daemon", "stop"]).expect_code(0);
    let _ = activator.wait();
    took
}

fn autostarted_cold_start(env: &Env) -> Duration {
    let started = Instant::now();
    let out = env.ctl_command(&["status"]).output().unwrap();
    let took = started.elapsed();
    assert!(out.status.success());
    env.ctl(&["daemon", "stop"]).expect_code(0);
    took
}

pub fn bench_service(args: &[String]) {
    let runs: usize = arg(args, "--runs", "100").parse().unwrap();
    let cold_runs: usize = arg(args, "--cold-runs", "15").parse().unwrap();
    let env = Env::new();
    // Both cold starts open the same store.
    let (mut activated, mut autostarted) = (Vec::new(), Vec::new());
    for _ in 0..cold_runs {
        activated.push(activated_cold_start(&env));
        autostarted.push(autostarted_cold_start(&env));
    }
    let a = report("cold start, socket activation (first status)", activated);
    let b = report("cold start, agentctl autostart (first status)", autostarted);
    println!("  ratio activation / autostart: {:.2}", ms(a) / ms(b));

    // Warm: one daemon, its readiness and reloads watched.
    let notify_path = env.root.path().join("bench-notify.sock");
    let notify = UnixDatagram::bind(&notify_path).unwrap();
    notify
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let mut daemon = env
        .agentd_command()
        .env("NOTIFY_SOCKET", &notify_path)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut buf = [0u8; 256];
    let mut wait_ready = || loop {
        let n = notify.recv(&mut buf).unwrap();
        if String::from_utf8_lossy(&buf[..n]).contains("READY=1") {
            break;
        }
    };
    wait_ready();

    let mut status = Vec::with_capacity(runs);
    for _ in 0..runs {
        let started = Instant::now();
        env.ctl(&["status"]).expect_code(0);
        status.push(started.elapsed());
    }
    let whole = report("warm `agentctl status` (whole process)", status);

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (probe, get_status) = rt.block_on(async {
        let channel = agentd_shared::client::connect(&env.socket()).await.unwrap();
        let mut health = tonic_health::pb::health_client::HealthClient::new(channel.clone());
        let mut api = agentd_shared::proto::agent_service_client::AgentServiceClient::new(channel);
        let (mut probe, mut get) = (Vec::new(), Vec::new());
        for _ in 0..runs * 10 {
            let t = Instant::now();
            health
                .check(tonic_health::pb::HealthCheckRequest {
                    service: String::new(),
                })
                .await
                .unwrap();
            probe.push(t.elapsed());
            let t = Instant::now();
            api.get_status(agentd_shared::proto::GetStatusRequest {})
                .await
                .unwrap();
            get.push(t.elapsed());
        }
        (probe, get)
    });
    let p = report("health probe (in-process, one channel)", probe);
    let g = report("GetStatus (in-process, one channel)", get_status);
    println!(
        "  probe / GetStatus: {:.2}; probe / whole `status`: {:.4}",
        ms(p) / ms(g),
        ms(p) / ms(whole)
    );

    let pid = nix::unistd::Pid::from_raw(daemon.id() as i32);
    let mut reloads = Vec::with_capacity(runs);
    for _ in 0..runs {
        let started = Instant::now();
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGHUP).unwrap();
        wait_ready();
        reloads.push(started.elapsed());
    }
    report("reload: SIGHUP to READY=1", reloads);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    let _ = daemon.wait();
}
