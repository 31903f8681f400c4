//! `agentctl events`: the daemon's lifecycle stream, until interrupted.

#![allow(clippy::unwrap_used)] // Tests: a panic is the failure report.

use std::io::BufRead;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use agentd_e2e::mock::{MODEL, MockServer};
use agentd_e2e::{Env, wait_child};
use agentd_shared::proto as pb;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

/// Rounds of the race below: one lost interrupt fails the test.
const ROUNDS: usize = 60;

/// A SIGINT ends the watcher even while events pour in. It was lost in
/// about one round in twenty (and hung plans.rs in CI, waiting for the
/// watcher to end): the watcher listened for it anew for each event, and
/// an interrupt that came as an event did was dropped with its listener
/// when the event was taken first.
#[test]
fn sigint_ends_the_watcher_while_events_pour_in() {
    let mock = MockServer::start();
    let env = Arc::new(Env::with_mock(&mock));
    let _daemon = env.start_daemon();
    let cwd = env.project().display().to_string();
    for round in 0..ROUNDS {
        let mut watcher = env
            .ctl_command(&["--no-autostart", "events", "--json"])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = watcher.stdout.take().unwrap();
        let printed = Arc::new(AtomicUsize::new(0));
        let reader = {
            let printed = printed.clone();
            std::thread::spawn(move || {
                for line in std::io::BufReader::new(stdout).lines() {
                    line.unwrap();
                    printed.fetch_add(1, Ordering::SeqCst);
                }
            })
        };
        // Idle agents, made as fast as the daemon takes them, until the
        // watcher has ended.
        let stop = Arc::new(AtomicBool::new(false));
        let flood = {
            let (env, stop, cwd) = (env.clone(), stop.clone(), cwd.clone());
            std::thread::spawn(move || {
                env.rpc(async |client| {
                    while !stop.load(Ordering::SeqCst) {
                        client
                            .create_agent(pb::CreateAgentRequest {
                                model: MODEL.into(),
                                cwd: cwd.clone(),
                                idle: true,
                                ..Default::default()
                            })
                            .await
                            .unwrap();
                    }
                })
            })
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        while printed.load(Ordering::SeqCst) < 20 {
            assert!(Instant::now() < deadline, "the watcher shows no events");
            std::thread::sleep(Duration::from_millis(10));
        }
        kill(Pid::from_raw(watcher.id() as i32), Signal::SIGINT).unwrap();
        let status = wait_child(&mut watcher, Duration::from_secs(10));
        stop.store(true, Ordering::SeqCst);
        flood.join().unwrap();
        reader.join().unwrap();
        let status = status.unwrap_or_else(|| {
            panic!("round {round}: agentctl events went on after its SIGINT, as events came")
        });
        assert!(status.success(), "round {round}: {status:?}");
    }
}
