//! The tool sandbox (DESIGN §14), by escape attempts: the real daemon on
//! this machine's kernel (Landlock) running the commands a model asks for.
//! Every attempt must fail without leaving a file outside the agent's
//! working directory.

#![allow(clippy::unwrap_used)] // Tests: a panic is the failure report.

use std::path::{Path, PathBuf};

use agentd_e2e::script::{bash_each, script, text, tool, turn};
use agentd_e2e::{Env, dir_names, tool_results};
use serde_json::json;

/// Runs `model` with `flags` to its end; the agent's id.
fn run(env: &Env, model: &str, flags: &[&str]) -> String {
    let id = env.start_model(model, flags);
    env.ctl(&["wait", &id]).expect_code(0);
    id
}

/// A directory beside the project, which the agent may not write to.
fn outside(env: &Env) -> PathBuf {
    let dir = env.root.path().join("outside");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn bash_cannot_write_outside_its_working_directory() {
    let env = Env::new();
    let out = outside(&env);
    let o = out.display().to_string();
    let data = env.data_dir().display().to_string();
    let project = env.project();
    std::fs::write(project.join("README"), "readme\n").unwrap();
    let commands = vec![
        format!("echo x > {o}/redirect.txt"),
        format!("cp README {o}/cp.txt"),
        format!("echo m > moved.txt && mv moved.txt {o}/mv.txt"),
        format!("ln README {o}/hardlink.txt"),
        format!(
            "ln -s {project}/README {o}/symlink.txt",
            project = project.display()
        ),
        format!("cd {o} && touch touched.txt"),
        format!("ln -s {o} escape && echo x > escape/through-a-link.txt"),
        format!("printf 'echo x > {o}/child.txt\\n' > child.sh && sh child.sh"),
        format!("python3 -c \"open('{o}/python.txt', 'w').write('x')\""),
        format!("echo x > {data}/planted"),
        "echo x > /tmp/agentd-sandbox-escape-$$".to_string(),
        // What it may do: its directory, its TMPDIR.
        "echo ok > inside.txt && echo ok > \"$TMPDIR/t\" && cat \"$TMPDIR/t\" && echo \"$TMPDIR\""
            .to_string(),
    ];
    let _daemon = env.start_daemon();
    let model = env.script("escape.json", &bash_each(&commands));
    let id = run(&env, &model, &[]);
    let got = tool_results(&env.transcript(&id));
    assert_eq!(got.len(), commands.len(), "{got:?}");
    for (i, (is_error, text)) in got.iter().enumerate().take(commands.len() - 1) {
        assert!(
            *is_error && (text.contains("Permission denied") || text.contains("PermissionError")),
            "attempt {i} ({}) must be refused: {text}",
            commands[i]
        );
    }
    assert!(
        got[0]
            .1
            .contains("agentd: this agent's sandbox lets commands write only beneath"),
        "the model is told what the sandbox allows: {}",
        got[0].1
    );
    assert!(
        dir_names(&out).is_empty(),
        "nothing was left outside: {:?}",
        dir_names(&out)
    );
    assert!(!env.data_dir().join("planted").exists());
    let (is_error, last) = &got[commands.len() - 1];
    assert!(!is_error, "{last}");
    assert_eq!(
        std::fs::read_to_string(project.join("inside.txt")).unwrap(),
        "ok\n"
    );
    let short = env.show(&id)["short_id"].as_str().unwrap().to_string();
    assert!(
        last.contains(&format!("-tmp/{short}")),
        "a private TMPDIR: {last}"
    );
    let shown = env.ctl(&["show", &id]).expect_code(0).stdout.clone();
    assert!(
        shown.contains("sandbox:") && shown.contains("workspace-write"),
        "{shown}"
    );
}

#[test]
fn one_agents_tmpdir_is_not_anothers() {
    let env = Env::new();
    let _daemon = env.start_daemon();
    let first = env.script(
        "a.json",
        &bash_each(&["echo \"$TMPDIR\" > where.txt".to_string()]),
    );
    let a = run(&env, &first, &[]);
    assert!(!tool_results(&env.transcript(&a))[0].0);
    let a_tmp = std::fs::read_to_string(env.project().join("where.txt")).unwrap();
    let second = env.script(
        "b.json",
        &bash_each(&[format!("mkdir -p {0} && echo x > {0}/stolen", a_tmp.trim())]),
    );
    let b = run(&env, &second, &[]);
    let (is_error, text) = &tool_results(&env.transcript(&b))[0];
    assert!(*is_error && text.contains("Permission denied"), "{text}");
    assert!(!Path::new(a_tmp.trim()).join("stolen").exists());
}

#[test]
fn sandbox_off_lifts_it_and_says_so() {
    let env = Env::new();
    let out = outside(&env);
    let _daemon = env.start_daemon();
    let model = env.script(
        "off.json",
        &bash_each(&[format!("echo x > {}/allowed.txt", out.display())]),
    );
    let id = run(&env, &model, &["--sandbox", "off"]);
    assert!(!tool_results(&env.transcript(&id))[0].0);
    assert!(out.join("allowed.txt").exists());
    let shown = env.ctl(&["show", &id]).expect_code(0).stdout.clone();
    assert!(shown.contains("off (unconfined)"), "{shown}");
}

#[test]
fn read_only_and_plan_write_nothing() {
    let env = Env::new();
    let _daemon = env.start_daemon();
    let model = env.script(
        "ro.json",
        &script(vec![
            turn(vec![tool(
                "Bash",
                json!({"command": "echo x > inside.txt"}),
            )]),
            turn(vec![tool(
                "Write",
                json!({"file_path": "written.txt", "content": "x"}),
            )]),
            turn(vec![text("done")]),
        ]),
    );
    let id = run(&env, &model, &["--sandbox", "read-only"]);
    let got = tool_results(&env.transcript(&id));
    assert!(
        got[0].0 && got[0].1.contains("Permission denied"),
        "{got:?}"
    );
    assert!(
        got[1].0 && got[1].1.contains("read-only file system"),
        "{got:?}"
    );
    assert!(!env.project().join("inside.txt").exists());
    assert!(!env.project().join("written.txt").exists());
    let plan = env.ctl(&[
        "run",
        "--background",
        "--permission-mode",
        "plan",
        "--model",
        &model,
        "x",
    ]);
    plan.expect_code(0);
    let shown = env
        .ctl(&["show", plan.stdout.trim()])
        .expect_code(0)
        .stdout
        .clone();
    assert!(shown.contains("read-only (plan mode)"), "{shown}");
}

#[test]
fn no_network_refuses_a_tcp_connect_to_a_local_listener() {
    let env = Env::new();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let _daemon = env.start_daemon();
    let connect = format!("bash -c 'echo hi > /dev/tcp/127.0.0.1/{port}' && echo connected");
    let model = env.script("net.json", &bash_each(std::slice::from_ref(&connect)));
    let denied = run(&env, &model, &["--no-network"]);
    let (is_error, text) = &tool_results(&env.transcript(&denied))[0];
    assert!(*is_error && text.contains("Permission denied"), "{text}");
    // With the full network the same command connects: the check is real.
    let allowed = run(&env, &model, &["--network", "full"]);
    let (is_error, text) = &tool_results(&env.transcript(&allowed))[0];
    assert!(!is_error && text.contains("connected"), "{text}");
}

#[test]
fn no_network_also_refuses_udp() {
    let env = Env::new();
    let listener = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    listener
        .set_read_timeout(Some(std::time::Duration::from_millis(500)))
        .unwrap();
    let port = listener.local_addr().unwrap().port();
    let _daemon = env.start_daemon();
    let send = format!("bash -c 'echo datagram > /dev/udp/127.0.0.1/{port}' && echo sent");
    let model = env.script("udp.json", &bash_each(std::slice::from_ref(&send)));
    let mut buf = [0u8; 64];
    let denied = run(&env, &model, &["--no-network"]);
    let (is_error, text) = &tool_results(&env.transcript(&denied))[0];
    assert!(*is_error && text.contains("Permission denied"), "{text}");
    assert!(listener.recv(&mut buf).is_err(), "a datagram got out");
    // Without it, the same command gets through: the check is real.
    let allowed = run(&env, &model, &["--network", "full"]);
    let (is_error, text) = &tool_results(&env.transcript(&allowed))[0];
    assert!(!is_error && text.contains("sent"), "{text}");
    let n = listener.recv(&mut buf).unwrap();
    assert_eq!(&buf[..n], b"datagram\n");
}

#[test]
fn the_provider_key_is_not_in_the_tools_environment() {
    let env = Env::new();
    env.set_daemon_env("ANTHROPIC_API_KEY", "sk-ant-secret-in-the-daemon");
    let _daemon = env.start_daemon();
    let model = env.script("env.json", &bash_each(&["env > env.txt".to_string()]));
    run(&env, &model, &[]);
    let seen = std::fs::read_to_string(env.project().join("env.txt")).unwrap();
    assert!(!seen.contains("sk-ant-secret-in-the-daemon"), "{seen}");
    assert!(seen.contains("TMPDIR="), "{seen}");
}

#[test]
fn without_landlock_a_sandboxed_agent_is_refused_and_off_still_runs() {
    let env = Env::new();
    env.set_daemon_env("AGENTD_LANDLOCK_ABI", "0");
    let _daemon = env.start_daemon();
    let model = env.script("x.json", &bash_each(&["true".to_string()]));
    let out = env.ctl(&["run", "--background", "--model", &model, "x"]);
    out.expect_code(1);
    assert!(
        out.stderr.contains("no Landlock") && out.stderr.contains("--sandbox off"),
        "{}",
        out.stderr
    );
    let list = env.ctl(&["list", "--json"]).expect_code(0).json();
    assert!(
        list.as_array().unwrap().is_empty(),
        "nothing was stored: {list}"
    );
    run(&env, &model, &["--sandbox", "off"]);
    let status = env.ctl(&["status", "--json"]).expect_code(0).json();
    assert_eq!(status["landlock_abi"], 0);
    let doctor = env.ctl(&["doctor"]);
    doctor.expect_code(1);
    assert!(
        doctor.stdout.contains("agents will be refused"),
        "{}",
        doctor.stdout
    );
}

#[test]
fn status_and_doctor_show_the_kernels_landlock() {
    let env = Env::new();
    let _daemon = env.start_daemon();
    let status = env.ctl(&["status", "--json"]).expect_code(0).json();
    let abi = status["landlock_abi"].as_i64().unwrap();
    assert!(abi >= 1, "this machine's kernel offers Landlock: {status}");
    assert_eq!(status["default_sandbox"], "workspace-write");
    let doctor = env.ctl(&["doctor", "--json"]).expect_code(0).json();
    assert_eq!(doctor["landlock_abi"], abi);
    assert_eq!(doctor["ok"], true);
    let text = env.ctl(&["status"]).expect_code(0).stdout.clone();
    assert!(text.contains(&format!("Landlock ABI {abi}")), "{text}");
}

#[test]
fn no_network_on_an_old_landlock_is_refused() {
    let env = Env::new();
    env.set_daemon_env("AGENTD_LANDLOCK_ABI", "3");
    let _daemon = env.start_daemon();
    let model = env.script("x.json", &bash_each(&["true".to_string()]));
    let out = env.ctl(&[
        "run",
        "--background",
        "--no-network",
        "--model",
        &model,
        "x",
    ]);
    out.expect_code(1);
    assert!(out.stderr.contains("ABI 4"), "{}", out.stderr);
}

#[test]
fn a_landlock_too_old_to_stop_truncation_is_refused() {
    let env = Env::new();
    env.set_daemon_env("AGENTD_LANDLOCK_ABI", "2");
    let _daemon = env.start_daemon();
    let model = env.script("x.json", &bash_each(&["true".to_string()]));
    let out = env.ctl(&["run", "--background", "--model", &model, "x"]);
    out.expect_code(1);
    assert!(
        out.stderr.contains("cannot stop truncation") && out.stderr.contains("--sandbox off"),
        "{}",
        out.stderr
    );
}

#[test]
fn an_agents_tools_cannot_use_the_daemons_socket() {
    let env = Env::new();
    let out = outside(&env);
    let _daemon = env.start_daemon();
    let ctl = agentd_e2e::agentctl_bin().display().to_string();
    let sock = env.socket().display().to_string();
    // The daemon refuses its tools' requests whatever their sandbox (a
    // confined tool cannot even make the socket: see below); here an
    // unconfined agent's tool tries to start another agent.
    let evil = env.script(
        "evil.json",
        &bash_each(&[format!("echo x > {}/escaped.txt", out.display())]),
    );
    let attempt = format!(
        "{ctl} --no-autostart --socket {sock} run --background --sandbox off --model {evil} go; {ctl} --no-autostart --socket {sock} list"
    );
    let model = env.script("caller.json", &bash_each(&[attempt]));
    let id = run(&env, &model, &["--sandbox", "off"]);
    let (is_error, text) = &tool_results(&env.transcript(&id))[0];
    assert!(*is_error, "{text}");
    assert_eq!(
        text.matches("does not take requests from its agents' own tools")
            .count(),
        2,
        "{text}"
    );
    let list = env.ctl(&["list", "--json"]).expect_code(0).json();
    assert_eq!(
        list.as_array().unwrap().len(),
        1,
        "only the caller exists: {list}"
    );
    assert!(dir_names(&out).is_empty());
}

#[test]
fn an_agent_whose_directory_holds_the_daemons_data_is_refused() {
    let env = Env::new();
    let _daemon = env.start_daemon();
    let model = env.script("x.json", &bash_each(&["true".to_string()]));
    let root = env.root.path().display().to_string();
    let out = env.ctl(&[
        "run",
        "--background",
        "--cwd",
        &root,
        "--model",
        &model,
        "x",
    ]);
    out.expect_code(1);
    assert!(out.stderr.contains("overlap"), "{}", out.stderr);
}

#[test]
fn write_and_edit_open_files_only_beneath_the_working_directory() {
    let env = Env::new();
    let out = outside(&env);
    let o = out.display().to_string();
    let project = env.project();
    std::os::unix::fs::symlink(&out, project.join("planted")).unwrap();
    std::fs::write(out.join("theirs.txt"), "theirs\n").unwrap();
    let write = |path: &str| tool("Write", json!({"file_path": path, "content": "x"}));
    let model = env.script(
        "files.json",
        &script(vec![
            turn(vec![write(&format!("{o}/absolute.txt"))]),
            turn(vec![write("../outside/dotdot.txt")]),
            turn(vec![write("planted/through-a-link.txt")]),
            turn(vec![tool(
                "Edit",
                json!({"file_path": "planted/theirs.txt", "old_string": "theirs", "new_string": "mine"}),
            )]),
            // A directory written into, then swapped for a link between calls.
            turn(vec![write("target/f.txt")]),
            turn(vec![tool(
                "Bash",
                json!({"command": format!("rm -rf target && ln -s {o} target")}),
            )]),
            turn(vec![write("target/f.txt")]),
            turn(vec![tool(
                "Edit",
                json!({"file_path": "target/theirs.txt", "old_string": "theirs", "new_string": "mine"}),
            )]),
            turn(vec![text("done")]),
        ]),
    );
    let _daemon = env.start_daemon();
    let id = run(&env, &model, &[]);
    let got = tool_results(&env.transcript(&id));
    assert_eq!(got.len(), 8, "{got:?}");
    for i in [0, 1, 2, 3, 6, 7] {
        assert!(
            got[i].0 && got[i].1.contains("outside the agent's working directory"),
            "call {i} must be refused: {}",
            got[i].1
        );
    }
    assert!(!got[4].0 && !got[5].0, "{got:?}");
    assert_eq!(dir_names(&out), vec!["theirs.txt".to_string()]);
    assert_eq!(
        std::fs::read_to_string(out.join("theirs.txt")).unwrap(),
        "theirs\n"
    );
}

#[test]
fn a_tool_that_double_forks_and_clears_its_environment_is_still_refused() {
    let env = Env::new();
    let daemon = env.start_daemon();
    let ctl = agentd_e2e::agentctl_bin().display().to_string();
    let sock = env.socket().display().to_string();
    // Leaves the daemon's process tree (it would be init's without the
    // subreaper), starts a session of its own, and drops the tool marker.
    let attempt = format!(
        "(setsid env -i {ctl} --no-autostart --socket {sock} list > escaped.txt 2>&1 &) ; sleep 2; cat escaped.txt"
    );
    let model = env.script("fork.json", &bash_each(&[attempt]));
    let id = run(&env, &model, &["--sandbox", "off"]);
    let seen = std::fs::read_to_string(env.project().join("escaped.txt")).unwrap();
    assert!(
        seen.contains("does not take requests from its agents' own tools"),
        "{seen}"
    );
    let _ = id;
    // The orphans it adopted are reaped: no zombie children are left.
    let zombies = || {
        let mut n = 0;
        let tasks = std::fs::read_dir(format!("/proc/{}/task", daemon.pid())).unwrap();
        for task in tasks.flatten() {
            let list = std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
            for pid in list.split_whitespace() {
                let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
                if stat
                    .rsplit(')')
                    .next()
                    .is_some_and(|r| r.trim_start().starts_with('Z'))
                {
                    n += 1;
                }
            }
        }
        n
    };
    agentd_e2e::wait_until(
        "adopted orphans reaped",
        std::time::Duration::from_secs(5),
        || zombies() == 0,
    );
}

#[test]
fn a_tool_nested_deeper_than_any_bound_is_still_refused() {
    let env = Env::new();
    let _daemon = env.start_daemon();
    let ctl = agentd_e2e::agentctl_bin().display().to_string();
    let sock = env.socket().display().to_string();
    let nest = format!(
        "printf '%s\\n' 'if [ \"$1\" -gt 0 ]; then sh ./nest.sh $(($1 - 1)); else env -i {ctl} --no-autostart --socket {sock} list; fi' > nest.sh && sh ./nest.sh 80"
    );
    let model = env.script("nest.json", &bash_each(&[nest]));
    let id = run(&env, &model, &["--sandbox", "off"]);
    let (is_error, text) = &tool_results(&env.transcript(&id))[0];
    assert!(*is_error, "{text}");
    assert!(
        text.contains("does not take requests from its agents' own tools"),
        "{text}"
    );
}

#[test]
fn confined_tools_cannot_open_unix_sockets() {
    let env = Env::new();
    let _daemon = env.start_daemon();
    let ctl = agentd_e2e::agentctl_bin().display().to_string();
    let sock = env.socket().display().to_string();
    let commands = vec![
        format!("{ctl} --no-autostart --socket {sock} list"),
        format!("python3 -c \"import socket; s = socket.socket(socket.AF_UNIX); s.connect('{sock}')\""),
        // A socket pair names no path: it stays allowed.
        "python3 -c \"import socket; a, b = socket.socketpair(); a.send(b'ok'); print(b.recv(2).decode())\"".to_string(),
    ];
    let model = env.script("unix.json", &bash_each(&commands));
    let id = run(&env, &model, &[]);
    let got = tool_results(&env.transcript(&id));
    assert!(
        got[0].0 && got[0].1.contains("ermission denied"),
        "{}",
        got[0].1
    );
    assert!(
        got[1].0 && got[1].1.contains("PermissionError"),
        "{}",
        got[1].1
    );
    assert!(!got[2].0 && got[2].1.contains("ok"), "{}", got[2].1);
    let list = env.ctl(&["list", "--json"]).expect_code(0).json();
    assert_eq!(list.as_array().unwrap().len(), 1);
}
