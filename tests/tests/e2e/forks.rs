//! Forks (DESIGN §6) — the real daemon against the mock model, asserting on
//! the requests it received: a fork's request is its parent's bytes up to
//! its directive, siblings share one cached prefix, fan-out waits for the
//! first response, forks survive SIGKILL and are found, attached,
//! messaged, stopped and reported like any background child.

#![allow(clippy::unwrap_used)] // Tests: a panic is the failure report.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use agentd_e2e::forking::{PLACEHOLDER, TAG, fork_call, fork_call_with, is_fork_of, stripped};
use agentd_e2e::mock::cache::anthropic_blocks;
use agentd_e2e::mock::{
    Block, MODEL, MockMessage, MockServer, RecordedRequest, Reply, last_text, n_messages,
    prompt_of, text_of,
};
use agentd_e2e::parent::{self, NOTE};
use agentd_e2e::{Env, FAST_RETRY, all_text, wait_until};
use serde_json::{Value, json};

fn world(mock: &MockServer) -> Env {
    let env = Env::with_mock(mock);
    env.write_config(FAST_RETRY);
    mock.set_min_cacheable_tokens(64);
    env
}

/// Prompt tokens of a request, as the mock counts them.
fn prompt_tokens(r: &RecordedRequest) -> u64 {
    let c = r.cache.as_ref().unwrap();
    c.read + c.creation + c.input
}

/// Tokens of every block but the last (a fork's directive).
fn all_but_last_block(r: &RecordedRequest) -> u64 {
    let blocks = anthropic_blocks(&r.json).unwrap();
    blocks[..blocks.len() - 1].iter().map(|b| b.tokens).sum()
}

fn run_bg(env: &Env, name: &str, prompt: &str) -> String {
    env.run_background(MODEL, name, prompt)
}

/// A parent whose first answer forks once per directive; every later
/// request of the parent gets `after`.
fn parent_forks(mock: &MockServer, directives: &[&str], after: &str) {
    let mut message = MockMessage::text("Splitting the work.");
    for d in directives {
        message = message.with(fork_call(d));
    }
    parent::answers(mock, message, Reply::text(after));
}

fn first_request_of(mock: &MockServer, directive: &str) -> RecordedRequest {
    mock.requests()
        .into_iter()
        .find(|r| is_fork_of(r, directive))
        .unwrap_or_else(|| panic!("no request of the fork {directive}"))
}

#[test]
fn forks_send_their_parents_bytes_up_to_the_directive_and_share_one_cached_prefix() {
    let mock = MockServer::start();
    let env = world(&mock);
    let _daemon = env.start_daemon();
    let directives = ["FORK-A schema", "FORK-B service", "FORK-C routes"];
    for d in directives {
        mock.when(
            move |r| is_fork_of(r, d),
            Reply::text(format!("Scope: {d}\nResult: done")),
        );
    }
    parent_forks(&mock, &directives, "Waiting for the forks.");
    let parent = run_bg(&env, "boss", "PARENT plan the refactor");
    wait_until("three forks report", Duration::from_secs(30), || {
        all_text(&env.transcript(&parent)).matches(NOTE).count() == 3
    });

    let first = &parent::request(&mock, 1);
    let second = &parent::request(&mock, 3);
    let forks: Vec<RecordedRequest> = directives
        .iter()
        .map(|d| first_request_of(&mock, d))
        .collect();

    // The parent's request that made the calls is the fork's, byte for
    // byte, up to its end (breakpoints aside: they never change a key).
    let parent_body = stripped(first);
    let parent_prefix = &parent_body[..parent_body.len() - 2]; // without "]}"
    let calls = second.json["messages"][1].clone();
    let ids: Vec<&str> = calls["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["type"] == "tool_use")
        .map(|b| b["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 3);
    let parent_second = stripped(second);
    let assistant_at = parent_second.find(r#"{"role":"assistant""#).unwrap();
    let assistant_end = parent_second[assistant_at..]
        .find(r#",{"role":"user""#)
        .unwrap()
        + assistant_at;
    let assistant_bytes = &parent_second[assistant_at..assistant_end];
    for (fork, d) in forks.iter().zip(directives) {
        let body = stripped(fork);
        assert!(
            body.starts_with(parent_prefix),
            "{d}: the fork's request does not begin with its parent's"
        );
        // Then the parent's assistant message, cloned whole.
        assert!(
            body[parent_prefix.len()..].starts_with(&format!(",{assistant_bytes}")),
            "{d}: the assistant message is not the parent's bytes"
        );
        // Then one user message: a placeholder per call, ids unchanged, and
        // the directive in the boilerplate.
        let own = fork.json["messages"].as_array().unwrap().last().unwrap();
        let blocks = own["content"].as_array().unwrap();
        assert_eq!(blocks.len(), 4);
        for (block, id) in blocks.iter().zip(&ids) {
            assert_eq!(block["type"], "tool_result");
            assert_eq!(block["tool_use_id"], *id);
            assert_eq!(block["content"], PLACEHOLDER);
        }
        let directive = blocks[3]["text"].as_str().unwrap();
        assert!(directive.starts_with(TAG) && directive.contains(d));
        // Breakpoints: one on the last placeholder, none on the others, at
        // most four in all.
        assert!(blocks[2].get("cache_control").is_some(), "{d}");
        assert!(blocks[0].get("cache_control").is_none());
        assert!(blocks[1].get("cache_control").is_none());
        // The system prompt, where the parent's request ended, the last
        // placeholder, the directive: Anthropic's limit of four.
        let marks = fork.cache.as_ref().unwrap().breakpoints.len();
        assert_eq!(marks, 4, "{d}");
        // The same model, system prompt and tools: the parent's bytes.
        assert_eq!(fork.json["system"], first.json["system"]);
        assert_eq!(fork.json["tools"], first.json["tools"]);
    }
    // Siblings are identical up to the directive block.
    let upto_directive = |r: &RecordedRequest| {
        let body = stripped(r);
        let at = body
            .rfind(&format!(r#"{{"type":"text","text":"{TAG}"#))
            .unwrap();
        body[..at].to_string()
    };
    assert_eq!(upto_directive(&forks[0]), upto_directive(&forks[1]));
    assert_eq!(upto_directive(&forks[1]), upto_directive(&forks[2]));

    // The cache: the first fork reads everything its parent's request
    // cached and writes the shared extension; its siblings read all of it
    // and pay only for their own directive.
    let mut by_arrival = forks.clone();
    by_arrival.sort_by_key(|r| r.index);
    let leader = &by_arrival[0];
    let lc = leader.cache.as_ref().unwrap();
    assert_eq!(
        lc.read,
        prompt_tokens(first),
        "the leader reads the parent's prefix"
    );
    assert_eq!(lc.read + lc.creation, prompt_tokens(leader));
    for sibling in &by_arrival[1..] {
        let c = sibling.cache.as_ref().unwrap();
        assert_eq!(
            c.read,
            all_but_last_block(sibling),
            "a sibling reads the whole shared prefix"
        );
        assert_eq!(c.input, 0);
    }

    // The parent's call returned at once with the placeholder and an id;
    // each fork is a background child of type fork.
    let result = &second.json["messages"][2]["content"][0];
    assert!(
        text_of(&result["content"]).starts_with(PLACEHOLDER),
        "{result}"
    );
    let all = env.agents();
    let fork_records: Vec<&Value> = all
        .iter()
        .filter(|a| a["parent_id"] == parent.as_str())
        .collect();
    assert_eq!(fork_records.len(), 3);
    for f in &fork_records {
        assert_eq!(f["subagent_type"], "fork");
        assert_eq!(f["background"], true);
        assert_eq!(f["status"], "completed");
        assert_eq!(f["max_turns"], 200);
    }
}

#[test]
fn five_siblings_wait_for_the_first_response_then_go_together_and_read_the_cache() {
    let mock = MockServer::start();
    let env = world(&mock);
    let _daemon = env.start_daemon();
    let directives = ["FAN-1", "FAN-2", "FAN-3", "FAN-4", "FAN-5"];
    let delay = Duration::from_millis(800);
    for d in directives {
        mock.when(
            move |r| is_fork_of(r, d),
            Reply::Message(MockMessage::text(format!("Scope: {d}")).delay_start(delay)),
        );
    }
    parent_forks(&mock, &directives, "Waiting.");
    let parent = run_bg(&env, "fan", "PARENT fan out");
    wait_until("five forks report", Duration::from_secs(30), || {
        all_text(&env.transcript(&parent)).matches(NOTE).count() == 5
    });
    let mut forks: Vec<RecordedRequest> = directives
        .iter()
        .map(|d| first_request_of(&mock, d))
        .collect();
    forks.sort_by_key(|r| r.index);
    let leader = &forks[0];
    let followers = &forks[1..];
    for f in followers {
        let after = f.received_at.duration_since(leader.received_at);
        assert!(
            after >= delay,
            "a sibling was sent {after:?} after the first, before its response started ({delay:?})"
        );
        let c = f.cache.as_ref().unwrap();
        assert_eq!(c.read, all_but_last_block(f), "reads the shared prefix");
        assert_eq!(c.input, 0);
    }
    let spread = followers.last().unwrap().received_at - followers[0].received_at;
    assert!(
        spread < delay,
        "the siblings went together, not one after another ({spread:?})"
    );
    let written: u64 = forks
        .iter()
        .map(|r| r.cache.as_ref().unwrap().creation)
        .sum();
    let directive_tokens: u64 = followers
        .iter()
        .map(|r| prompt_tokens(r) - all_but_last_block(r))
        .sum();
    // Only the leader wrote the shared extension; the rest wrote their own
    // directive alone.
    assert_eq!(
        written - leader.cache.as_ref().unwrap().creation,
        directive_tokens
    );
}

/// The second request of the fork FORK-KILL.
fn second_of_kill(r: &RecordedRequest) -> bool {
    n_messages(r) == 5 && text_of(&r.json["messages"][2]["content"]).contains("FORK-KILL")
}

#[test]
fn a_wide_fan_out_still_reads_the_parents_cache() {
    // Twelve calls and twelve placeholders put the parent's cached prefix
    // more than 20 blocks (Anthropic's lookback) before the placeholder
    // breakpoint: the fork's request marks where its parent's request
    // ended, so the cache still finds it.
    let mock = MockServer::start();
    let env = world(&mock);
    let _daemon = env.start_daemon();
    let directives: Vec<String> = (0..12).map(|i| format!("WIDE-{i:02}")).collect();
    let names: Vec<&str> = directives.iter().map(String::as_str).collect();
    mock.when(
        |r| is_fork_of(r, "WIDE-"),
        Reply::text("Scope: wide\nResult: done"),
    );
    parent_forks(&mock, &names, "Waiting.");
    let parent = run_bg(&env, "wide", "PARENT go wide");
    wait_until("twelve forks report", Duration::from_secs(30), || {
        all_text(&env.transcript(&parent)).matches(NOTE).count() == 12
    });
    let reqs = mock.requests();
    let first = &parent::request(&mock, 1);
    let leader = reqs.iter().find(|r| is_fork_of(r, "WIDE-")).unwrap();
    let c = leader.cache.as_ref().unwrap();
    assert_eq!(
        c.read,
        prompt_tokens(first),
        "the first fork reads its parent's prefix"
    );
    assert_eq!(c.breakpoints.len(), 4);
    for r in reqs
        .iter()
        .filter(|r| is_fork_of(r, "WIDE-") && r.index != leader.index)
    {
        assert_eq!(r.cache.as_ref().unwrap().read, all_but_last_block(r));
    }
}

#[test]
fn a_fork_keeping_the_last_turn_starts_at_it_and_is_served() {
    // The parent's newest turn arrives while a tool runs, so it is
    // delivered in the same message as that tool's result: the fork keeps
    // the turn but not the result of a call it does not have.
    let mock = MockServer::start();
    let env = world(&mock);
    let _daemon = env.start_daemon();
    mock.when(
        |r| is_fork_of(r, "LAST-TURN"),
        Reply::text("Scope: last turn\nResult: done"),
    );
    mock.when(
        |r| parent::is_parent(r) && last_text(r).contains("NEW-TASK"),
        MockMessage::text("Forking for it.")
            .with(fork_call_with("LAST-TURN", json!({"fork_turns": "1"}))),
    );
    parent::answers(
        &mock,
        MockMessage::text("Working.").with(Block::bash("", "sleep 3")),
        Reply::text("ok"),
    );
    let parent = run_bg(&env, "p", "PARENT go");
    wait_until("the parent runs its tool", Duration::from_secs(10), || {
        !mock.requests().is_empty()
    });
    env.ctl(&["send", &parent, "NEW-TASK: look at the parser"])
        .expect_code(0);
    wait_until("the fork reports", Duration::from_secs(30), || {
        all_text(&env.transcript(&parent)).contains("Result: done")
    });
    let fork = first_request_of(&mock, "LAST-TURN");
    let messages = fork.json["messages"].as_array().unwrap();
    assert_eq!(
        messages.len(),
        3,
        "the kept turn, the calls, the fork's own"
    );
    let first = messages[0]["content"].as_array().unwrap();
    assert_eq!(first.len(), 1, "no result of a call the fork does not have");
    assert_eq!(first[0]["text"], "NEW-TASK: look at the parser");
    // The same system prompt and tools: still read from the cache.
    assert!(fork.cache.as_ref().unwrap().read > 0);
}

#[test]
fn a_fork_killed_mid_run_resumes_with_the_same_bytes_and_reads_the_cache() {
    let mock = MockServer::start();
    let env = world(&mock);
    let daemon = env.start_daemon();
    // First request: a tool call. Second: hangs the first time (the daemon
    // is killed meanwhile), answers after the restart.
    mock.when(
        |r| is_fork_of(r, "FORK-KILL") && n_messages(r) == 3,
        Reply::Message(
            MockMessage::text("Looking.").with(Block::bash("", "echo looked > looked.txt")),
        ),
    );
    let hung = Arc::new(AtomicUsize::new(0));
    let h = hung.clone();
    mock.when(
        move |r| second_of_kill(r) && h.fetch_add(1, Ordering::SeqCst) == 0,
        Reply::Message(MockMessage::text("never").delay_start(Duration::from_secs(120))),
    );
    mock.when(
        second_of_kill,
        Reply::text("Scope: FORK-KILL\nResult: looked"),
    );
    parent_forks(&mock, &["FORK-KILL"], "Waiting.");
    let parent = run_bg(&env, "p", "PARENT go");
    wait_until(
        "the fork's second request hangs",
        Duration::from_secs(30),
        || hung.load(Ordering::SeqCst) == 1,
    );
    daemon.kill9();
    let before = mock.requests();
    let killed = before.iter().rfind(|r| second_of_kill(r)).unwrap().clone();
    let first = first_request_of(&mock, "FORK-KILL");

    let _daemon = env.start_daemon();
    wait_until(
        "the fork reports after the restart",
        Duration::from_secs(30),
        || all_text(&env.transcript(&parent)).matches(NOTE).count() == 1,
    );
    let resumed = mock
        .requests()
        .into_iter()
        .skip(before.len())
        .find(second_of_kill)
        .unwrap();
    assert_eq!(
        resumed.body_text(),
        killed.body_text(),
        "the resumed fork sends exactly the bytes it sent before"
    );
    assert!(stripped(&resumed).starts_with(&stripped(&first)[..stripped(&first).len() - 2]));
    let c = resumed.cache.as_ref().unwrap();
    assert_eq!(
        c.read,
        prompt_tokens(&first),
        "reads the inherited prefix and the fork's own first turn from the cache"
    );
    assert!(all_text(&env.transcript(&parent)).contains("Result: looked"));
}

#[test]
fn forks_are_listed_attached_messaged_stopped_and_reported_once() {
    let mock = MockServer::start();
    let env = world(&mock);
    let _daemon = env.start_daemon();
    mock.when(
        |r| last_text(r).contains("FOLLOW-UP"),
        Reply::text("follow-up done"),
    );
    mock.when(
        |r| parent::is_parent(r) && last_text(r).contains("HOLD"),
        Reply::Message(MockMessage::text("holding").delay_start(Duration::from_secs(120))),
    );
    mock.when(
        |r| is_fork_of(r, "FORK-QUICK"),
        Reply::text("Scope: quick\nResult: quick done"),
    );
    mock.when(
        |r| is_fork_of(r, "FORK-SLOW"),
        Reply::Message(MockMessage::text("slow").delay_start(Duration::from_secs(120))),
    );
    parent_forks(&mock, &["FORK-QUICK", "FORK-SLOW"], "Waiting.");
    let parent = run_bg(&env, "fam", "PARENT go");
    wait_until("the quick fork reports", Duration::from_secs(30), || {
        all_text(&env.transcript(&parent)).matches(NOTE).count() == 1
    });
    let all = env.agents();
    let fork_of = |needle: &str| {
        all.iter()
            .find(|a| {
                a["parent_id"] == parent.as_str()
                    && a["description"].as_str().unwrap().contains(needle)
            })
            .unwrap()
            .clone()
    };
    let quick = fork_of("FORK-QUICK");
    let slow = fork_of("FORK-SLOW");
    let quick_id = quick["id"].as_str().unwrap().to_string();
    let slow_id = slow["id"].as_str().unwrap().to_string();
    assert_eq!(quick["status"], "completed");
    assert_eq!(slow["status"], "running");

    // Listed as a family, with types.
    let tree = env.ctl(&["list", "--tree"]).expect_code(0).stdout.clone();
    let lines: Vec<&str> = tree.lines().collect();
    let parent_line = lines
        .iter()
        .position(|l| l.starts_with(&parent[..8]))
        .unwrap();
    let below: Vec<&&str> = lines[parent_line + 1..].iter().take(2).collect();
    for (line, id) in below.iter().zip([&quick_id, &slow_id]) {
        assert!(line.contains(&id[..8]) && line.contains("fork"), "{tree}");
        assert!(line.starts_with("├─ ") || line.starts_with("└─ "), "{tree}");
    }

    // Reported once, with its report.
    let text = all_text(&env.transcript(&parent));
    assert_eq!(
        text.matches(&format!("<task-id>{quick_id}</task-id>"))
            .count(),
        1
    );
    assert!(text.contains("quick done"));

    // Attached: its history (the inherited conversation, its own message
    // and its answer) and its end.
    let out = env.ctl(&["attach", &quick_id, "--json", "--from", "0"]);
    out.expect_code(0);
    let events: Vec<Value> = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let entries: Vec<&Value> = events.iter().filter(|e| e["type"] == "entry").collect();
    assert!(text_of(&entries[entries.len() - 2]["entry"]["content"]).contains("FORK-QUICK"));
    assert_eq!(
        text_of(&entries.last().unwrap()["entry"]["content"]),
        "Scope: quick\nResult: quick done"
    );

    // Messaged: revived with its whole context.
    env.ctl(&["send", &quick_id, "FOLLOW-UP please", "--wait"])
        .expect_code(0);
    // The revived fork ended again: its parent hears of that end once too.
    wait_until("the second report", Duration::from_secs(10), || {
        all_text(&env.transcript(&parent))
            .matches(&format!("<task-id>{quick_id}</task-id>"))
            .count()
            == 2
    });
    let follow = mock
        .requests()
        .into_iter()
        .rfind(|r| last_text(r).contains("FOLLOW-UP"))
        .unwrap();
    assert!(follow.body_text().contains(PLACEHOLDER));
    assert!(follow.cache.as_ref().unwrap().read > 0);

    // Stopped: the parent's stop (while it runs) cascades to its running
    // fork.
    env.ctl(&["send", &parent, "HOLD on"]).expect_code(0);
    wait_until("the parent runs again", Duration::from_secs(10), || {
        env.show(&parent)["status"] == "running"
    });
    env.ctl(&["stop", &parent]).expect_code(0);
    wait_until(
        "the slow fork is cancelled",
        Duration::from_secs(10),
        || env.show(&slow_id)["status"] == "cancelled",
    );
}

#[test]
fn a_person_forks_an_idle_agent_after_a_restart_and_a_running_one() {
    let mock = MockServer::start();
    let env = world(&mock);
    let daemon = env.start_daemon();
    mock.when(
        |r| is_fork_of(r, "TRY-B"),
        Reply::text("Scope: B\nResult: B works"),
    );
    mock.when(
        |r| is_fork_of(r, "PEEK"),
        Reply::text("Scope: peek\nResult: seen"),
    );
    mock.when(
        |r| prompt_of(r).contains("IDLE") && last_text(r).contains("LIST-NOW"),
        Reply::tool("toolu_list", "ListAgents", serde_json::json!({})),
    );
    mock.when(
        |r| prompt_of(r).contains("IDLE") && r.body_text().contains("toolu_list"),
        Reply::text("listed"),
    );
    mock.when(
        |r| prompt_of(r).contains("IDLE"),
        Reply::text("approach A is done"),
    );
    mock.when(
        |r| prompt_of(r).contains("BUSY"),
        Reply::Message(MockMessage::text("busy").delay_start(Duration::from_secs(120))),
    );
    let idle = run_bg(&env, "idle", "IDLE try approach A");
    env.ctl(&["wait", &idle]).expect_code(0);
    drop(daemon);
    let _daemon = env.start_daemon();

    // From before the restart, in the foreground: followed to its end.
    let out = env.ctl(&["fork", "idle", "TRY-B instead", "--name", "try-b"]);
    out.expect_code(0);
    assert!(out.stdout.contains("B works"), "{}", out.stdout);
    let idle_req = mock
        .requests()
        .into_iter()
        .find(|r| prompt_of(r).contains("IDLE") && !last_text(r).contains(TAG))
        .unwrap();
    let fork_req = first_request_of(&mock, "TRY-B");
    // The directive follows the parent's history: its request, its answer.
    let parent_body = stripped(&idle_req);
    assert!(stripped(&fork_req).starts_with(&parent_body[..parent_body.len() - 2]));
    let msgs = fork_req.json["messages"].as_array().unwrap();
    assert_eq!(msgs.len(), 3);
    assert_eq!(text_of(&msgs[1]["content"]), "approach A is done");
    assert_eq!(msgs[2]["content"].as_array().unwrap().len(), 1);
    assert_eq!(
        fork_req.cache.as_ref().unwrap().read,
        prompt_tokens(&idle_req)
    );
    // A person's fork is not reported to the parent, which stays idle.
    let b = env.show("try-b");
    assert_eq!(b["subagent_type"], "fork");
    assert_eq!(b["parent_id"], idle.as_str());
    let idle_rec = env.show("idle");
    assert_eq!(idle_rec["status"], "completed");
    assert!(!all_text(&env.transcript("idle")).contains(NOTE));
    // Nor is it among the agents the parent may list, message or stop.
    env.ctl(&["send", "idle", "LIST-NOW please", "--wait"])
        .expect_code(0);
    let listed = mock
        .requests()
        .into_iter()
        .find(|r| r.body_text().contains("toolu_list") && n_messages(r) == 5)
        .unwrap();
    assert_eq!(
        last_text(&listed),
        "No subagents or sibling agents.",
        "a person's fork is not the parent's to address"
    );

    // A running agent, mid-request: the directive follows what it sent.
    let busy = run_bg(&env, "busy", "BUSY work");
    wait_until(
        "the busy agent asks the model",
        Duration::from_secs(10),
        || {
            mock.requests()
                .iter()
                .any(|r| prompt_of(r).contains("BUSY"))
        },
    );
    let peek = env
        .ctl(&["fork", &busy, "PEEK at it", "--background"])
        .expect_code(0)
        .stdout
        .trim()
        .to_string();
    env.ctl(&["wait", &peek]).expect_code(0);
    let busy_req = mock
        .requests()
        .into_iter()
        .find(|r| prompt_of(r).contains("BUSY") && !last_text(r).contains(TAG))
        .unwrap();
    let peek_req = first_request_of(&mock, "PEEK");
    let busy_body = stripped(&busy_req);
    assert!(stripped(&peek_req).starts_with(&busy_body[..busy_body.len() - 2]));
    assert_eq!(n_messages(&peek_req), 2);
    env.ctl(&["stop", &busy]).expect_code(0);
}
