//! Compaction (DESIGN §17) end to end: a mock model that enforces a
//! context window and answers summary requests; the real daemon compacts
//! reactively (the provider says "prompt is too long"), proactively (before
//! `compact_at` of a configured window), by hand (`agentctl compact`), and
//! across a SIGKILL in the middle of a compaction. Forks and revivals after
//! a boundary send what the agent would send now.

#![allow(clippy::unwrap_used)] // Tests: a panic is the failure report.

use std::time::Duration;

use agentd_e2e::compacting::{
    DONE_MARK, FINISHED, SUMMARY_PREAMBLE, is_summary_request, steps_run, steps_workload,
};
use agentd_e2e::mock::{
    Gate, MODEL, MockMessage, MockServer, RecordedRequest, Reply, last_text, text_of,
};
use agentd_e2e::{Env, wait_until};
use serde_json::Value;

/// Tokens the mock's window holds in these tests (the mock counts four
/// bytes a token, as the daemon estimates).
const WINDOW: u64 = 9_000;

fn boundaries(env: &Env, id: &str) -> Vec<Value> {
    env.transcript(id)
        .into_iter()
        .filter(|e| e.get("compact_boundary").is_some())
        .collect()
}

fn first_text(r: &RecordedRequest) -> String {
    text_of(&r.messages()[0]["content"])
}

fn wait_completed(env: &Env, id: &str) -> Value {
    env.wait_for_agent(id, "completed", |a| {
        matches!(a["status"].as_str(), Some("completed" | "failed"))
    })
}

#[test]
fn a_conversation_the_provider_refuses_as_too_long_is_compacted_and_the_task_finishes() {
    let mock = MockServer::start();
    mock.set_context_window(Some(WINDOW));
    steps_workload(&mock, 12, 4_000, Duration::ZERO);
    let env = Env::with_mock(&mock);
    let _daemon = env.start_daemon();
    let id = env.run_background(MODEL, "long", "run the twelve steps");
    let agent = wait_completed(&env, &id);
    assert_eq!(agent["status"], "completed", "{agent}");
    assert_eq!(agent["result"], FINISHED);
    assert_eq!(
        steps_run(&env.project()),
        (1..=12).collect::<Vec<_>>(),
        "every step ran once, in order"
    );
    let requests = mock.requests();
    let refused: Vec<&RecordedRequest> = requests
        .iter()
        .filter(|r| r.cache.is_none() && !is_summary_request(r))
        .collect();
    assert!(!refused.is_empty(), "the window was reached");
    let bounds = boundaries(&env, &id);
    assert!(!bounds.is_empty());
    for b in &bounds {
        assert_eq!(b["compact_boundary"]["trigger"], "overflow", "{b}");
        assert_eq!(b["role"], "system");
    }
    // The summary request is the refused request plus one text block: the
    // same system and tools bytes, the same messages before the last.
    let first_refused = refused[0];
    let summary = requests
        .iter()
        .find(|r| r.index > first_refused.index && is_summary_request(r))
        .unwrap();
    assert_eq!(summary.json["system"], first_refused.json["system"]);
    assert_eq!(summary.json["tools"], first_refused.json["tools"]);
    let n = first_refused.messages().len();
    assert_eq!(
        summary.messages().len(),
        n,
        "the ask joins the last user message"
    );
    assert_eq!(
        summary.messages()[..n - 1],
        first_refused.messages()[..n - 1]
    );
    // The next request starts from the summary.
    let after = requests
        .iter()
        .find(|r| r.index > summary.index && !is_summary_request(r))
        .unwrap();
    assert!(first_text(after).starts_with(SUMMARY_PREAMBLE));
    assert!(first_text(after).contains(DONE_MARK));
    assert_eq!(after.json["system"], first_refused.json["system"]);
    // Counted and billed: show and usage know.
    let shown = env.show(&id);
    assert_eq!(shown["compactions"].as_u64().unwrap(), bounds.len() as u64);
    let usage = env.ctl(&["usage", &id, "--json"]).expect_code(0).json();
    assert_eq!(usage["compactions"].as_u64().unwrap(), bounds.len() as u64);
    assert_eq!(
        usage["requests"].as_u64().unwrap(),
        shown["turns"].as_u64().unwrap() + bounds.len() as u64
    );
}

#[test]
fn a_configured_window_is_compacted_before_a_request_would_pass_compact_at() {
    let mock = MockServer::start();
    mock.set_context_window(Some(WINDOW));
    steps_workload(&mock, 12, 4_000, Duration::ZERO);
    let env = Env::with_mock(&mock);
    env.write_config(&format!(
        "[models.\"{MODEL}\"]\ncontext_window = {WINDOW}\ncompact_at = 0.8\n"
    ));
    let _daemon = env.start_daemon();
    let id = env.run_background(MODEL, "steady", "run the twelve steps");
    let agent = wait_completed(&env, &id);
    assert_eq!(agent["status"], "completed", "{agent}");
    assert_eq!(steps_run(&env.project()), (1..=12).collect::<Vec<_>>());
    let requests = mock.requests();
    assert!(
        requests.iter().all(|r| r.cache.is_some()),
        "no request was refused: compaction came first"
    );
    let bounds = boundaries(&env, &id);
    assert!(!bounds.is_empty());
    assert!(
        bounds
            .iter()
            .all(|b| b["compact_boundary"]["trigger"] == "auto")
    );
    // The summary request reads its prefix from the prompt cache.
    let summary = requests.iter().find(|r| is_summary_request(r)).unwrap();
    let cache = summary.cache.as_ref().unwrap();
    assert!(
        cache.read > 0,
        "the summary request's prefix was cached: {cache:?}"
    );
    // `log` shows the whole history, the boundary marked.
    let log = env.ctl(&["log", &id]);
    log.expect_code(0);
    assert!(
        log.stdout.contains("context compacted (auto)"),
        "{}",
        log.stdout
    );
    assert!(env.transcript(&id).len() > bounds.len() + 12);
}

#[test]
fn an_idle_agent_is_compacted_by_hand_and_a_message_then_starts_from_the_summary() {
    let mock = MockServer::start();
    let env = Env::with_mock(&mock);
    let _daemon = env.start_daemon();
    mock.enqueue(Reply::text("first answer"));
    let id = env.run_background(MODEL, "idle", "remember the word PELICAN");
    wait_completed(&env, &id);
    mock.when(
        is_summary_request,
        Reply::text("The user asked to remember PELICAN."),
    );
    let out = env.ctl(&["compact", &id, "--instructions", "keep the bird", "--show"]);
    out.expect_code(0);
    assert!(out.stdout.contains("compacted"), "{}", out.stdout);
    assert!(out.stdout.contains("remember PELICAN"), "{}", out.stdout);
    let summary = mock
        .requests()
        .into_iter()
        .find(is_summary_request)
        .unwrap();
    assert!(last_text(&summary).contains("keep the bird"));
    let shown = env.show(&id);
    assert_eq!(shown["status"], "completed", "it stays as it was");
    assert_eq!(shown["result"], "first answer");
    assert_eq!(shown["compactions"], 1);
    let b = &boundaries(&env, &id)[0]["compact_boundary"];
    assert_eq!(b["trigger"], "manual");
    assert_eq!(b["covers_through_seq"], 1);

    mock.enqueue(Reply::text("PELICAN"));
    env.ctl(&["send", &id, "which word?"]).expect_code(0);
    wait_until("the revival answers", Duration::from_secs(20), || {
        env.show(&id)["result"] == "PELICAN"
    });
    let last = mock.requests().pop().unwrap();
    let messages = last.messages();
    assert_eq!(messages.len(), 2, "the summary, then the message");
    assert!(text_of(&messages[0]["content"]).starts_with(SUMMARY_PREAMBLE));
    assert!(text_of(&messages[0]["content"]).contains("remember PELICAN"));
    assert_eq!(text_of(&messages[1]["content"]), "which word?");

    // A fork now inherits exactly what the agent would send now.
    mock.enqueue(Reply::text("Scope: fork\nResult: ok"));
    let fork = env.ctl(&["fork", "--background", &id, "check the word"]);
    fork.expect_code(0);
    let fork_id = fork.stdout.split_whitespace().next().unwrap().to_string();
    wait_completed(&env, &fork_id);
    let fork_request = mock.requests().pop().unwrap();
    assert_eq!(fork_request.json["system"], last.json["system"]);
    assert_eq!(fork_request.json["tools"], last.json["tools"]);
    assert_eq!(
        fork_request.messages()[0],
        messages[0],
        "the same summary bytes"
    );
    assert_eq!(fork_request.messages()[1], messages[1]);

    // Nothing to compact for: a failed agent, an unknown one.
    let missing = env.ctl(&["compact", "nosuchagent"]);
    assert_ne!(missing.code, 0);
}

#[test]
fn a_daemon_killed_during_compaction_leaves_no_half_boundary_and_compacts_again() {
    let mock = MockServer::start();
    mock.set_context_window(Some(WINDOW));
    // The summary takes long enough to kill the daemon while it is asked.
    steps_workload(&mock, 12, 4_000, Duration::from_secs(3));
    let env = Env::with_mock(&mock);
    let daemon = env.start_daemon();
    let id = env.run_background(MODEL, "killed", "run the twelve steps");
    wait_until("a summary is asked for", Duration::from_secs(30), || {
        mock.requests().iter().any(is_summary_request)
    });
    daemon.kill9();
    let _daemon = env.start_daemon();
    let agent = wait_completed(&env, &id);
    assert_eq!(agent["status"], "completed", "{agent}");
    assert_eq!(steps_run(&env.project()), (1..=12).collect::<Vec<_>>());
    let summaries = mock
        .requests()
        .iter()
        .filter(|r| is_summary_request(r))
        .count();
    let bounds = boundaries(&env, &id);
    assert!(
        summaries > bounds.len(),
        "the killed compaction was asked again: {summaries} summary requests, {} boundaries",
        bounds.len()
    );
    // Each boundary covers the entry just before it: none is half made.
    for b in &bounds {
        assert_eq!(
            b["compact_boundary"]["covers_through_seq"]
                .as_u64()
                .unwrap()
                + 1,
            b["seq"].as_u64().unwrap()
        );
        assert!(
            !b["compact_boundary"]["summary"]
                .as_str()
                .unwrap()
                .is_empty()
        );
    }
}

#[test]
fn concurrent_compactions_of_one_agent_share_one_and_every_call_answers_truly() {
    let mock = MockServer::start();
    let env = Env::with_mock(&mock);
    let _daemon = env.start_daemon();
    mock.enqueue(Reply::text("first answer"));
    let id = env.run_background(MODEL, "crowd", "remember the word PELICAN");
    wait_completed(&env, &id);
    // The summary is held until every call has been started, so they come
    // while the first one's compaction is under way.
    let gate = Gate::new();
    mock.when(
        is_summary_request,
        Reply::Message(MockMessage::text("The user asked to remember PELICAN.").held(&gate)),
    );
    let calls: Vec<std::process::Child> = (0..20)
        .map(|_| {
            env.ctl_command(&["--no-autostart", "compact", &id])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    mock.wait_for_requests(2, Duration::from_secs(60));
    gate.open();
    let mut shared = 0;
    for call in calls {
        let out = call.wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        match out.status.code() {
            Some(0) => {
                assert!(stdout.contains("compacted") && stdout.contains("(compaction 1)"));
                shared += 1;
            }
            // Came after the compaction was made: told so, truly.
            Some(1) => assert!(
                stderr.contains("already compacted: it holds only a summary"),
                "{stderr}"
            ),
            code => panic!("{code:?}: {stdout} {stderr}"),
        }
    }
    assert!(shared >= 1);
    let summaries = mock
        .requests()
        .into_iter()
        .filter(is_summary_request)
        .count();
    assert_eq!(summaries, 1, "one compaction for all the calls");
    assert_eq!(boundaries(&env, &id).len(), 1);
    let shown = env.show(&id);
    assert_eq!(shown["compactions"], 1);
    assert_eq!(shown["status"], "completed");
    assert_eq!(shown["result"], "first answer");
}

/// Steps that alternate a Read of a 4,800-token file and a short Bash: a
/// request after a Read result is ~4,800 tokens longer than the one before.
fn read_and_bash_workload(mock: &MockServer, dir: &std::path::Path, n: u32) {
    for k in (1..=n).step_by(2) {
        let line = format!("{:079}\n", k);
        std::fs::write(dir.join(format!("STEP-{k}-OF-{n}.txt")), line.repeat(240)).unwrap();
    }
    let dir = dir.to_path_buf();
    mock.respond_with(move |r| {
        let seen = agentd_e2e::compacting::steps_seen(r);
        if is_summary_request(r) {
            return Some(Reply::text(format!(
                "Task: run steps 1..{n}. {DONE_MARK}{seen}. Next: step {}.",
                seen + 1
            )));
        }
        if seen >= n {
            return Some(Reply::text(FINISHED));
        }
        let k = seen + 1;
        let call = if k % 2 == 1 {
            let path = dir.join(format!("STEP-{k}-OF-{n}.txt"));
            MockMessage::tool(
                format!("toolu_step{k}"),
                "Read",
                serde_json::json!({"file_path": path.display().to_string()}),
            )
        } else {
            MockMessage::tool(
                format!("toolu_step{k}"),
                "Bash",
                serde_json::json!({"command": agentd_e2e::compacting::step_command(k, n, 8)}),
            )
        };
        Some(Reply::Message(call))
    });
}

#[test]
fn a_large_tool_result_is_counted_before_the_request_it_joins_is_sent() {
    const SMALL: u64 = 12_000;
    let mock = MockServer::start();
    mock.set_context_window(Some(SMALL));
    let env = Env::with_mock(&mock);
    read_and_bash_workload(&mock, &env.project(), 12);
    env.write_config(&format!("[models.\"{MODEL}\"]\ncontext_window = {SMALL}\n"));
    let _daemon = env.start_daemon();
    let id = env.run_background(MODEL, "reader", "run the twelve steps");
    let agent = wait_completed(&env, &id);
    assert_eq!(agent["status"], "completed", "{agent}");
    assert_eq!(agent["result"], FINISHED);
    let requests = mock.requests();
    let refused: Vec<u64> = requests
        .iter()
        .filter(|r| r.cache.is_none())
        .map(|r| r.index as u64)
        .collect();
    assert!(
        refused.is_empty(),
        "requests {refused:?} of {} were over the window: compaction must come first",
        requests.len()
    );
    assert!(
        boundaries(&env, &id)
            .iter()
            .all(|b| b["compact_boundary"]["trigger"] == "auto")
    );
    assert!(!boundaries(&env, &id).is_empty());
}
