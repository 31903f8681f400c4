//! Checkpoints and rewind (DESIGN §23), end to end: the real daemon and
//! agentctl against the mock model, changes made by Write, by Bash and by
//! the person, the next request as the mock received it.

#![allow(clippy::unwrap_used)] // Tests: a panic is the failure report.

use std::path::Path;
use std::time::Duration;

use agentd_e2e::mock::{MODEL, MockServer, Reply, text_of};
use agentd_e2e::{Env, FAST_RETRY, tool_results, wait_until};
use serde_json::{Value, json};

/// The mock: a user message holding `TURN<n>` gets that turn's tool call,
/// a tool result gets "done".
fn scripted(mock: &MockServer) {
    mock.respond_with(|r| {
        let last = r.messages().last()?;
        if !tool_results(std::slice::from_ref(last)).is_empty() {
            return Some(Reply::text("done"));
        }
        let text = text_of(&last["content"]);
        if text.contains("TURN1") {
            return Some(Reply::tool(
                "w1",
                "Write",
                json!({"file_path": "made.txt", "content": "made in turn 1\n"}),
            ));
        }
        if text.contains("TURN2") {
            return Some(Reply::tool(
                "b2",
                "Bash",
                json!({"command": "sed -i s/bee/BEE/ b.txt && rm a.txt && echo x > made-by-bash.txt"}),
            ));
        }
        Some(Reply::text("hello"))
    });
}

fn world(mock: &MockServer) -> Env {
    let env = Env::with_mock(mock);
    env.write_config(FAST_RETRY);
    let p = env.project();
    std::fs::write(p.join("a.txt"), "ay\n").unwrap();
    std::fs::write(p.join("b.txt"), "bee\n").unwrap();
    env
}

fn read(p: &Path, f: &str) -> Option<String> {
    std::fs::read_to_string(p.join(f)).ok()
}

/// Sends `text` and waits until the agent answered it and is idle again.
fn turn(env: &Env, mock: &MockServer, id: &str, text: &str) {
    let before = mock.requests().len();
    env.ctl(&["send", id, text]).expect_code(0);
    wait_until("the turn is answered", Duration::from_secs(60), || {
        mock.requests().len() > before && env.show(id)["status"] == "completed"
    });
}

fn two_turns(env: &Env, mock: &MockServer) -> String {
    let id = env.run_background(MODEL, "cp", "TURN1 make a file");
    env.ctl(&["wait", &id]).expect_code(0);
    turn(env, mock, &id, "TURN2 edit with bash");
    id
}

fn no_breakpoints(messages: &[Value]) -> String {
    fn strip(v: &mut Value) {
        match v {
            Value::Object(m) => {
                m.remove("cache_control");
                m.values_mut().for_each(strip);
            }
            Value::Array(a) => a.iter_mut().for_each(strip),
            _ => {}
        }
    }
    let mut v = Value::Array(messages.to_vec());
    strip(&mut v);
    v.to_string()
}

fn checkpoints(env: &Env, id: &str) -> Vec<Value> {
    env.ctl(&["checkpoints", id, "--stat", "--json"])
        .expect_code(0)
        .json()
        .as_array()
        .unwrap()
        .clone()
}

#[test]
fn every_turn_is_checkpointed_whatever_changed_the_files_and_rewind_code_puts_it_all_back() {
    let mock = MockServer::start();
    scripted(&mock);
    let env = world(&mock);
    let _daemon = env.start_daemon();
    let id = two_turns(&env, &mock);
    let p = env.project();
    assert_eq!(read(&p, "b.txt").as_deref(), Some("BEE\n"));
    assert!(read(&p, "a.txt").is_none());

    let cps = checkpoints(&env, &id);
    assert_eq!(cps.len(), 2, "{cps:?}");
    assert_eq!(cps[0]["turn"], 1);
    assert!(cps[0]["message"].as_str().unwrap().contains("TURN1"));
    assert_eq!(cps[0]["has_files"], true);
    assert_eq!(cps[0]["changed"], json!([]), "nothing before the first");
    // Turn 2 began after turn 1's Write.
    assert_eq!(
        cps[1]["changed"],
        json!([{"path": "made.txt", "status": "A"}])
    );

    // Back to before turn 2: Bash's sed and rm undone, its file removed,
    // turn 1's Write kept.
    let out = env.ctl(&["rewind", &id, "--to", "2", "--code"]);
    out.expect_code(0);
    assert_eq!(read(&p, "a.txt").as_deref(), Some("ay\n"), "{}", out.stdout);
    assert_eq!(read(&p, "b.txt").as_deref(), Some("bee\n"));
    assert!(read(&p, "made-by-bash.txt").is_none());
    assert_eq!(read(&p, "made.txt").as_deref(), Some("made in turn 1\n"));
    // Back to before turn 1: the Write undone too.
    env.ctl(&["rewind", &id, "--to", "1", "--code"])
        .expect_code(0);
    assert!(read(&p, "made.txt").is_none());
    assert_eq!(read(&p, "b.txt").as_deref(), Some("bee\n"));
    // The conversation was not touched.
    let log = env.ctl(&["log", &id]).expect_code(0).stdout.clone();
    assert!(!log.contains("rewound"), "{log}");
}

#[test]
fn rewind_conversation_makes_the_next_request_end_where_the_turn_began() {
    let mock = MockServer::start();
    scripted(&mock);
    let env = world(&mock);
    let _daemon = env.start_daemon();
    let id = two_turns(&env, &mock);
    let turn1: Vec<Value> = mock
        .requests()
        .iter()
        .rev()
        .find(|r| text_of(&r.messages()[0]["content"]).contains("TURN1") && r.messages().len() == 3)
        .unwrap()
        .messages()
        .to_vec();
    env.ctl(&["rewind", &id, "--to", "2", "--conversation"])
        .expect_code(0);
    // Files stay as they are.
    assert_eq!(read(&env.project(), "b.txt").as_deref(), Some("BEE\n"));
    turn(&env, &mock, &id, "TURN3 after the rewind");
    let next = mock.requests().last().unwrap().messages().to_vec();
    // Turn 1 whole (its message, the call, the result, the answer), then
    // the new message: nothing of turn 2.
    assert_eq!(next.len(), 5, "{next:?}");
    // (The cache breakpoint moves to the last message of each request.)
    assert_eq!(no_breakpoints(&next[..3]), no_breakpoints(&turn1));
    assert_eq!(text_of(&next[3]["content"]), "done");
    assert!(text_of(&next[4]["content"]).contains("TURN3"));
    assert!(!serde_json::to_string(&next).unwrap().contains("TURN2"));
    // Nothing was deleted: the log shows turn 2 and the rewind.
    let log = env.ctl(&["log", &id]).expect_code(0).stdout.clone();
    assert!(
        log.contains("TURN2") && log.contains("rewound to the beginning of turn 2"),
        "{log}"
    );
    // The turns after it still count: turn 3 is the third.
    let cps = checkpoints(&env, &id);
    assert_eq!(cps.len(), 3);
}

#[test]
fn a_file_the_person_changed_after_the_agent_is_refused_by_name_unless_forced() {
    let mock = MockServer::start();
    scripted(&mock);
    let env = world(&mock);
    let _daemon = env.start_daemon();
    let id = two_turns(&env, &mock);
    let p = env.project();
    std::fs::write(p.join("b.txt"), "the person's edit\n").unwrap();
    let out = env.ctl(&["rewind", &id, "--to", "1"]);
    out.expect_code(1);
    assert!(
        out.stderr.contains("b.txt") && out.stderr.contains("--force"),
        "{}",
        out.stderr
    );
    assert_eq!(
        read(&p, "b.txt").as_deref(),
        Some("the person's edit\n"),
        "nothing changed"
    );
    assert!(read(&p, "made.txt").is_some(), "nothing changed");
    let log = env.ctl(&["log", &id]).expect_code(0).stdout.clone();
    assert!(
        !log.contains("rewound"),
        "the conversation was not rewound either: {log}"
    );
    env.ctl(&["rewind", &id, "--to", "1", "--force"])
        .expect_code(0);
    assert_eq!(read(&p, "b.txt").as_deref(), Some("bee\n"));
    assert!(read(&p, "made.txt").is_none());
}

#[test]
fn a_running_agent_and_a_turn_that_does_not_exist_are_refused() {
    let mock = MockServer::start();
    mock.respond_with(|r| {
        let last = r.messages().last()?;
        if tool_results(std::slice::from_ref(last)).is_empty() {
            Some(Reply::tool("s", "Bash", json!({"command": "sleep 600"})))
        } else {
            Some(Reply::text("done"))
        }
    });
    let env = world(&mock);
    let _daemon = env.start_daemon();
    let id = env.run_background(MODEL, "busy", "sleep");
    wait_until("it runs its command", Duration::from_secs(60), || {
        !mock.requests().is_empty() && env.show(&id)["status"] == "running"
    });
    let out = env.ctl(&["rewind", &id, "--to", "1"]);
    out.expect_code(1);
    assert!(
        out.stderr.contains("pause or interrupt it first"),
        "{}",
        out.stderr
    );
    env.ctl(&["interrupt", &id]).expect_code(0);
    let out = env.ctl(&["rewind", &id, "--to", "7"]);
    out.expect_code(1);
    assert!(out.stderr.contains("has 1 user turns"), "{}", out.stderr);
}

#[test]
fn a_rewind_killed_midway_is_finished_at_the_next_start() {
    let mock = MockServer::start();
    scripted(&mock);
    let env = world(&mock);
    let marker = env.root.path().join("stalled");
    env.set_daemon_env("AGENTD_TEST_REWIND_STALL", marker.to_str().unwrap());
    let daemon = env.start_daemon();
    let id = two_turns(&env, &mock);
    let p = env.project();
    let mut rewind = env
        .ctl_command(&["rewind", &id, "--to", "1"])
        .spawn()
        .unwrap();
    wait_until("the rewind is midway", Duration::from_secs(60), || {
        marker.exists()
    });
    daemon.kill9();
    let _ = rewind.wait();
    // Half done: one path restored, the rest not.
    let restored = [
        read(&p, "a.txt").as_deref() == Some("ay\n"),
        read(&p, "b.txt").as_deref() == Some("bee\n"),
        read(&p, "made.txt").is_none(),
        read(&p, "made-by-bash.txt").is_none(),
    ];
    assert_eq!(restored.iter().filter(|r| **r).count(), 1, "{restored:?}");
    env.set_daemon_env("AGENTD_TEST_REWIND_STALL", "");
    let _daemon = env.start_daemon();
    wait_until("the rewind is finished", Duration::from_secs(60), || {
        read(&p, "a.txt").as_deref() == Some("ay\n")
            && read(&p, "b.txt").as_deref() == Some("bee\n")
            && read(&p, "made.txt").is_none()
            && read(&p, "made-by-bash.txt").is_none()
    });
    let log = env.ctl(&["log", &id]).expect_code(0).stdout.clone();
    assert!(log.contains("rewound to the beginning of turn 1"), "{log}");
}

#[test]
fn a_fork_at_a_turn_inherits_the_bytes_before_it_and_a_tree_of_its_checkpoint() {
    use agentd_e2e::forking::{TAG, stripped};
    let mock = MockServer::start();
    scripted(&mock);
    let env = world(&mock);
    agentd_e2e::gitrepo::init_repo(&env.project());
    let _daemon = env.start_daemon();
    let id = two_turns(&env, &mock);
    let out = env.ctl(&[
        "fork",
        &id,
        "--at",
        "2",
        "--worktree",
        "--background",
        "FORK-AT look again",
    ]);
    out.expect_code(0);
    let fork = out.stdout.trim().to_string();
    env.ctl(&["wait", &fork]).expect_code(0);
    let reqs = mock.requests();
    let parent_turn2 = reqs
        .iter()
        .find(|r| text_of(&r.messages().last().unwrap()["content"]).contains("TURN2"))
        .unwrap();
    let fork_req = reqs.iter().find(|r| r.body_text().contains(TAG)).unwrap();
    // Byte for byte the parent's request up to where turn 2 began: the
    // prompt cache serves it.
    let parent_body = stripped(parent_turn2);
    let cut = parent_body.find("TURN2").unwrap();
    let prefix = &parent_body[..parent_body[..cut].rfind(",{\"role\"").unwrap()];
    assert!(
        stripped(fork_req).starts_with(prefix),
        "the fork's request begins with the parent's before turn 2"
    );
    assert!(!fork_req.body_text().contains("TURN2"));
    // Its tree holds the files as turn 2 began: turn 1's Write, not
    // turn 2's Bash.
    let shown = env.show(&fork);
    let tree = std::path::PathBuf::from(shown["worktree"]["path"].as_str().unwrap());
    assert_eq!(read(&tree, "made.txt").as_deref(), Some("made in turn 1\n"));
    assert_eq!(read(&tree, "a.txt").as_deref(), Some("ay\n"));
    assert_eq!(read(&tree, "b.txt").as_deref(), Some("bee\n"));
    assert!(read(&tree, "made-by-bash.txt").is_none());
    assert_eq!(read(&tree, "README").as_deref(), Some("hello\n"));
    // Out of range, or with nothing before it: refused.
    let out = env.ctl(&["fork", &id, "--at", "9", "x"]);
    out.expect_code(1);
    assert!(
        out.stderr.contains("--at takes a turn from 1 to 2"),
        "{}",
        out.stderr
    );
    let out = env.ctl(&["fork", &id, "--at", "1", "x"]);
    out.expect_code(1);
    assert!(
        out.stderr.contains("would inherit nothing"),
        "{}",
        out.stderr
    );
}
