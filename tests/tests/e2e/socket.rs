//! The socket: modes, one daemon per socket, stale files, peer uid checks,
//! autostart and --no-autostart.

#![allow(clippy::unwrap_used)] // Tests: a panic is the failure report.

use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::os::unix::process::CommandExt;

use agentd_e2e::Env;
use agentd_e2e::root::skip_unless_root;

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

/// sled makes its files with the default umask inside the private data
/// directory: nobody else could ever reach them, so a restart tightens them
/// without warning the user that their data was exposed.
#[test]
fn a_restart_does_not_warn_about_files_inside_the_private_data_directory() {
    let env = Env::new();
    env.start_daemon().kill9();
    let _daemon = env.start_daemon();
    env.ctl(&["status"]).expect_code(0);
    let log = env.daemon_log_text();
    assert!(!log.contains("readable by others"), "{log}");
}

#[test]
fn a_stale_socket_file_is_replaced() {
    let env = Env::new();
    env.start_daemon().kill9();
    assert!(env.socket().exists());
    let _daemon = env.start_daemon();
    env.ctl(&["status"]).expect_code(0);
}

/// A daemon SIGKILLed while it was starting a tool leaves a child between
/// fork and exec holding a copy of the listener: connecting succeeds, but
/// nobody will ever accept. Found by the torture run: the next
/// daemon refused to start, "another agentd is already serving".
#[test]
fn a_socket_held_only_by_a_dead_daemons_child_is_replaced() {
    let env = Env::new();
    let dir = env.socket().parent().unwrap().to_path_buf();
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    // The listener's creator exits at once; its forked child keeps the
    // listening socket open and never accepts.
    let out = std::process::Command::new("python3")
        .arg("-c")
        .arg(
            "import os, socket, sys, time\n\
             s = socket.socket(socket.AF_UNIX)\n\
             s.bind(sys.argv[1]); s.listen(8)\n\
             pid = os.fork()\n\
             if pid == 0:\n    n = os.open('/dev/null', os.O_RDWR); os.dup2(n, 1); os.dup2(n, 2)\n    os.setsid(); time.sleep(60); os._exit(0)\n\
             print(pid, flush=True)\n",
        )
        .arg(env.socket())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let holder: i32 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
    let holder = nix::unistd::Pid::from_raw(holder);
    assert!(std::os::unix::net::UnixStream::connect(env.socket()).is_ok());
    let started = env.try_start_daemon();
    let _ = nix::sys::signal::kill(holder, nix::sys::signal::Signal::SIGKILL);
    let _daemon = started.unwrap_or_else(|e| panic!("{e}: {}", env.daemon_log_text()));
    env.ctl(&["status"]).expect_code(0);
    assert!(env.daemon_log_text().contains("whose daemon is gone"));
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

/// An `agentctl` copied to a directory of its own (no `agentd` beside
/// it), run from the project with `PATH`.
fn lone_agentctl(env: &Env, path: &str) -> std::process::Command {
    let dir = env.root.path().join("lone-bin");
    std::fs::create_dir_all(&dir).unwrap();
    let ctl = dir.join("agentctl");
    if !ctl.exists() {
        std::fs::copy(agentd_e2e::agentctl_bin(), &ctl).unwrap();
    }
    let cmd = env.ctl_command(&[]);
    let mut lone = std::process::Command::new(&ctl);
    lone.env_clear()
        .envs(
            cmd.get_envs()
                .filter_map(|(k, v)| Some((k.to_owned(), v?.to_owned()))),
        )
        .env("PATH", path)
        .current_dir(env.project())
        .stdin(std::process::Stdio::null())
        .arg("list");
    lone
}

#[test]
fn autostart_never_runs_an_agentd_from_the_current_directory() {
    let env = Env::new();
    // A cloned repository holds an `agentd` of its own; the PATH has an
    // empty entry (the current directory, to execvp) and a relative one.
    let marker = env.root.path().join("PWNED");
    let planted = env.project().join("agentd");
    std::fs::write(&planted, format!("#!/bin/sh\ntouch {}\n", marker.display())).unwrap();
    std::fs::set_permissions(&planted, std::fs::Permissions::from_mode(0o755)).unwrap();
    for path in ["/usr/bin::/bin", ".:/usr/bin:/bin", "/usr/bin:/bin:"] {
        let out = agentd_e2e::Out::from(lone_agentctl(&env, path).output().unwrap());
        out.expect_code(3);
        assert!(!marker.exists(), "PATH={path}: the checkout's agentd ran");
        assert!(
            out.stderr.contains("none can be started") && out.stderr.contains("install"),
            "PATH={path}: {}",
            out.stderr
        );
    }
}

#[test]
fn autostart_refuses_an_agentd_that_others_can_replace() {
    let env = Env::new();
    let lone = env.root.path().join("lone-bin");
    std::fs::create_dir_all(&lone).unwrap();
    let daemon = lone.join("agentd");
    std::fs::copy(agentd_e2e::agentd_bin(), &daemon).unwrap();
    // Writable by anyone: refused, and the message says why.
    std::fs::set_permissions(&daemon, std::fs::Permissions::from_mode(0o757)).unwrap();
    let out = agentd_e2e::Out::from(lone_agentctl(&env, "/usr/bin:/bin").output().unwrap());
    out.expect_code(3);
    assert!(
        out.stderr.contains("can be written by other users"),
        "{}",
        out.stderr
    );
    assert!(!env.socket().exists());
    // The same binary, private to its owner: started.
    std::fs::set_permissions(&daemon, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = agentd_e2e::Out::from(lone_agentctl(&env, "/usr/bin:/bin").output().unwrap());
    out.expect_code(0);
    let stop = env.ctl(&["daemon", "stop"]);
    stop.expect_code(0);
}

/// Not a test on its own: run as another user by
/// `a_client_of_another_uid_is_refused_by_the_peer_check`, it calls the
/// daemon with a bare gRPC client that skips agentctl's own socket checks,
/// so that only the daemon's peer check can refuse it.
#[test]
#[ignore = "a helper, run by another test as another uid"]
fn raw_client_as_another_uid() {
    let Some(socket) = std::env::var_os("AGENTD_RAW_CLIENT_SOCKET") else {
        return;
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let status = rt.block_on(async move {
        let channel = tonic::transport::Endpoint::from_static("http://x")
            .connect_with_connector(tower::service_fn(move |_| {
                let socket = socket.clone();
                async move {
                    Ok::<_, std::io::Error>(hyper_util::rt::TokioIo::new(
                        tokio::net::UnixStream::connect(socket).await?,
                    ))
                }
            }))
            .await
            .unwrap();
        agentd_shared::proto::agent_service_client::AgentServiceClient::new(channel)
            .list_agents(agentd_shared::proto::ListAgentsRequest::default())
            .await
            .unwrap_err()
    });
    println!("RAW-CLIENT {:?}: {}", status.code(), status.message());
}

#[test]
fn a_client_of_another_uid_is_refused_by_the_peer_check() {
    if skip_unless_root("dropping to another uid") {
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
    // agentctl itself will not use a socket in a directory others can write.
    let mut cmd = env.ctl_command(&["--no-autostart", "list"]);
    cmd.uid(65534).gid(65534).current_dir("/");
    let out = agentd_e2e::Out::from(cmd.output().unwrap());
    out.expect_code(3);
    assert!(out.stderr.contains("refusing to talk to"), "{}", out.stderr);
    // A client without those checks reaches the daemon, which refuses it.
    let mut raw = std::process::Command::new(std::env::current_exe().unwrap());
    raw.args([
        "--ignored",
        "--exact",
        "socket::raw_client_as_another_uid",
        "--nocapture",
    ])
    .env("AGENTD_RAW_CLIENT_SOCKET", env.socket())
    .uid(65534)
    .gid(65534)
    .current_dir("/");
    let out = agentd_e2e::Out::from(raw.output().unwrap());
    assert!(
        out.stdout.contains("RAW-CLIENT PermissionDenied") && out.stdout.contains("uid 65534"),
        "{}\n{}",
        out.stdout,
        out.stderr
    );
    assert!(
        env.daemon_log_text()
            .contains("refused a request from another user")
    );
    // Our own uid still gets in, once the directory is private again.
    std::fs::set_permissions(
        env.socket().parent().unwrap(),
        std::fs::Permissions::from_mode(0o700),
    )
    .unwrap();
    std::fs::set_permissions(env.socket(), std::fs::Permissions::from_mode(0o600)).unwrap();
    env.ctl(&["list"]).expect_code(0);
}

/// A listener another user set up where this user's daemon would be; it
/// counts the connections it gets and the bytes sent to it.
struct Trap {
    seen: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    _thread: std::thread::JoinHandle<()>,
}

impl Trap {
    fn listen(path: &std::path::Path) -> Trap {
        let listener = std::os::unix::net::UnixListener::bind(path).unwrap();
        let seen = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counter = seen.clone();
        let thread = std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let mut conn = conn;
                let mut buf = [0u8; 4096];
                use std::io::Read;
                while let Ok(n) = conn.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    counter.fetch_add(n, std::sync::atomic::Ordering::SeqCst);
                }
            }
        });
        Trap {
            seen,
            _thread: thread,
        }
    }

    fn seen(&self) -> usize {
        self.seen.load(std::sync::atomic::Ordering::SeqCst)
    }
}

#[test]
fn a_socket_directory_made_by_another_user_is_never_used() {
    if skip_unless_root("making a directory as another uid") {
        return;
    }
    let env = Env::new();
    let dir = env.socket().parent().unwrap().to_path_buf();
    std::fs::create_dir_all(&dir).unwrap();
    let sock = dir.join("agentd.sock");
    let trap = Trap::listen(&sock);
    // Another user pre-created the directory, open to all, and listens in it.
    nix::unistd::chown(&dir, Some(65534.into()), Some(65534.into())).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    nix::unistd::chown(&sock, Some(65534.into()), Some(65534.into())).unwrap();
    std::fs::set_permissions(&sock, std::fs::Permissions::from_mode(0o777)).unwrap();
    for args in [
        vec![
            "run",
            "--model",
            "scripted:/nonexistent.json",
            "the secret plan",
        ],
        vec!["list"],
    ] {
        // With autostart allowed: nothing is started beside it either.
        let out = agentd_e2e::Out::from(env.ctl_command(&args).output().unwrap());
        out.expect_code(3);
        assert!(
            out.stderr.contains("refusing to talk to") && out.stderr.contains("uid 65534"),
            "{}",
            out.stderr
        );
    }
    std::thread::sleep(std::time::Duration::from_millis(200));
    assert_eq!(trap.seen(), 0, "not even a connection was made");
    assert!(!env.data_dir().exists(), "no daemon was autostarted");
}

#[test]
fn a_socket_swapped_in_after_the_path_check_is_caught_by_its_peer_uid() {
    if skip_unless_root("listening as another uid") {
        return;
    }
    let env = Env::new();
    let dir = env.socket().parent().unwrap().to_path_buf();
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    // Another user's listener, bound in a scratch directory of theirs...
    let scratch = env.root.path().join("scratch");
    std::fs::create_dir(&scratch).unwrap();
    nix::unistd::chown(&scratch, Some(65534.into()), Some(65534.into())).unwrap();
    let theirs = scratch.join("l.sock");
    let mut listener = std::process::Command::new("python3");
    listener
        .args([
            "-c",
            "import socket,sys,time\ns=socket.socket(socket.AF_UNIX)\ns.bind(sys.argv[1])\ns.listen(8)\nprint('up',flush=True)\nc,_=s.accept()\nd=c.recv(4096)\nprint('got',len(d),flush=True)\ntime.sleep(2)",
            &theirs.display().to_string(),
        ])
        .uid(65534)
        .gid(65534)
        .stdout(std::process::Stdio::piped());
    let mut child = listener.spawn().unwrap();
    agentd_e2e::wait_for_path(&theirs);
    // ...then moved into place and made to look like ours: the path checks
    // pass, so only the peer's uid on the connection itself can tell.
    std::fs::rename(&theirs, env.socket()).unwrap();
    nix::unistd::chown(&env.socket(), Some(0.into()), Some(0.into())).unwrap();
    std::fs::set_permissions(env.socket(), std::fs::Permissions::from_mode(0o600)).unwrap();
    let out = env.ctl(&["list"]);
    out.expect_code(3);
    assert!(out.stderr.contains("runs as uid 65534"), "{}", out.stderr);
    let _ = child.kill();
    let output = child.wait_with_output().unwrap();
    let said = String::from_utf8_lossy(&output.stdout);
    assert!(
        !said.contains("got") || said.contains("got 0"),
        "bytes reached it: {said}"
    );
}
