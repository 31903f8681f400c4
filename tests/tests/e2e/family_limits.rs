//! Family limits (DESIGN §24) end to end: `max_children` queues a fan-out
//! (and the `Agent` call says so), a waiting foreground parent lends its
//! slot, `max_concurrent_requests` lets one request of the family out at a
//! time, and an agent type's `max_depth` and `budget_usd` hold for agents
//! of that type.

#![allow(clippy::unwrap_used)] // Tests: a panic is the failure report.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use agentd_e2e::mock::{
    Block, Gate, MODEL, MockMessage, MockServer, RecordedRequest, Reply, n_messages, prompt_of,
};
use agentd_e2e::{Env, tool_results};
use serde_json::json;

const LIMIT: Duration = Duration::from_secs(120);

/// Waits until the mock has received a request `pred` matches.
fn wait_for_request(mock: &MockServer, what: &str, pred: impl Fn(&RecordedRequest) -> bool) {
    let deadline = Instant::now() + LIMIT;
    while !mock.requests().iter().any(&pred) {
        assert!(Instant::now() < deadline, "no request came: {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Where the first request whose prompt holds `marker` came in the mock's
/// arrival order.
fn first_request_of(mock: &MockServer, marker: &str) -> usize {
    mock.requests()
        .iter()
        .position(|r| prompt_of(r).contains(marker))
        .unwrap_or_else(|| panic!("no request of {marker}"))
}

fn background_child(id: &str, name: &str) -> Block {
    Block::agent(
        id,
        json!({"description": name, "prompt": format!("{name} go"), "name": name, "run_in_background": true}),
    )
}

#[test]
fn a_fan_out_beyond_max_children_queues_says_so_and_starts_as_slots_free() {
    let mock = MockServer::start();
    let env = Env::with_mock(&mock);
    env.write_config("max_children = 1\n");
    let _daemon = env.start_daemon();
    let gate = Gate::new();
    mock.when(
        |r| prompt_of(r).contains("PARENT") && n_messages(r) == 1,
        Reply::Message(
            MockMessage::new()
                .with(background_child("a1", "CHILDONE"))
                .with(background_child("a2", "CHILDTWO"))
                .with(background_child("a3", "CHILDTHREE")),
        ),
    );
    mock.when(
        |r| prompt_of(r).contains("PARENT"),
        Reply::text("parent waits"),
    );
    mock.when(
        |r| prompt_of(r).contains("CHILDONE"),
        Reply::Message(MockMessage::text("one done").held(&gate)),
    );
    mock.when(
        |r| prompt_of(r).contains("CHILDTWO") || prompt_of(r).contains("CHILDTHREE"),
        Reply::text("done"),
    );
    let parent = env.start_agent(&["--model", MODEL, "PARENT go"]);
    wait_for_request(&mock, "the first child's", |r| {
        prompt_of(r).contains("CHILDONE")
    });
    wait_for_request(&mock, "the parent's with the Agent results", |r| {
        prompt_of(r).contains("PARENT") && n_messages(r) == 3
    });
    let second = mock
        .requests()
        .into_iter()
        .find(|r| prompt_of(r).contains("PARENT") && n_messages(r) == 3)
        .unwrap();
    let results = tool_results(second.messages());
    assert_eq!(results.len(), 3, "{results:?}");
    assert!(!results[0].1.contains("Queued"), "{}", results[0].1);
    for (is_error, text) in &results[1..] {
        assert!(!is_error, "{text}");
        assert!(
            text.contains("Queued") && text.contains("max_children = 1, from config.toml"),
            "{text}"
        );
    }
    // While the first child's request is out, the other two wait.
    for name in ["CHILDTWO", "CHILDTHREE"] {
        assert_eq!(env.show(name)["status"], "pending");
    }
    assert!(
        !mock
            .requests()
            .iter()
            .any(|r| prompt_of(r).contains("CHILDTWO") || prompt_of(r).contains("CHILDTHREE")),
        "a queued child sent nothing"
    );
    let at_open = mock.requests().len();
    gate.open();
    for name in ["CHILDONE", "CHILDTWO", "CHILDTHREE"] {
        env.wait_status(name, "completed", LIMIT);
    }
    assert!(first_request_of(&mock, "CHILDTWO") >= at_open);
    assert!(first_request_of(&mock, "CHILDTHREE") >= at_open);
    env.wait_status(&parent, "completed", LIMIT);
}

#[test]
fn a_foreground_parent_waiting_on_its_child_lends_its_family_slot() {
    let mock = MockServer::start();
    let env = Env::with_mock(&mock);
    env.write_config("max_children = 1\n");
    let _daemon = env.start_daemon();
    let foreground = |id: &str, prompt: &str| {
        Reply::Message(MockMessage::new().with(Block::agent(
            id,
            json!({"description": prompt, "prompt": prompt, "name": prompt.to_lowercase()}),
        )))
    };
    // The root's child (holding the family's one slot) waits on a child of
    // its own, which needs that slot too.
    mock.when(
        |r| prompt_of(r).contains("ROOT") && n_messages(r) == 1,
        foreground("r1", "MIDDLE"),
    );
    mock.when(
        |r| prompt_of(r).contains("MIDDLE") && n_messages(r) == 1,
        foreground("m1", "LEAF"),
    );
    mock.when(|r| prompt_of(r).contains("LEAF"), Reply::text("leaf done"));
    mock.when(
        |r| prompt_of(r).contains("MIDDLE"),
        Reply::text("middle done"),
    );
    mock.when(|r| prompt_of(r).contains("ROOT"), Reply::text("root done"));
    let root = env.start_agent(&["--model", MODEL, "ROOT go"]);
    let done = env.wait_status(&root, "completed", LIMIT);
    assert_eq!(done["result"], "root done", "{done}");
    assert_eq!(env.show("leaf")["status"], "completed");
}

#[test]
fn max_concurrent_requests_lets_one_request_of_the_family_out_at_a_time() {
    let mock = MockServer::start();
    let env = Env::with_mock(&mock);
    env.write_config("max_concurrent_requests = 1\n");
    let _daemon = env.start_daemon();
    let gate = Gate::new();
    mock.when(
        |r| prompt_of(r).contains("PARENT") && n_messages(r) == 1,
        Reply::Message(
            MockMessage::new()
                .with(background_child("a1", "KIDA"))
                .with(background_child("a2", "KIDB")),
        ),
    );
    mock.when(
        |r| prompt_of(r).contains("PARENT"),
        Reply::text("parent waits"),
    );
    // Whichever child asks first is held; the other must wait for it.
    let first_held = Arc::new(AtomicBool::new(false));
    let held = gate.clone();
    mock.respond_with(move |r| {
        let p = prompt_of(r);
        if !(p.contains("KIDA") || p.contains("KIDB")) {
            return None;
        }
        Some(if first_held.swap(true, Ordering::SeqCst) {
            Reply::text("kid done")
        } else {
            Reply::Message(MockMessage::text("kid done").held(&held))
        })
    });
    let parent = env.start_agent(&["--model", MODEL, "PARENT go"]);
    wait_for_request(&mock, "a child's", |r| {
        prompt_of(r).contains("KIDA") || prompt_of(r).contains("KIDB")
    });
    let first = if mock
        .requests()
        .iter()
        .any(|r| prompt_of(r).contains("KIDA"))
    {
        "KIDA"
    } else {
        "KIDB"
    };
    let other = if first == "KIDA" { "KIDB" } else { "KIDA" };
    let waiting = env.wait_for_agent(other, "its wait for a request slot", |a| {
        a["waiting_for"]
            .as_str()
            .is_some_and(|w| w.contains("max_concurrent_requests"))
    });
    assert_eq!(waiting["status"], "running", "{waiting}");
    assert!(
        !mock.requests().iter().any(|r| prompt_of(r).contains(other)),
        "the other child sent nothing while the first request was out"
    );
    let at_open = mock.requests().len();
    gate.open();
    for name in [first, other] {
        env.wait_status(name, "completed", LIMIT);
    }
    assert!(first_request_of(&mock, other) >= at_open);
    env.wait_status(&parent, "completed", LIMIT);
}

#[test]
fn an_agent_types_max_depth_and_budget_hold_for_agents_of_that_type() {
    let mock = MockServer::start();
    let env = Env::with_mock(&mock);
    let types = env.home().join(".config/agentd/agents");
    std::fs::create_dir_all(&types).unwrap();
    std::fs::write(
        types.join("lead.md"),
        "---\nname: lead\ndescription: leads\nmax_depth: 0\nbudget_usd: 5\n---\nYou lead.\n",
    )
    .unwrap();
    let _daemon = env.start_daemon();
    mock.when(
        |r| prompt_of(r).contains("BOSS") && n_messages(r) == 1,
        Reply::Message(MockMessage::new().with(Block::agent(
            "b1",
            json!({"description": "lead", "prompt": "LEAD go", "name": "lead", "subagent_type": "lead"}),
        ))),
    );
    mock.when(|r| prompt_of(r).contains("BOSS"), Reply::text("boss done"));
    mock.when(
        |r| prompt_of(r).contains("LEAD") && n_messages(r) == 1,
        Reply::Message(MockMessage::new().with(Block::agent(
            "l1",
            json!({"description": "helper", "prompt": "HELPER go"}),
        ))),
    );
    mock.when(|r| prompt_of(r).contains("LEAD"), Reply::text("lead done"));
    // Priced: a USD budget on an unpriced model stops at once (fail closed).
    let boss = env.start_agent(&["--model", "anthropic:claude-sonnet-4-5", "BOSS go"]);
    env.wait_status(&boss, "completed", LIMIT);
    let lead = env.show("lead");
    assert_eq!(lead["budget"]["usd"], 5.0, "{lead}");
    let last = mock
        .requests()
        .into_iter()
        .filter(|r| prompt_of(r).contains("LEAD"))
        .max_by_key(n_messages)
        .unwrap();
    let results = tool_results(last.messages());
    let (is_error, text) = &results[0];
    assert!(*is_error, "{text}");
    assert!(
        text.contains("at most 0 levels below you (max_depth, from agent")
            && text.contains("'s type)"),
        "{text}"
    );
    assert!(
        !mock
            .requests()
            .iter()
            .any(|r| prompt_of(r).contains("HELPER")),
        "no helper was made"
    );
}
