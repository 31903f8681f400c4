//! agentd as a user service: the systemd units (checked by
//! `systemd-analyze`), socket activation through `systemd-socket-activate`
//! (the tool systemd ships to run a socket-activated program by hand), the
//! validation of what was passed, reloading the configuration, and
//! `agentctl daemon` / `service`.

#![allow(clippy::unwrap_used)] // Tests: a panic is the failure report.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use agentd_e2e::script::{delayed, script, text, turn};
use agentd_e2e::{Env, agentd_bin, wait_until};

fn tool(name: &str) -> PathBuf {
    std::env::var_os("PATH")
        .and_then(|p| {
            std::env::split_paths(&p)
                .map(|d| d.join(name))
                .find(|p| p.is_file())
        })
        .unwrap_or_else(|| {
            panic!("{name} is not installed: it comes with systemd (apt-get install systemd)")
        })
}

fn unit_dir(env: &Env) -> PathBuf {
    env.home().join(".config/systemd/user")
}

/// A private runtime directory (systemd-analyze --user needs one).
fn runtime_dir(env: &Env) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let dir = env.root.path().join("xdg-run");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    dir
}

#[test]
fn service_install_writes_units_that_systemd_analyze_verifies() {
    let env = Env::new();
    let out = env.ctl(&["service", "install"]);
    out.expect_code(0);
    // No user manager in this world: the files are written and the
    // commands printed.
    assert!(
        out.stdout.contains("systemctl --user enable agentd.socket"),
        "{}",
        out.stdout
    );
    let service = std::fs::read_to_string(unit_dir(&env).join("agentd.service")).unwrap();
    let agentd = agentd_bin().canonicalize().unwrap();
    assert!(
        service.contains(&format!("ExecStart={}\n", agentd.display())),
        "{service}"
    );
    let agentctl = agentd_e2e::agentctl_bin().canonicalize().unwrap();
    let reload = format!(
        "ExecReload={} --no-autostart --socket %t/agentd/agentd.sock daemon reload\n",
        agentctl.display()
    );
    for needed in ["Type=notify", "Restart=on-failure", reload.as_str()] {
        assert!(service.contains(needed), "{needed} in {service}");
    }
    let socket = std::fs::read_to_string(unit_dir(&env).join("agentd.socket")).unwrap();
    for needed in [
        "ListenStream=%t/agentd/agentd.sock",
        "SocketMode=0600",
        "DirectoryMode=0700",
    ] {
        assert!(socket.contains(needed), "{needed} in {socket}");
    }

    let verify = Command::new(tool("systemd-analyze"))
        .args(["--user", "verify"])
        .arg(unit_dir(&env).join("agentd.socket"))
        .arg(unit_dir(&env).join("agentd.service"))
        .env("XDG_RUNTIME_DIR", runtime_dir(&env))
        .env("HOME", env.home())
        .output()
        .unwrap();
    assert!(
        verify.status.success() && verify.stderr.is_empty() && verify.stdout.is_empty(),
        "systemd-analyze --user verify: {}{}",
        String::from_utf8_lossy(&verify.stdout),
        String::from_utf8_lossy(&verify.stderr)
    );

    // Again: nothing to do.
    let again = env.ctl(&["service", "install"]);
    again.expect_code(0);
    assert!(again.stdout.contains("unchanged"), "{}", again.stdout);

    // Changed by hand: shown, refused, kept — until --force.
    let edited = service.replace("RestartSec=2", "RestartSec=9");
    std::fs::write(unit_dir(&env).join("agentd.service"), &edited).unwrap();
    let refused = env.ctl(&["service", "install"]);
    refused.expect_code(1);
    assert!(
        refused.stdout.contains("-RestartSec=9"),
        "{}",
        refused.stdout
    );
    assert!(
        refused.stdout.contains("+RestartSec=2"),
        "{}",
        refused.stdout
    );
    assert!(refused.stderr.contains("--force"), "{}", refused.stderr);
    assert_eq!(
        std::fs::read_to_string(unit_dir(&env).join("agentd.service")).unwrap(),
        edited
    );
    env.ctl(&["service", "install", "--force"]).expect_code(0);
    assert_eq!(
        std::fs::read_to_string(unit_dir(&env).join("agentd.service")).unwrap(),
        service
    );

    let status = env.ctl(&["service", "status"]);
    status.expect_code(0);
    assert!(status.stdout.contains("installed"), "{}", status.stdout);
    assert!(status.stdout.contains("not running"), "{}", status.stdout);

    env.ctl(&["service", "uninstall"]).expect_code(0);
    assert!(!unit_dir(&env).join("agentd.service").exists());
    assert!(!unit_dir(&env).join("agentd.socket").exists());
    env.ctl(&["service", "status"]).expect_code(1);
}

/// `systemd-socket-activate` listening on the world's socket, running
/// agentd when the first client connects.
fn socket_activated(env: &Env, extra: &[&str]) -> Child {
    std::fs::create_dir_all(env.socket().parent().unwrap()).unwrap();
    let mut cmd = Command::new(tool("systemd-socket-activate"));
    cmd.args(extra).arg("--listen").arg(env.socket());
    // It passes only the variables named with -E.
    for var in ["HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "RUST_LOG"] {
        if let Some(v) = env.agentd_command().get_envs().find(|(k, _)| *k == var) {
            let v = v.1.unwrap().to_str().unwrap().to_string();
            cmd.arg(format!("-E{var}={v}"));
        }
    }
    cmd.arg(agentd_bin())
        .arg("--data-dir")
        .arg(env.data_dir())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(env.daemon_log())
                .unwrap(),
        );
    let child = cmd.spawn().unwrap();
    agentd_e2e::wait_for_path(&env.socket());
    child
}

fn status_json(env: &Env) -> serde_json::Value {
    env.ctl(&["status", "--json"]).expect_code(0).json()
}

#[test]
fn a_socket_activated_daemon_serves_the_passed_socket() {
    let env = Env::new();
    let mut activator = socket_activated(&env, &[]);
    // Nothing runs agentd yet: the first connection starts it.
    assert!(!env.data_dir().join("store").exists());
    let first = status_json(&env);
    assert_eq!(first["socket_activated"], true, "{first}");
    assert_eq!(first["socket"], env.socket().display().to_string());
    // A second client is served by the same daemon.
    let model = env.script("s.json", &script(vec![turn(vec![text("served")])]));
    let out = env.ctl(&["run", "--model", &model, "hello"]);
    out.expect_code(0);
    assert!(out.stdout.contains("served"), "{}", out.stdout);
    assert_eq!(status_json(&env)["pid"], first["pid"]);
    // The daemon does not remove a socket it did not make.
    env.ctl(&["daemon", "stop"]).expect_code(0);
    let status = activator.wait().unwrap();
    assert!(status.success(), "agentd exited with {status}");
    assert!(
        env.socket().exists(),
        "the manager's socket file was removed"
    );
    let log = env.daemon_log_text();
    assert!(log.contains("activated=true"), "{log}");
}

/// agentd's exit status and stderr when started with `LISTEN_*` set by a
/// shell (whose pid `exec agentd` keeps) and fd 3 opened by `redirect`.
fn activated_by_hand(env: &Env, listen_pid: &str, fds: &str, redirect: &str) -> (i32, String) {
    let cmd = format!(
        "LISTEN_PID={listen_pid} LISTEN_FDS={fds} exec \"$0\" --data-dir \"$1\" {redirect}"
    );
    let mut sh = Command::new("sh");
    sh.arg("-c").arg(cmd).arg(agentd_bin()).arg(env.data_dir());
    for (k, v) in env.agentd_command().get_envs() {
        if let Some(v) = v {
            sh.env(k, v);
        }
    }
    let out = sh.output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

#[test]
fn what_is_passed_is_checked_and_a_bad_fd_is_a_clear_exit() {
    let env = Env::new();
    let file = env.root.path().join("a-file");
    std::fs::write(&file, "not a socket").unwrap();
    let at_file = format!("3<{}", file.display());
    for (pid, fds, redirect, expected) in [
        ("$$", "1", at_file.as_str(), "not a socket"),
        (
            "$$",
            "2",
            "3</dev/null 4</dev/null",
            "2 sockets were passed",
        ),
        ("1", "1", at_file.as_str(), "not this process"),
        ("$$", "x", at_file.as_str(), "not a count"),
        ("$$", "1", "", "fd 3 is not open"),
    ] {
        let (code, stderr) = activated_by_hand(&env, pid, fds, redirect);
        assert_eq!(code, 1, "{pid} {fds} {redirect}: {stderr}");
        assert!(
            stderr.contains(expected),
            "{pid} {fds} {redirect}: {stderr}"
        );
        // It exits before it touches anything.
        assert!(!env.data_dir().join("store").exists());
        assert!(!env.socket().exists());
    }

    // A datagram socket (ListenDatagram by mistake): refused too.
    let mut activator = socket_activated(&env, &["--datagram"]);
    let probe = std::os::unix::net::UnixDatagram::unbound().unwrap();
    probe.send_to(b"wake", env.socket()).unwrap();
    let mut waited = Duration::ZERO;
    let status = loop {
        if let Some(s) = activator.try_wait().unwrap() {
            break s;
        }
        assert!(waited < Duration::from_secs(20), "agentd kept running");
        std::thread::sleep(Duration::from_millis(50));
        waited += Duration::from_millis(50);
    };
    assert!(!status.success());
    let log = env.daemon_log_text();
    assert!(log.contains("not a stream socket"), "{log}");
    assert!(!env.data_dir().join("store").exists());
}

fn config_value(env: &Env, key: &str) -> (String, String) {
    let v = env.ctl(&["config", "--json"]).expect_code(0).json();
    let e = v["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["key"] == key)
        .unwrap_or_else(|| panic!("{key} in {v}"))
        .clone();
    (
        e["value"].as_str().unwrap().to_string(),
        e["source"].as_str().unwrap().to_string(),
    )
}

#[test]
fn sighup_rereads_the_config_and_config_shows_where_values_came_from() {
    let env = Env::new();
    let first = env.script("first.json", &script(vec![turn(vec![text("first model")])]));
    let second = env.script(
        "second.json",
        &script(vec![turn(vec![text("second model")])]),
    );
    env.write_config(&format!("default_model = \"{first}\"\n"));
    env.set_daemon_env("ANTHROPIC_API_KEY", "sk-ant-never-shown");
    let daemon = env.start_daemon();

    assert_eq!(
        config_value(&env, "default_model"),
        (first.clone(), "file".into())
    );
    assert_eq!(
        config_value(&env, "max_turns"),
        ("100".into(), "default".into())
    );
    assert_eq!(
        config_value(&env, "anthropic.api_key"),
        ("set".into(), "env ANTHROPIC_API_KEY".into())
    );
    let shown = env.ctl(&["config"]).expect_code(0).stdout.clone();
    assert!(!shown.contains("sk-ant-never-shown"), "{shown}");
    assert!(shown.contains("restart to change"), "{shown}");

    let out = env.ctl(&["run", "no model named"]);
    out.expect_code(0);
    assert!(out.stdout.contains("first model"), "{}", out.stdout);

    // The file changes; SIGHUP puts it in force for the next agent.
    env.write_config(&format!(
        "default_model = \"{second}\"\nmax_turns = 7\nstore_min_free_mb = 1\n"
    ));
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(daemon.pid()),
        nix::sys::signal::Signal::SIGHUP,
    )
    .unwrap();
    wait_until("the reload", Duration::from_secs(10), || {
        config_value(&env, "default_model").0 == second
    });
    assert_eq!(config_value(&env, "max_turns"), ("7".into(), "file".into()));
    // What only a restart changes keeps its value, and says so.
    assert_eq!(
        config_value(&env, "store_min_free_mb"),
        ("64".into(), "default".into())
    );
    let log = env.daemon_log_text();
    assert!(
        log.contains("needs_restart=[\"store_min_free_mb\"]"),
        "{log}"
    );
    let out = env.ctl(&["run", "no model named"]);
    out.expect_code(0);
    assert!(out.stdout.contains("second model"), "{}", out.stdout);

    // An invalid file: the reload is refused, nothing changes, the daemon
    // keeps serving.
    env.write_config("max_turns = \"many\"\n");
    let refused = env.ctl(&["daemon", "reload"]);
    refused.expect_code(1);
    assert!(refused.stderr.contains("line 1"), "{}", refused.stderr);
    assert_eq!(config_value(&env, "max_turns"), ("7".into(), "file".into()));
    // And `daemon restart` will not stop a daemon that could not start again.
    let restart = env.ctl(&["daemon", "restart"]);
    restart.expect_code(1);
    assert!(
        restart.stderr.contains("not restarting"),
        "{}",
        restart.stderr
    );
    assert_eq!(status_json(&env)["pid"], daemon.pid());
}

#[test]
fn daemon_restart_and_stop_and_logs() {
    let env = Env::new();
    // Started the way agentctl autostarts it, so it logs to agentd.log.
    let model = env.script("s.json", &script(vec![turn(vec![text("before")])]));
    let start = env
        .ctl_command(&["run", "--model", &model, "hi"])
        .output()
        .unwrap();
    assert!(start.status.success());
    let before = status_json(&env)["pid"].as_i64().unwrap();

    let out = env.ctl_command(&["daemon", "restart"]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let after = status_json(&env)["pid"].as_i64().unwrap();
    assert_ne!(before, after);
    assert!(stdout.contains(&format!("{before} → {after}")), "{stdout}");
    // The agent from before the restart is still there.
    let list = env.ctl(&["list", "--json"]).expect_code(0).json();
    assert_eq!(list.as_array().unwrap().len(), 1, "{list}");

    // An agent in the middle of a turn when the daemon restarts (a turn
    // longer than the shutdown grace, so it is interrupted) resumes and
    // completes.
    env.write_config("shutdown_grace_secs = 1\n");
    env.ctl(&["daemon", "reload"]).expect_code(0);
    let slow = env.script(
        "slow.json",
        &script(vec![delayed(4000, vec![text("after the restart")])]),
    );
    let id = env.run_background(&slow, "slow", "take your time");
    env.wait_for_agent(&id, "running", |a| a["status"] == "running");
    let out = env.ctl_command(&["daemon", "restart"]).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(out.status.success(), "{stdout}");
    assert!(stdout.contains("1 agent(s) running"), "{stdout}");
    let done = env.wait_for_agent(&id, "completed", |a| a["status"] == "completed");
    assert_eq!(done["result"], "after the restart", "{done}");
    let after = status_json(&env)["pid"].as_i64().unwrap();

    let logs = env.ctl(&["daemon", "logs", "-n", "50"]);
    logs.expect_code(0);
    assert_eq!(
        logs.stdout.matches("agentd ready").count(),
        3,
        "{}",
        logs.stdout
    );

    env.ctl(&["daemon", "stop"]).expect_code(0);
    // Gone (or a zombie its new parent has not reaped yet).
    let state = std::fs::read_to_string(format!("/proc/{after}/stat")).unwrap_or_default();
    assert!(
        state.is_empty()
            || state
                .rsplit_once(')')
                .unwrap()
                .1
                .trim_start()
                .starts_with('Z'),
        "{state}"
    );
    let again = env.ctl(&["daemon", "stop"]);
    again.expect_code(0);
    assert!(again.stdout.contains("not running"));
}

#[test]
fn readiness_and_reloads_are_reported_and_tools_never_see_the_notify_socket() {
    let env = Env::new();
    let notify_path = env.root.path().join("notify.sock");
    let notify = std::os::unix::net::UnixDatagram::bind(&notify_path).unwrap();
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
    let mut buf = [0u8; 512];
    let mut next = || {
        let n = notify.recv(&mut buf).expect("a notification");
        String::from_utf8_lossy(&buf[..n]).to_string()
    };
    assert_eq!(next(), "READY=1\n");
    let pid = nix::unistd::Pid::from_raw(daemon.id() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGHUP).unwrap();
    let reloading = next();
    assert!(
        reloading.starts_with("RELOADING=1\nMONOTONIC_USEC="),
        "{reloading:?}"
    );
    assert_eq!(next(), "READY=1\n");

    // A tool's environment holds no NOTIFY_SOCKET to talk to systemd with.
    let model = env.script(
        "s.json",
        &script(vec![
            turn(vec![agentd_e2e::script::tool(
                "Bash",
                serde_json::json!({"command": "echo \"${NOTIFY_SOCKET:-unset}\" > notify.txt"}),
            )]),
            turn(vec![text("checked")]),
        ]),
    );
    env.ctl(&["run", "--model", &model, "look"]).expect_code(0);
    assert_eq!(
        std::fs::read_to_string(env.project().join("notify.txt")).unwrap(),
        "unset\n"
    );
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    assert!(daemon.wait().unwrap().success());
}

#[test]
fn a_clean_restart_between_turns_resumes_the_agent_without_repeating_its_tool() {
    let env = Env::new();
    let model = env.script(
        "s.json",
        &script(vec![
            turn(vec![agentd_e2e::script::tool(
                "Bash",
                serde_json::json!({"command": "echo ran >> ran.txt; touch started; sleep 1"}),
            )]),
            turn(vec![text("second turn")]),
        ]),
    );
    // Autostarted (the restart starts the next daemon the same way).
    let out = env
        .ctl_command(&[
            "run",
            "--background",
            "--model",
            &model,
            "--name",
            "twice",
            "go",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    agentd_e2e::wait_for_path(&env.project().join("started"));
    // The running Bash call finishes within the grace, its result is
    // recorded, and the agent stops at that safe point as interrupted.
    let out = env.ctl_command(&["daemon", "restart"]).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let done = env.wait_for_agent("twice", "completed", |a| a["status"] == "completed");
    assert_eq!(done["result"], "second turn", "{done}");
    assert_eq!(
        std::fs::read_to_string(env.project().join("ran.txt")).unwrap(),
        "ran\n",
        "the tool ran once"
    );
    env.ctl(&["daemon", "stop"]).expect_code(0);
}

/// A stand-in for `systemctl --user` on PATH: it records what it is asked,
/// answers as a running user manager does, and starts agentd.socket the way
/// systemd would (systemd-socket-activate listening on the unit's socket).
fn fake_systemctl(env: &Env, runtime: &std::path::Path) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let bin = env.root.path().join("fakebin");
    std::fs::create_dir_all(&bin).unwrap();
    let script = format!(
        r#"#!/bin/bash
echo "$*" >> "{log}"
[ "$1" = --user ] && shift
case "$1 $2" in
  "show-environment "*) exit 0 ;;
  "daemon-reload "*|"enable "*|"disable "*) exit 0 ;;
  "is-enabled "*) echo enabled ;;
  "is-active "*) if [ -e "{pidfile}" ]; then echo active; else echo inactive; exit 3; fi ;;
  "start agentd.socket")
    mkdir -p "{runtime}/agentd"
    setsid "{activate}" --listen "{runtime}/agentd/agentd.sock" -E HOME="{home}" -E XDG_CONFIG_HOME="{home}/.config" \
      "{agentd}" --data-dir "{data}" < /dev/null >> "{daemonlog}" 2>&1 &
    echo $! > "{pidfile}"
    for _ in $(seq 100); do [ -S "{runtime}/agentd/agentd.sock" ] && exit 0; sleep 0.05; done
    exit 1 ;;
  "stop agentd.service")
    pid=$(cat "{pidfile}"); kill -TERM "$pid"
    while kill -0 "$pid" 2>/dev/null && ! grep -q '^State:.*zombie' /proc/$pid/status 2>/dev/null; do sleep 0.05; done
    exit 0 ;;
  *) echo "fake systemctl: $*" >&2; exit 1 ;;
esac
"#,
        log = env.root.path().join("systemctl.log").display(),
        pidfile = env.root.path().join("socket-unit.pid").display(),
        runtime = runtime.display(),
        activate = tool("systemd-socket-activate").display(),
        home = env.home().display(),
        agentd = agentd_bin().display(),
        data = env.data_dir().display(),
        daemonlog = env.daemon_log().display(),
    );
    let path = bin.join("systemctl");
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    bin
}

#[test]
fn with_the_units_installed_agentctl_starts_the_socket_unit_instead_of_a_daemon_of_its_own() {
    let env = Env::new();
    let runtime = runtime_dir(&env);
    let bin = fake_systemctl(&env, &runtime);
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let ctl = |args: &[&str]| {
        let out = env
            .ctl_command(args)
            .env_remove("AGENTD_SOCKET")
            .env("XDG_RUNTIME_DIR", &runtime)
            .env("PATH", &path)
            .output()
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).to_string(),
            String::from_utf8_lossy(&out.stderr).to_string(),
        )
    };
    let (code, stdout, stderr) = ctl(&["service", "install"]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    let log = || std::fs::read_to_string(env.root.path().join("systemctl.log")).unwrap_or_default();
    assert!(log().contains("--user daemon-reload"), "{}", log());
    assert!(log().contains("--user enable agentd.socket"), "{}", log());

    // The first client starts the socket unit; the daemon serves it.
    let (code, stdout, stderr) = ctl(&["status", "--json"]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    let status: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(status["socket_activated"], true, "{status}");
    assert!(log().contains("--user start agentd.socket"), "{}", log());
    assert!(
        !env.data_dir().join("agentd.log").exists(),
        "agentctl autostarted a daemon of its own beside the unit"
    );
    // A second client reaches the same daemon, without starting anything.
    let starts = log().matches("start agentd.socket").count();
    let (_, again, _) = ctl(&["status", "--json"]);
    let again: serde_json::Value = serde_json::from_str(&again).unwrap();
    assert_eq!(again["pid"], status["pid"]);
    assert_eq!(log().matches("start agentd.socket").count(), starts);

    // Under the manager, `daemon stop` asks it to stop the service.
    let (code, stdout, stderr) = ctl(&["daemon", "stop"]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    assert!(log().contains("--user stop agentd.service"), "{}", log());
    assert!(stdout.contains("agentd.socket still listens"), "{stdout}");
}

#[test]
fn install_never_takes_an_agentd_from_the_current_directory() {
    use std::os::unix::fs::PermissionsExt;
    let env = Env::new();
    // agentctl alone, with no agentd beside it or on PATH …
    let lone = env.root.path().join("lone");
    std::fs::create_dir_all(&lone).unwrap();
    std::fs::copy(agentd_e2e::agentctl_bin(), lone.join("agentctl")).unwrap();
    // … run in a checkout that holds an executable named agentd.
    let planted = env.project().join("agentd");
    std::fs::write(&planted, "#!/bin/sh\necho planted\n").unwrap();
    std::fs::set_permissions(&planted, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = Command::new(lone.join("agentctl"))
        .args(["service", "install"])
        .current_dir(env.project())
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", env.home())
        .env("XDG_CONFIG_HOME", env.home().join(".config"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("cannot find agentd"), "{stderr}");
    assert!(!unit_dir(&env).join("agentd.service").exists());
}

#[test]
fn passed_sockets_that_are_not_listening_or_not_meant_for_agentd_are_refused() {
    let env = Env::new();
    let sock = env.root.path().join("bound-only.sock");
    // fd 3: a Unix stream socket bound but never listening; then one with
    // LISTEN_FDS but no LISTEN_PID.
    for (listen, pid_line, expected) in [
        (
            "",
            "os.environ['LISTEN_PID'] = str(os.getpid())",
            "not listening",
        ),
        (
            "s.listen(1)",
            "os.environ.pop('LISTEN_PID', None)",
            "LISTEN_PID is not",
        ),
    ] {
        let _ = std::fs::remove_file(&sock);
        let program = format!(
            "import os, socket, sys\n\
             s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n\
             s.bind(sys.argv[1])\n\
             {listen}\n\
             if s.fileno() != 3: os.dup2(s.fileno(), 3)\n\
             os.set_inheritable(3, True)\n\
             os.environ['LISTEN_FDS'] = '1'\n\
             {pid_line}\n\
             os.execv(sys.argv[2], [sys.argv[2], '--data-dir', sys.argv[3]])\n"
        );
        let mut cmd = Command::new("python3");
        cmd.arg("-c")
            .arg(&program)
            .arg(&sock)
            .arg(agentd_bin())
            .arg(env.data_dir());
        for (k, v) in env.agentd_command().get_envs() {
            if let Some(v) = v {
                cmd.env(k, v);
            }
        }
        let out = cmd.output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{expected}: {stderr}");
        assert!(stderr.contains(expected), "{expected}: {stderr}");
        assert!(!env.data_dir().join("store").exists());
    }
}

#[test]
fn a_client_holding_its_connection_open_does_not_keep_the_daemon_from_stopping() {
    let env = Env::new();
    let daemon = env.start_daemon();
    // Connected, handshake half done, never reading: like an agentctl
    // blocked in `systemctl stop` while the daemon drains.
    let mut held = std::os::unix::net::UnixStream::connect(env.socket()).unwrap();
    use std::io::Write;
    held.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n").unwrap();
    let started = std::time::Instant::now();
    let status = daemon.terminate();
    assert!(status.success(), "{status}");
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "stopping took {:?}",
        started.elapsed()
    );
    drop(held);
}
