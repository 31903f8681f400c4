//! The socket: modes, one daemon per socket, stale files, peer uid checks,
//! autostart and --no-autostart.

#![allow(clippy::unwrap_used)] // Tests: a panic is the failure report.

use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::os::unix::process::CommandExt;

use agentd_e2e::Env;

#[test]
fn socket_is_0600_in_a_0700_directory() {
    let env = Env::new();
    let _daemon = env.start_daemon();
    let sock = std::fs::metadata(env.socket()).unwrap();
    assert!(sock.file_type().is_socket());
    assert_eq!(sock.permissions().mode() & 0o777, 0o600);
    let dir = std::fs::metadata(env.socket().parent().unwrap()).unwrap();
    assert_eq!(dir.permissions().mode() & 0o777, 0o700);
    let data = std::fs::metadata(env.data_dir()).unwrap();
    assert_eq!(data.permissions().mode() & 0o777, 0o700);
}

#[test]
fn a_second_daemon_on_a_live_socket_refuses_to_start() {
    let env = Env::new();
    let _daemon = env.start_daemon();
    let err = env
        .try_start_daemon()
        .err()
        .expect("second daemon must not start");
    assert!(err.contains("exited"), "{err}");
    assert!(
        env.daemon_log_text()
            .contains("another agentd is already serving"),
        "{}",
        env.daemon_log_text()
    );
    // The first one is unharmed.
    env.ctl(&["status"]).expect_code(0);
}

#[test]
fn a_stale_socket_file_is_replaced() {
    let env = Env::new();
    env.start_daemon().kill9();
    assert!(env.socket().exists());
    let _daemon = env.start_daemon();
    env.ctl(&["status"]).expect_code(0);
}

#[test]
fn no_daemon_and_no_autostart_exits_3() {
    let env = Env::new();
    let out = env.ctl(&["list"]);
    out.expect_code(3);
    assert!(
        out.stderr.contains("no agentd is listening"),
        "{}",
        out.stderr
    );
}

#[test]
fn agentctl_autostarts_the_daemon_with_the_same_socket_and_data_dir() {
    let env = Env::new();
    let out = agentd_e2e::Out::from(env.ctl_command(&["status", "--json"]).output().unwrap());
    out.expect_code(0);
    let s = out.json();
    assert_eq!(s["socket"], env.socket().display().to_string());
    assert_eq!(s["data_dir"], env.data_dir().display().to_string());
    let pid = s["pid"].as_i64().unwrap() as i32;
    // The autostarted daemon is detached and keeps serving.
    env.ctl(&["list"]).expect_code(0);
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while env.socket().exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "autostarted daemon did not stop"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(env.data_dir().join("agentd.log").exists());
}

#[test]
fn a_client_of_another_uid_is_refused_by_the_peer_check() {
    if !nix::unistd::getuid().is_root() {
        println!(
            "skipped: dropping to another uid needs root, and this test runs as uid {}",
            nix::unistd::getuid()
        );
        return;
    }
    let env = Env::new();
    let _daemon = env.start_daemon();
    // Make file modes irrelevant: only the daemon's own uid check can refuse.
    env.open_up();
    for dir in agentd_e2e::bin_dir().ancestors() {
        let mode = std::fs::metadata(dir).unwrap().permissions().mode();
        assert!(
            mode & 0o001 != 0,
            "{} is not traversable by other users",
            dir.display()
        );
    }
    let mut cmd = env.ctl_command(&["--no-autostart", "list"]);
    cmd.uid(65534).gid(65534).current_dir("/");
    let out = agentd_e2e::Out::from(cmd.output().unwrap());
    out.expect_code(1);
    assert!(out.stderr.contains("permission denied"), "{}", out.stderr);
    assert!(out.stderr.contains("uid 65534"), "{}", out.stderr);
    assert!(
        env.daemon_log_text()
            .contains("refused a request from another user")
    );
    // Our own uid still gets in.
    env.ctl(&["list"]).expect_code(0);
}
