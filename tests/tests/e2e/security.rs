//! What tools may see and where agentd keeps its data (DESIGN §16). The
//! socket's own checks are in `socket.rs`.

#![allow(clippy::unwrap_used)] // Tests: a panic is the failure report.

use std::os::unix::fs::PermissionsExt;

use agentd_e2e::Env;
use agentd_e2e::mock::{Block, MockMessage, MockServer, Reply};
use agentd_e2e::root::skip_unless_root;

fn mode(p: &std::path::Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

#[test]
fn tools_never_see_provider_keys_or_configured_secrets() {
    let mock = MockServer::start();
    let env = Env::with_mock(&mock);
    env.set_daemon_env("MY_DEPLOY_TOKEN", "deploy-secret-4242");
    env.set_daemon_env("HARMLESS_SETTING", "visible-value");
    env.write_config("[secrets]\nenv = [\"MY_DEPLOY_TOKEN\"]\n");
    let _daemon = env.start_daemon();
    // Its own environment, and its parent's (agentd's) as it started.
    mock.enqueue(Reply::Message(
        MockMessage::text("Looking at the environment.").with(Block::bash(
            "t1",
            "env; echo ---; tr '\\0' '\\n' < /proc/$PPID/environ",
        )),
    ));
    mock.enqueue(Reply::Message(MockMessage::text("done")));
    // Unconfined, so that $PPID is the daemon itself (a sandboxed command
    // does not even see the daemon's process: it runs in a PID namespace).
    let id = env.start_agent(&[
        "--sandbox",
        "off",
        "--model",
        "anthropic:claude-test",
        "print env",
    ]);
    env.ctl(&["wait", &id, "--timeout", "20"]).expect_code(0);
    let log = env
        .ctl(&["log", &id, "--json"])
        .expect_code(0)
        .stdout
        .clone();
    // The command did run, with the rest of the daemon's environment.
    assert!(log.contains("HARMLESS_SETTING=visible-value"), "{log}");
    assert!(log.contains("---"), "{log}");
    for secret in [
        "sk-ant-test-key",
        "sk-openai-test-key",
        "deploy-secret-4242",
    ] {
        assert!(!log.contains(secret), "{secret} reached the transcript");
    }
    // Nor did it reach the model.
    let sent = String::from_utf8_lossy(&mock.requests()[1].body).into_owned();
    assert!(!sent.contains("deploy-secret-4242") && !sent.contains("sk-ant-test-key"));
}

#[test]
fn a_world_readable_data_directory_is_made_private() {
    let env = Env::new();
    let daemon = env.start_daemon();
    assert!(daemon.terminate().success());
    let data = env.data_dir();
    // As an older agentd (or a careless umask) might have left it.
    let mut loosened = Vec::new();
    let mut stack = vec![data.clone()];
    while let Some(p) = stack.pop() {
        let is_dir = p.is_dir();
        let m = if is_dir { 0o755 } else { 0o644 };
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(m)).unwrap();
        loosened.push(p.clone());
        if is_dir {
            stack.extend(std::fs::read_dir(&p).unwrap().map(|e| e.unwrap().path()));
        }
    }
    assert!(loosened.len() > 3, "the store has files: {loosened:?}");
    let _daemon = env.start_daemon();
    for p in &loosened {
        let m = mode(p);
        assert_eq!(m & 0o077, 0, "{} is still {m:o}", p.display());
    }
    assert_eq!(mode(&data), 0o700);
    assert!(env.daemon_log_text().contains("made it private"));
}

#[test]
fn a_data_directory_of_another_user_is_refused() {
    if skip_unless_root("making a directory of another uid") {
        return;
    }
    let env = Env::new();
    let data = env.data_dir();
    std::fs::create_dir_all(&data).unwrap();
    nix::unistd::chown(&data, Some(65534.into()), Some(65534.into())).unwrap();
    let err = env
        .try_start_daemon()
        .err()
        .expect("the daemon must not start");
    assert!(err.contains("exited"), "{err}");
    let log = env.daemon_log_text();
    assert!(log.contains("belongs to uid 65534"), "{log}");
}

#[test]
fn what_the_daemon_makes_later_is_private_and_what_it_makes_for_the_person_is_not() {
    let mock = MockServer::start();
    let env = Env::with_mock(&mock);
    let daemon = env.start_daemon();
    mock.enqueue(Reply::Message(MockMessage::text("Writing.").with(
        Block::tool(
            "w1",
            "Write",
            serde_json::json!({"file_path": "notes/new.txt", "content": "x"}),
        ),
    )));
    mock.enqueue(Reply::Message(
        MockMessage::text("And a command.").with(Block::bash("b1", "touch made-by-bash")),
    ));
    mock.enqueue(Reply::Message(MockMessage::text("done")));
    env.ctl(&["run", "--model", "anthropic:claude-test", "write"])
        .expect_code(0);
    assert!(daemon.terminate().success());
    // Everything in the data directory — the store's files sled made
    // during the run among them — is the daemon's alone.
    let mut stack = vec![env.data_dir()];
    let mut seen = 0;
    while let Some(p) = stack.pop() {
        let m = mode(&p);
        assert_eq!(m & 0o077, 0, "{} is {m:o}", p.display());
        seen += 1;
        if p.is_dir() {
            stack.extend(std::fs::read_dir(&p).unwrap().map(|e| e.unwrap().path()));
        }
    }
    assert!(seen > 3, "the store has files");
    // The person's files get the person's mask, as their editor would. It
    // is read, not set and restored: umask(2) is the whole test process's.
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let person = status
        .lines()
        .find_map(|l| l.strip_prefix("Umask:"))
        .map(|m| u32::from_str_radix(m.trim(), 8).unwrap())
        .expect("Umask in /proc/self/status (Linux 4.7+)");
    let want_file = 0o666 & !person;
    let want_dir = 0o777 & !person;
    let project = env.project();
    assert_eq!(mode(&project.join("notes/new.txt")), want_file);
    assert_eq!(mode(&project.join("notes")), want_dir);
    assert_eq!(mode(&project.join("made-by-bash")), want_file);
}

#[test]
fn a_socket_directory_open_to_others_is_made_private() {
    let env = Env::new();
    let dir = env.socket().parent().unwrap().to_path_buf();
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let _daemon = env.start_daemon();
    assert_eq!(mode(&dir), 0o700);
    env.ctl(&["status"]).expect_code(0);
}
