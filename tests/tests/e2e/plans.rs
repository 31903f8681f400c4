//! Plans (DESIGN §17): an agent's `TodoWrite` calls keep its plan on its
//! record — printed by `run`, `show` and `list`, streamed to attachers,
//! watchers and editors, durable across a SIGKILL, untouched by a bad
//! call, and not inherited by a fork except as context. The real daemon
//! and agentctl against the mock model, asserting on what the model was
//! sent and what a person sees.

#![allow(clippy::unwrap_used)] // Tests: a panic is the failure report.

use std::io::BufRead;
use std::time::Duration;

use agentd_e2e::forking::{is_fork_of, is_request_of_fork};
use agentd_e2e::mock::{Block, MODEL, MockMessage, MockServer, RecordedRequest, Reply, prompt_of};
use agentd_e2e::{Env, tool_results, wait_for_path};
use agentd_shared::proto as pb;
use futures::StreamExt;
use serde_json::{Value, json};

use super::acp;
use crate::acp::sdk::Sdk;

/// Claude Code's answer to a successful TodoWrite, which agentd gives too.
const DONE: &str = "Todos have been modified successfully. Ensure that you continue to use the \
todo list to track your progress. Please proceed with the current tasks if applicable";

fn todo(content: &str, status: &str, active: &str) -> Value {
    json!({"content": content, "status": status, "activeForm": active})
}

/// A first plan: three steps, none started.
fn first_plan() -> Value {
    json!({"todos": [
        todo("Read the code", "pending", "Reading the code"),
        todo("Fix the bug", "pending", "Fixing the bug"),
        todo("Run the tests", "pending", "Running the tests"),
    ]})
}

/// The same plan, one step done and the next in progress.
fn second_plan() -> Value {
    json!({"todos": [
        todo("Read the code", "completed", "Reading the code"),
        todo("Fix the bug", "in_progress", "Fixing the bug"),
        todo("Run the tests", "pending", "Running the tests"),
    ]})
}

const FIRST_BLOCK: &str =
    "Plan (0/3):\n  [ ] Read the code\n  [ ] Fix the bug\n  [ ] Run the tests\n";
const SECOND_BLOCK: &str =
    "Plan (1/3):\n  [x] Read the code\n  [>] Fixing the bug\n  [ ] Run the tests\n";

/// The last tool result of the request: (is_error, text).
fn last_result(r: &RecordedRequest) -> (bool, String) {
    tool_results(r.messages()).pop().expect("a tool result")
}

/// A plan on the wire, as (content, status, active_form) for comparing
/// with the JSON a model sent.
fn wire_plan(items: &[pb::PlanItem]) -> Value {
    Value::Array(
        items
            .iter()
            .map(|i| {
                let status = match pb::PlanStatus::try_from(i.status).unwrap() {
                    pb::PlanStatus::Pending => "pending",
                    pb::PlanStatus::InProgress => "in_progress",
                    pb::PlanStatus::Completed => "completed",
                    pb::PlanStatus::Unspecified => "unspecified",
                };
                todo(&i.content, status, &i.active_form)
            })
            .collect(),
    )
}

#[test]
fn todo_write_keeps_a_plan_that_run_show_and_list_print() {
    let mock = MockServer::start();
    let env = Env::with_mock(&mock);
    let _daemon = env.start_daemon();
    mock.enqueue_all([
        Reply::tool("t1", "TodoWrite", first_plan()),
        Reply::tool("t2", "TodoWrite", second_plan()),
        Reply::text("All planned."),
    ]);
    let out = env.ctl(&[
        "run",
        "--model",
        MODEL,
        "--name",
        "planner",
        "PLAN the work",
    ]);
    out.expect_code(0);
    // Each change as it happens, on stderr: stdout keeps only the answer.
    assert_eq!(out.stdout.trim(), "All planned.");
    let first = out.stderr.find(FIRST_BLOCK).expect(&out.stderr);
    let second = out.stderr.find(SECOND_BLOCK).expect(&out.stderr);
    assert!(first < second, "{}", out.stderr);

    // New agents are given the tool; each call is answered as Claude
    // Code answers it.
    let requests = mock.requests();
    assert_eq!(requests.len(), 3);
    assert!(requests[0].tool_names().iter().any(|t| t == "TodoWrite"));
    assert_eq!(last_result(&requests[1]), (false, DONE.to_string()));
    assert_eq!(last_result(&requests[2]), (false, DONE.to_string()));

    let shown = env.show("planner");
    assert_eq!(shown["plan"], second_plan()["todos"], "{shown}");
    let text = env.ctl(&["show", "planner"]).expect_code(0).stdout.clone();
    assert!(text.contains(SECOND_BLOCK), "{text}");

    // `list`: progress in a PLAN column, "-" for an agent without a plan.
    mock.enqueue(Reply::text("hi"));
    env.ctl(&["run", "--model", MODEL, "--name", "noplan", "say hi"])
        .expect_code(0);
    let table = env.ctl(&["list"]).expect_code(0).stdout.clone();
    let header = table.lines().next().unwrap();
    let col = header.find("PLAN").expect(header);
    let row = |name: &str| table.lines().find(|l| l.contains(name)).unwrap();
    assert_eq!(&row("planner")[col..col + 4], "1/3 ", "{table}");
    assert_eq!(&row("noplan")[col..col + 2], "- ", "{table}");
    let listed = env.agents();
    let by_name = |name: &str| listed.iter().find(|a| a["name"] == name).unwrap();
    assert_eq!(by_name("planner")["plan"], second_plan()["todos"]);
    assert_eq!(by_name("noplan")["plan"], json!([]));
}

#[test]
fn attach_and_events_see_every_plan_change_as_it_happens() {
    let mock = MockServer::start();
    let env = Env::with_mock(&mock);
    let _daemon = env.start_daemon();
    // The agent waits for the test's go before it plans, so the attacher
    // and the watcher are there for both changes.
    mock.enqueue_all([
        Reply::tool(
            "g",
            "Bash",
            json!({"command": "while [ ! -e go ]; do sleep 0.05; done"}),
        ),
        Reply::tool("t1", "TodoWrite", first_plan()),
        Reply::tool("t2", "TodoWrite", second_plan()),
        Reply::text("All planned."),
    ]);
    let mut events = env
        .ctl_command(&["--no-autostart", "events", "--json"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let (lines_tx, lines) = std::sync::mpsc::channel::<Value>();
    let stdout = events.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines() {
            let _ = lines_tx.send(serde_json::from_str(&line.unwrap()).unwrap());
        }
    });
    let go = env.project().join("go");
    let cwd = env.project().display().to_string();
    let (id, first_agent_plan, updates) = env.rpc(async |client| {
        let agent = client
            .create_agent(pb::CreateAgentRequest {
                prompt: "PLAN the work".into(),
                model: MODEL.into(),
                cwd,
                background: true,
                permission_mode: pb::PermissionMode::Bypass as i32,
                ..Default::default()
            })
            .await
            .unwrap()
            .into_inner();
        let start = agentd_e2e::attach_start(&agent.id, 0);
        let mut stream = client
            .attach(futures::stream::iter([start]).chain(futures::stream::pending()))
            .await
            .unwrap()
            .into_inner();
        let mut first_agent_plan = None;
        let mut updates = Vec::new();
        // Bounded: a stream that never says "completed" fails the test
        // with what it did say, instead of hanging it.
        let mut seen = Vec::new();
        loop {
            let ev = tokio::time::timeout(Duration::from_secs(60), stream.message())
                .await
                .unwrap_or_else(|_| panic!("no completion within 60 s; the attach said: {seen:?}"))
                .unwrap();
            let Some(ev) = ev else { break };
            seen.push(
                format!("{:?}", ev.event)
                    .chars()
                    .take(200)
                    .collect::<String>(),
            );
            match ev.event {
                // The attacher is there (its snapshot came); the watcher
                // too once it has shown the agent's creation (if it
                // subscribed after that, it still sees what follows). Then
                // the agent may go on: waiting for a status change instead
                // hung when the agent was running before the attach began.
                Some(pb::attach_event::Event::Agent(a)) => {
                    // A later snapshot (after the stream fell behind) can
                    // carry the end in place of a status event.
                    let done = a.status == pb::AgentStatus::Completed as i32;
                    if first_agent_plan.is_none() {
                        first_agent_plan = Some(a.plan);
                        let _ = lines.recv_timeout(Duration::from_secs(10));
                        std::fs::write(&go, "").unwrap();
                    }
                    if done {
                        break;
                    }
                }
                Some(pb::attach_event::Event::Status(s))
                    if s.status == pb::AgentStatus::Completed as i32 =>
                {
                    break;
                }
                Some(pb::attach_event::Event::Plan(p)) => updates.push(wire_plan(&p.items)),
                _ => {}
            }
        }
        (agent.id, first_agent_plan, updates)
    });
    assert_eq!(
        first_agent_plan,
        Some(Vec::new()),
        "no plan before the calls"
    );
    assert_eq!(
        updates,
        [
            first_plan()["todos"].clone(),
            second_plan()["todos"].clone()
        ]
    );

    // The watcher saw the same two changes, as the whole plan each time.
    let mut plans = Vec::new();
    while plans.len() < 2 {
        let e = lines
            .recv_timeout(Duration::from_secs(20))
            .expect("agentctl events shows both changes");
        if e["type"] == "plan" && e["agent_id"] == id.as_str() {
            plans.push(e["plan"].clone());
        }
    }
    assert_eq!(
        plans,
        [
            first_plan()["todos"].clone(),
            second_plan()["todos"].clone()
        ]
    );
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(events.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let status = agentd_e2e::wait_child(&mut events, Duration::from_secs(20))
        .expect("agentctl events ends on SIGINT");
    assert!(status.success(), "{status:?}");
    reader.join().unwrap();

    // Attaching later: the plan comes with the agent, then no change.
    let out = env.ctl(&["attach", &id, "--json", "--from", "0"]);
    out.expect_code(0);
    let attached: Vec<Value> = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(attached[0]["type"], "agent");
    assert_eq!(attached[0]["agent"]["plan"], second_plan()["todos"]);
    assert!(attached.iter().all(|e| e["type"] != "plan"), "{attached:?}");
}

#[test]
fn the_plan_is_durable_before_its_result_and_survives_sigkill() {
    let mock = MockServer::start();
    let env = Env::with_mock(&mock);
    let daemon = env.start_daemon();
    // One round: the plan, then a command the daemon is killed during.
    mock.enqueue(Reply::Message(
        MockMessage::tool("t1", "TodoWrite", second_plan())
            .with(Block::bash("t2", "touch started; sleep 30")),
    ));
    mock.enqueue(Reply::text("Picked up after the crash."));
    let id = env.start_agent(&["--model", MODEL, "--name", "crashy", "PLAN then work"]);
    wait_for_path(&env.project().join("started"));
    // On disk while the call has no result yet (the round's results are
    // written after its last call).
    let shown = env.show(&id);
    assert_eq!(shown["plan"], second_plan()["todos"], "{shown}");
    assert_eq!(shown["transcript_len"], 2, "prompt and the calls only");
    daemon.kill9();

    let daemon = env.start_daemon();
    assert_eq!(env.show(&id)["plan"], second_plan()["todos"]);
    env.ctl(&["wait", &id]).expect_code(0);
    // The call cut off by the crash was run again (the same list: the
    // plan is unchanged) and answered as before; the command that may
    // have run is reported as interrupted, not run again.
    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    let results = tool_results(requests[1].messages());
    assert_eq!(results.len(), 2, "{results:?}");
    assert_eq!(results[0], (false, DONE.to_string()));
    assert!(
        results[1].0 && results[1].1.contains("Interrupted"),
        "{results:?}"
    );
    assert_eq!(env.show(&id)["plan"], second_plan()["todos"]);

    // And once more, after the agent ended.
    daemon.kill9();
    let _daemon = env.start_daemon();
    let after = env.show(&id);
    assert_eq!(after["status"], "completed");
    assert_eq!(after["plan"], second_plan()["todos"]);
}

#[test]
fn a_bad_todo_write_is_a_tool_error_and_changes_nothing() {
    let mock = MockServer::start();
    let env = Env::with_mock(&mock);
    let _daemon = env.start_daemon();
    let too_many: Vec<Value> = (0..101)
        .map(|i| todo(&format!("step {i}"), "pending", "stepping"))
        .collect();
    mock.enqueue_all([
        Reply::tool("t1", "TodoWrite", first_plan()),
        Reply::tool(
            "t2",
            "TodoWrite",
            json!({"todos": [
                todo("Read the code", "completed", "Reading the code"),
                todo("Fix the bug", "done", "Fixing the bug"),
            ]}),
        ),
        Reply::tool("t3", "TodoWrite", json!({"todos": too_many})),
        Reply::text("Kept the first plan."),
    ]);
    // In plan mode: a plan touches nothing but the agent, so it is allowed.
    let out = env.ctl(&[
        "run",
        "--permission-mode",
        "plan",
        "--model",
        MODEL,
        "--name",
        "strict",
        "PLAN carefully",
    ]);
    out.expect_code(0);
    let requests = mock.requests();
    assert_eq!(requests.len(), 4);
    assert_eq!(last_result(&requests[1]), (false, DONE.to_string()));
    let (is_error, why) = last_result(&requests[2]);
    assert!(is_error, "{why}");
    assert!(why.contains("todos[1].status is \"done\""), "{why}");
    assert!(why.contains("pending, in_progress, completed"), "{why}");
    assert!(why.contains("Nothing was changed"), "{why}");
    let (is_error, why) = last_result(&requests[3]);
    assert!(
        is_error && why.contains("101 items") && why.contains("at most 100"),
        "{why}"
    );
    assert_eq!(env.show("strict")["plan"], first_plan()["todos"]);
    assert!(out.stderr.contains(FIRST_BLOCK), "{}", out.stderr);
    assert_eq!(out.stderr.matches("Plan (").count(), 1, "{}", out.stderr);
}

/// Whether `r` carries a result for the call `tool_use_id`.
fn answers(r: &RecordedRequest, tool_use_id: &str) -> bool {
    r.messages()
        .iter()
        .flat_map(|m| m["content"].as_array().into_iter().flatten())
        .any(|b| b["type"] == "tool_result" && b["tool_use_id"] == tool_use_id)
}

/// Whether `r` carries the parent's TodoWrite call and its answer.
fn carries_the_parents_todo_write(r: &RecordedRequest) -> bool {
    let blocks: Vec<&Value> = r
        .messages()
        .iter()
        .flat_map(|m| m["content"].as_array().into_iter().flatten())
        .collect();
    let called = blocks.iter().any(|b| {
        b["type"] == "tool_use" && b["name"] == "TodoWrite" && b["input"] == second_plan()
    });
    called && tool_results(r.messages()).contains(&(false, DONE.to_string()))
}

#[test]
fn a_fork_sees_its_parents_plan_in_context_but_starts_without_one() {
    let mock = MockServer::start();
    let env = Env::with_mock(&mock);
    let _daemon = env.start_daemon();
    // The fork allowed only Read tries to plan; its second request gets
    // the refusal. Rules are asked in order: most particular first.
    mock.when(
        |r| is_request_of_fork(r, "TRY-TODO") && answers(r, "f1"),
        Reply::text("Scope: todo\nResult: refused"),
    );
    mock.when(
        |r| is_fork_of(r, "TRY-TODO"),
        Reply::tool("f1", "TodoWrite", first_plan()),
    );
    mock.when(
        |r| is_fork_of(r, "CHECK-PLAN"),
        Reply::text("Scope: check\nResult: the plan is in my context"),
    );
    mock.when(
        |r| prompt_of(r).contains("PARENT") && !answers(r, "t1"),
        Reply::tool("t1", "TodoWrite", second_plan()),
    );
    mock.when(|r| prompt_of(r).contains("PARENT"), Reply::text("Planned."));
    env.ctl(&[
        "run",
        "--model",
        MODEL,
        "--name",
        "parent",
        "PARENT plan it",
    ])
    .expect_code(0);

    let out = env.ctl(&[
        "fork",
        "parent",
        "CHECK-PLAN of the parent",
        "--name",
        "checker",
    ]);
    out.expect_code(0);
    let fork_request = mock
        .requests()
        .into_iter()
        .find(|r| is_fork_of(r, "CHECK-PLAN"))
        .unwrap();
    assert!(carries_the_parents_todo_write(&fork_request));
    let checker = env.show("checker");
    assert_eq!(checker["subagent_type"], "fork");
    assert_eq!(checker["plan"], json!([]), "{checker}");

    // A fork's tool allowlist still applies to TodoWrite.
    let out = env.ctl(&[
        "fork",
        "parent",
        "TRY-TODO yourself",
        "--name",
        "reader",
        "--tools",
        "Read",
    ]);
    out.expect_code(0);
    let refused = mock
        .requests()
        .into_iter()
        .find(|r| is_request_of_fork(r, "TRY-TODO") && answers(r, "f1"))
        .unwrap();
    let results = tool_results(refused.messages());
    let (is_error, why) = results.last().unwrap();
    assert!(*is_error, "{why}");
    assert!(
        why.contains("TodoWrite is not available to this agent; it may use: Read"),
        "{why}"
    );
    assert_eq!(env.show("reader")["plan"], json!([]));
    // Neither fork changed its parent's plan.
    assert_eq!(env.show("parent")["plan"], second_plan()["todos"]);
}

#[test]
fn an_editor_is_sent_the_plan_as_it_changes_and_when_it_loads_the_session_typescript() {
    an_editor_is_sent_the_plan(Sdk::TypeScript);
}

#[test]
fn an_editor_is_sent_the_plan_as_it_changes_and_when_it_loads_the_session_python() {
    an_editor_is_sent_the_plan(Sdk::Python);
}

/// The same checks through either ACP SDK (`acp_sdk`).
fn an_editor_is_sent_the_plan(sdk: Sdk) {
    sdk.setup();
    let mock = MockServer::start();
    let env = Env::with_mock(&mock);
    env.write_config("default_model = \"anthropic:claude-test\"\n");
    let _daemon = env.start_daemon();
    mock.enqueue_all([
        Reply::tool("t1", "TodoWrite", first_plan()),
        Reply::tool("t2", "TodoWrite", second_plan()),
        Reply::text("All planned."),
    ]);
    let cwd = env.project().display().to_string();
    let lines = sdk.run(&env, &["plan", &cwd]);
    let entries = |plan: &Value| -> Value {
        plan["todos"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| json!({"content": t["content"], "priority": "medium", "status": t["status"]}))
            .collect()
    };
    let plans = |updates: &Value| -> Vec<Value> {
        updates
            .as_array()
            .unwrap()
            .iter()
            .filter(|u| u["sessionUpdate"] == "plan")
            .map(|u| u["entries"].clone())
            .collect()
    };
    let prompt = acp::of_kind(&lines, "prompt")[0];
    assert_eq!(prompt["stopReason"], "end_turn");
    assert_eq!(
        plans(&prompt["updates"]),
        [entries(&first_plan()), entries(&second_plan())],
        "{}",
        prompt["updates"]
    );
    // Loading the session replays the history, then says where the plan is.
    let load = &acp::of_kind(&lines, "load")[0]["updates"];
    assert_eq!(plans(load), [entries(&second_plan())], "{load}");
    let last = load.as_array().unwrap().last().unwrap();
    assert_eq!(last["sessionUpdate"], "plan", "{load}");
    let id = acp::of_kind(&lines, "new")[0]["sessionId"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(env.show(&id)["plan"], second_plan()["todos"]);
    assert_eq!(mock.requests().len(), 3);
}
