//! What a confined agent's tools start, and what they can reach, as a
//! hostile agent would try it (DESIGN §14): nothing a command starts
//! outlives its agent or the daemon, whatever it does to hide; io_uring
//! does not reach a Unix socket; and a process in another PID namespace
//! (where every sandboxed command runs) is never served by the daemon.

#![allow(clippy::unwrap_used)] // Tests: a panic is the failure report.

use std::process::{Command, Stdio};
use std::time::Duration;

use agentd_e2e::script::bash_each;
use agentd_e2e::{Env, tool_results, wait_until};
use serde_json::Value;

/// Process ids (this namespace's) whose command line holds `tag`, not
/// counting zombies.
fn tagged(tag: &str) -> Vec<i32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
            continue;
        };
        let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        let zombie = stat
            .rsplit_once(')')
            .is_some_and(|(_, r)| r.trim_start().starts_with(['Z', 'X']));
        if String::from_utf8_lossy(&cmdline).contains(tag) && !zombie {
            out.push(pid);
        }
    }
    out
}

fn new_tag() -> String {
    format!("agentd-survivor-{}", uuid::Uuid::new_v4().simple())
}

/// A command that leaves a process behind every way it can: a new
/// session, no environment (no marker), reparented by a double fork,
/// ignoring hangups, under another name.
fn survivor(tag: &str) -> String {
    format!(
        "(setsid env -i nohup bash -c '(exec -a {tag} sleep 600 &)' >/dev/null 2>&1 &); echo started"
    )
}

/// Kills whatever test processes are left, whatever the assertions said.
struct Cleanup(String);

impl Drop for Cleanup {
    fn drop(&mut self) {
        for pid in tagged(&self.0) {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
}

#[test]
fn nothing_a_confined_tool_starts_outlives_a_sigkilled_daemon() {
    let env = Env::new();
    let daemon = env.start_daemon();
    let tag = new_tag();
    let _cleanup = Cleanup(tag.clone());
    let model = env.script("s.json", &bash_each(&[survivor(&tag), "sleep 600".into()]));
    let id = env.start_model(&model, &[]);
    wait_until("the survivor to start", Duration::from_secs(20), || {
        tagged(&tag).len() == 1
    });
    env.wait_for_agent(&id, "the second command", |a| a["turns"] == 2);
    daemon.kill9();
    wait_until(
        "the survivor to die with the daemon",
        Duration::from_secs(5),
        || tagged(&tag).is_empty(),
    );
}

#[test]
fn nothing_a_confined_tool_starts_outlives_a_stopped_daemon() {
    let env = Env::new();
    let daemon = env.start_daemon();
    let tag = new_tag();
    let _cleanup = Cleanup(tag.clone());
    let model = env.script("s.json", &bash_each(&[survivor(&tag), "sleep 600".into()]));
    env.start_model(&model, &[]);
    wait_until("the survivor to start", Duration::from_secs(20), || {
        tagged(&tag).len() == 1
    });
    daemon.terminate();
    wait_until(
        "the survivor to die with the daemon",
        Duration::from_secs(5),
        || tagged(&tag).is_empty(),
    );
}

#[test]
fn what_a_confined_tool_leaves_running_lives_until_its_agent_ends() {
    let env = Env::new();
    let _daemon = env.start_daemon();
    let tag = new_tag();
    let _cleanup = Cleanup(tag.clone());
    // The next command sees it (the agent's commands share a namespace),
    // by the namespace's own ids.
    let model = env.script(
        "s.json",
        &bash_each(&[survivor(&tag), format!("pgrep -f ^{tag}")]),
    );
    let id = env.start_model(&model, &[]);
    env.ctl(&["wait", &id]).expect_code(0);
    let got = tool_results(&env.transcript(&id));
    assert!(
        !got[1].0,
        "the second command sees the first one's process: {got:?}"
    );
    let seen: i32 = got[1].1.trim().parse().unwrap();
    assert!(seen < 1000, "a pid of the agent's namespace: {seen}");
    wait_until(
        "the survivor to die with its agent's run",
        Duration::from_secs(5),
        || tagged(&tag).is_empty(),
    );
}

#[test]
fn io_uring_does_not_reach_a_unix_socket_from_a_confined_tool() {
    let env = Env::new();
    let _daemon = env.start_daemon();
    let attack = format!(
        "{} io-uring-connect {}",
        env!("CARGO_BIN_EXE_escape"),
        env.socket().display()
    );
    let model = env.script("uring.json", &bash_each(&[attack]));
    // Unconfined, the attack connects: the check below is not vacuous.
    let free = env.start_model(&model, &["--sandbox", "off"]);
    env.ctl(&["wait", &free]).expect_code(0);
    let (is_error, text) = &tool_results(&env.transcript(&free))[0];
    assert!(!is_error && text.contains("connected"), "{text}");
    let confined = env.start_model(&model, &[]);
    env.ctl(&["wait", &confined]).expect_code(0);
    let (is_error, text) = &tool_results(&env.transcript(&confined))[0];
    assert!(
        *is_error && text.contains("io_uring_setup") && text.contains("not permitted"),
        "{text}"
    );
}

#[test]
fn a_client_in_another_pid_namespace_is_refused() {
    let env = Env::new();
    let _daemon = env.start_daemon();
    // Not the daemon's descendant, no marker in its environment: only its
    // PID namespace says it could be a sandboxed command.
    let mut unshare = Command::new("unshare");
    if !nix::unistd::geteuid().is_root() {
        unshare.args(["--user", "--map-current-user"]);
    }
    let ctl = env.ctl_command(&["--no-autostart", "list"]);
    unshare
        .args(["--pid", "--fork", "--mount-proc"])
        .arg(ctl.get_program())
        .args(ctl.get_args())
        .envs(ctl.get_envs().filter_map(|(k, v)| v.map(|v| (k, v))))
        .current_dir(env.project())
        .stdin(Stdio::null());
    let out = agentd_e2e::Out::from(unshare.output().unwrap());
    assert_ne!(out.code, 0, "{out:?}");
    assert!(
        out.stderr
            .contains("does not take requests from its agents' own tools")
            && out.stderr.contains("another PID namespace"),
        "{}",
        out.stderr
    );
    // The same command from the daemon's namespace is served.
    env.ctl(&["list"]).expect_code(0);
}

#[test]
fn without_pid_namespaces_a_sandboxed_agent_is_refused_and_status_says_why() {
    let env = Env::new();
    env.set_daemon_env(agentd::sandbox::pid_namespace::DISABLE_VAR, "1");
    let _daemon = env.start_daemon();
    let model = env.script("x.json", &bash_each(&["true".into()]));
    let out = env.ctl(&["run", "--background", "--model", &model, "work"]);
    out.expect_code(1);
    assert!(
        out.stderr.contains("PID namespace") && out.stderr.contains("--sandbox off"),
        "{}",
        out.stderr
    );
    let status = env.ctl(&["status", "--json"]).expect_code(0).json();
    assert_eq!(status["containment"], Value::Null, "{status}");
    assert!(
        status["containment_unavailable"]
            .as_str()
            .is_some_and(|s| s.contains("user namespaces")),
        "{status}"
    );
    // Unconfined, it runs.
    let id = env.start_model(&model, &["--sandbox", "off"]);
    env.ctl(&["wait", &id]).expect_code(0);
}

#[test]
fn status_says_how_commands_are_contained() {
    let env = Env::new();
    let _daemon = env.start_daemon();
    let status = env.ctl(&["status", "--json"]).expect_code(0).json();
    assert!(
        status["containment"]
            .as_str()
            .is_some_and(|s| s.contains("PID namespace per agent")),
        "{status}"
    );
    let text = env.ctl(&["status"]).expect_code(0).stdout.clone();
    assert!(text.contains("commands run in a PID namespace"), "{text}");
}
