//! Supervision: subagents, notifications, send/revive, pause, cancel
//! cascades, rm, background release and resume after a restart — the real
//! daemon against the mock model, routed by rules on each request's content.

#![allow(clippy::unwrap_used)] // Tests: a panic is the failure report.

use std::time::{Duration, Instant};

use agentd_e2e::mock::{
    Block, MODEL, MockMessage, MockServer, Reply, last_text, n_messages, prompt_of, text_of,
};
use agentd_e2e::parent::{self, NOTE, agent_call};
use agentd_e2e::{Env, FAST_RETRY, all_text, wait_until};
use serde_json::{Value, json};

fn world(mock: &MockServer, config: &str) -> Env {
    let env = Env::with_mock(mock);
    env.write_config(&format!("{config}{FAST_RETRY}"));
    env
}

fn run_bg(env: &Env, name: &str, prompt: &str) -> String {
    env.run_background(MODEL, name, prompt)
}

#[test]
fn a_foreground_subagent_answers_its_parents_agent_call() {
    let mock = MockServer::start();
    let env = world(&mock, "");
    let _daemon = env.start_daemon();
    mock.when(
        |r| prompt_of(r).contains("CHILD-1"),
        Reply::Message(MockMessage::text("child found 3 files")),
    );
    parent::answers(
        &mock,
        MockMessage::text("Delegating.").with(agent_call("CHILD-1 look around", false)),
        MockMessage::text("parent done"),
    );

    let out = env.ctl(&["run", "--model", MODEL, "--name", "boss", "PARENT go"]);
    out.expect_code(0);
    assert!(out.stdout.contains("parent done"), "{}", out.stdout);
    let parent_second = parent::request(&mock, 3);
    let result = &parent_second.json["messages"][2]["content"][0];
    assert_eq!(result["type"], "tool_result");
    assert!(
        text_of(&result["content"]).contains("child found 3 files"),
        "{result}"
    );

    let agents = env.agents();
    let parent = agents.iter().find(|a| a["name"] == "boss").unwrap();
    let child = agents.iter().find(|a| a["name"] != "boss").unwrap();
    assert_eq!(child["parent_id"], parent["id"]);
    assert_eq!(child["subagent_type"], "general-purpose");
    assert_eq!(child["status"], "completed");
    assert_eq!(child["background"], false);
    let child_req = mock
        .requests()
        .into_iter()
        .find(|r| prompt_of(r).contains("CHILD-1"))
        .unwrap();
    assert!(
        child_req.json["system"][0]["text"]
            .as_str()
            .unwrap()
            .contains("general-purpose agent")
    );
    // No notification for a child whose parent waited on it.
    assert!(!all_text(&env.transcript("boss")).contains(NOTE));
}

#[test]
fn a_background_child_notifies_its_idle_parent_exactly_once() {
    let mock = MockServer::start();
    let env = world(&mock, "");
    let _daemon = env.start_daemon();
    mock.when(
        |r| prompt_of(r).contains("CHILD-BG"),
        Reply::Message(MockMessage::text("bg result 42").delay_start(Duration::from_millis(500))),
    );
    mock.when(
        |r| parent::is_parent(r) && last_text(r).contains(NOTE),
        Reply::Message(MockMessage::text("The child says 42.")),
    );
    parent::answers(
        &mock,
        MockMessage::text("Launching.").with(agent_call("CHILD-BG count", true)),
        MockMessage::text("Waiting for the child."),
    );

    let out = env.ctl(&["run", "--model", MODEL, "--name", "p", "PARENT go"]);
    out.expect_code(0);
    assert!(
        out.stdout.contains("Waiting for the child."),
        "{}\n{}",
        out.stdout,
        out.stderr
    );
    wait_until(
        "the parent is woken and answers",
        Duration::from_secs(20),
        || env.show("p")["result"] == "The child says 42.",
    );
    let entries = env.transcript("p");
    let text = all_text(&entries);
    assert_eq!(text.matches(NOTE).count(), 1, "{text}");
    assert!(text.contains("<status>completed</status>") && text.contains("bg result 42"));
    let child = env
        .agents()
        .iter()
        .find(|a| a["name"] != "p")
        .unwrap()
        .clone();
    assert!(text.contains(&format!(
        "<task-id>{}</task-id>",
        child["id"].as_str().unwrap()
    )));
    assert_eq!(child["background"], true);
}

#[test]
fn fifty_children_ending_together_each_notify_their_parent_once() {
    let mock = MockServer::start();
    let env = world(&mock, "max_running_agents = 64\n");
    let _daemon = env.start_daemon();
    // All fifty answer after the same delay, so they end within moments.
    mock.when(
        |r| prompt_of(r).starts_with("KID-"),
        Reply::Message(MockMessage::text("kid done").delay_start(Duration::from_millis(800))),
    );
    let mut launch = MockMessage::text("Launching fifty.");
    for i in 0..50 {
        launch = launch.with(agent_call(&format!("KID-{i:02}"), true));
    }
    parent::answers(&mock, launch, MockMessage::text("noted"));

    let id = run_bg(&env, "p50", "PARENT fan out");
    wait_until(
        "all fifty notifications are in the parent's transcript",
        Duration::from_secs(60),
        || all_text(&env.transcript(&id)).matches(NOTE).count() >= 50,
    );
    wait_until("the parent is idle", Duration::from_secs(20), || {
        env.show(&id)["status"] == "completed"
    });
    let text = all_text(&env.transcript(&id));
    let kids: Vec<Value> = env
        .agents()
        .iter()
        .filter(|a| a["parent_id"] == json!(id))
        .cloned()
        .collect();
    assert_eq!(kids.len(), 50);
    for kid in &kids {
        let tag = format!("<task-id>{}</task-id>", kid["id"].as_str().unwrap());
        assert_eq!(
            text.matches(&tag).count(),
            1,
            "child {} notified {} times; transcript:\n{}",
            kid["id"],
            text.matches(&tag).count(),
            serde_json::to_string_pretty(&env.transcript(&id)).unwrap()
        );
    }
    assert_eq!(text.matches(NOTE).count(), 50);
}

#[test]
fn a_notification_pending_at_sigkill_is_delivered_once_after_restart() {
    let mock = MockServer::start();
    let env = world(&mock, "");
    let daemon = env.start_daemon();
    mock.when(
        |r| prompt_of(r).contains("CHILD-K"),
        Reply::Message(MockMessage::text("child k result")),
    );
    // The parent launches the child, then stays busy in a long tool call, so
    // the child's notification waits in its inbox when the daemon dies.
    parent::answers(
        &mock,
        MockMessage::text("Launching, then working.")
            .with(agent_call("CHILD-K go", true))
            .with(Block::bash("", "sleep 30")),
        MockMessage::text("parent finished"),
    );
    let id = run_bg(&env, "pk", "PARENT work");
    wait_until("the child completed", Duration::from_secs(20), || {
        env.agents()
            .iter()
            .any(|a| a["parent_id"] == json!(id) && a["status"] == "completed")
    });
    assert!(
        !all_text(&env.transcript(&id)).contains(NOTE),
        "not delivered before the crash"
    );
    daemon.kill9();

    let _daemon = env.start_daemon();
    wait_until(
        "the resumed parent finishes",
        Duration::from_secs(20),
        || env.show(&id)["status"] == "completed",
    );
    let entries = env.transcript(&id);
    let text = all_text(&entries);
    assert_eq!(text.matches(NOTE).count(), 1, "{text}");
    assert!(text.contains("child k result"));
    // The calls cut by the crash were answered, not re-issued: the Bash
    // call as interrupted, the Agent call naming the child it had started.
    let answered = entries
        .iter()
        .find(|e| e["role"] == "user" && e["content"][0]["type"] == "tool_result")
        .expect("a user entry answering the interrupted calls");
    let results = answered["content"].as_array().unwrap();
    assert_eq!(
        results.len(),
        3,
        "two tool results and the notification: {answered}"
    );
    for r in &results[..2] {
        assert_eq!(r["is_error"], true, "{r}");
        assert!(
            r["content"]
                .as_str()
                .unwrap()
                .starts_with("Interrupted: agentd was restarted"),
            "{r}"
        );
    }
    let child = env
        .agents()
        .iter()
        .find(|a| a["parent_id"] == json!(id))
        .unwrap()["short_id"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        results[0]["content"].as_str().unwrap().contains(&child),
        "the Agent call's result names the child: {}",
        results[0]
    );
}

#[test]
fn send_reaches_a_running_agent_at_its_next_turn_boundary() {
    let mock = MockServer::start();
    let env = world(&mock, "");
    let _daemon = env.start_daemon();
    let marker = env.project().join("started");
    mock.enqueue(Reply::Message(MockMessage::text("Working.").with(
        Block::bash("toolu_s", format!("touch {}; sleep 1", marker.display())),
    )));
    mock.enqueue(Reply::Message(MockMessage::text("Got it.")));
    let id = run_bg(&env, "busy", "do things");
    wait_until("the tool runs", Duration::from_secs(20), || marker.exists());
    let sent = env.ctl(&["send", "busy", "EXTRA INFO: use port 8080"]);
    sent.expect_code(0);
    assert!(sent.stdout.contains("queued"), "{}", sent.stdout);
    env.ctl(&["wait", &id]).expect_code(0);
    let second = &mock.requests()[1];
    let last = second.json["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(
        last["content"][0]["type"], "tool_result",
        "results first, in the same message"
    );
    assert_eq!(last["content"][1]["text"], "EXTRA INFO: use port 8080");
}

#[test]
fn send_revives_idle_agents_and_refuses_ended_ones() {
    let mock = MockServer::start();
    let env = world(&mock, "");
    let _daemon = env.start_daemon();
    mock.enqueue(Reply::Message(MockMessage::text("first answer")));
    mock.enqueue(Reply::Message(MockMessage::text("second answer")));
    env.ctl(&["run", "--model", MODEL, "--name", "r", "question one"])
        .expect_code(0);
    let out = env.ctl(&["send", "r", "question two", "--wait"]);
    out.expect_code(0);
    assert_eq!(out.stdout, "second answer\n");
    let third = &mock.requests()[1];
    assert_eq!(
        n_messages(third),
        3,
        "the revival continues the same conversation"
    );
    assert_eq!(
        text_of(&third.json["messages"][2]["content"]),
        "question two"
    );
    let agent = env.show("r");
    assert_eq!(
        (agent["status"].as_str(), agent["turns"].as_u64()),
        (Some("completed"), Some(2))
    );

    let big = "x".repeat(64 * 1024 + 1);
    let out = env.ctl(&["send", "r", &big]);
    out.expect_code(1);
    assert!(
        out.stderr.contains("invalid argument") && out.stderr.contains("64 KiB"),
        "{}",
        out.stderr
    );

    mock.enqueue(Reply::Status {
        code: 400,
        message: "bad request".into(),
        retry_after: None,
    });
    env.ctl(&["run", "--model", MODEL, "--name", "fwd", "fail please"])
        .expect_code(1);
    let out = env.ctl(&["send", "fwd", "again"]);
    out.expect_code(1);
    assert!(
        out.stderr.contains("failed precondition") && out.stderr.contains("cannot be continued"),
        "{}",
        out.stderr
    );
}

#[test]
fn pause_stops_at_a_safe_point_and_send_continues() {
    let mock = MockServer::start();
    let env = world(&mock, "");
    let _daemon = env.start_daemon();
    let marker = env.project().join("m");
    mock.enqueue(Reply::Message(MockMessage::text("step").with(Block::bash(
        "toolu_p",
        format!("touch {}; sleep 1; echo ok", marker.display()),
    ))));
    mock.enqueue(Reply::Message(MockMessage::text("resumed and done")));
    let id = run_bg(&env, "pz", "work");
    wait_until("the tool runs", Duration::from_secs(20), || marker.exists());
    let out = env.ctl(&["pause", "pz"]);
    out.expect_code(0);
    assert!(out.stdout.contains("paused"), "{}", out.stdout);
    // The running tool finished and its result was kept.
    let entries = env.transcript(&id);
    assert_eq!(entries.len(), 3);
    assert!(text_of(&entries[2]["content"]).contains("ok"));
    assert_eq!(mock.requests().len(), 1, "no model call after the pause");
    assert_eq!(env.show(&id)["can_message"], true);
    let out = env.ctl(&["send", "pz", "carry on", "--wait"]);
    out.expect_code(0);
    assert_eq!(out.stdout, "resumed and done\n");
}

#[test]
fn stop_cascades_to_every_descendant_and_rm_refuses_live_agents() {
    let mock = MockServer::start();
    let env = world(&mock, "");
    let _daemon = env.start_daemon();
    mock.when(
        |r| prompt_of(r).contains("SLOW-CHILD"),
        Reply::Message(MockMessage::text("late").delay_start(Duration::from_secs(60))),
    );
    parent::answers(
        &mock,
        MockMessage::text("go").with(agent_call("SLOW-CHILD wait", true)),
        MockMessage::text("waiting").delay_start(Duration::from_secs(60)),
    );
    let id = run_bg(&env, "tree", "PARENT start");
    wait_until("the child runs", Duration::from_secs(20), || {
        env.ctl(&["list", "--json"])
            .json()
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a["parent_id"] == json!(id) && a["status"] == "running")
    });
    let out = env.ctl(&["rm", "tree"]);
    out.expect_code(1);
    assert!(out.stderr.contains("--force"), "{}", out.stderr);
    env.ctl(&["stop", "tree"]).expect_code(0);
    for a in env.agents() {
        assert_eq!(a["status"], "cancelled", "{a}");
    }
    // Ended agents are removed; the record and transcript are gone.
    env.ctl(&["rm", "tree"]).expect_code(0);
    env.ctl(&["log", &id]).expect_code(1);
}

#[test]
fn rm_force_cancels_and_removes_a_running_agent() {
    let mock = MockServer::start();
    let env = world(&mock, "");
    let _daemon = env.start_daemon();
    mock.enqueue(Reply::Message(
        MockMessage::text("never").delay_start(Duration::from_secs(60)),
    ));
    let id = run_bg(&env, "doomed", "hold");
    mock.wait_for_requests(1, Duration::from_secs(10));
    env.ctl(&["rm", "--force", "doomed"]).expect_code(0);
    let out = env.ctl(&["show", &id]);
    out.expect_code(1);
    assert!(out.stderr.contains("no agent matches"));
}

#[test]
fn a_bash_call_cut_by_sigkill_is_answered_as_interrupted_and_never_runs_twice() {
    let mock = MockServer::start();
    let env = world(&mock, "");
    let daemon = env.start_daemon();
    let marker = env.project().join("began");
    let side = env.project().join("side.txt");
    // A side effect, output, and a straggler in the background that would
    // write again two seconds later if nothing reaped it.
    mock.enqueue(Reply::Message(MockMessage::text("Running a long job.").with(
        Block::bash(
            "toolu_long",
            format!(
                "(sleep 2; echo late >> side.txt) & echo step-1-done; echo run >> side.txt; touch {}; sleep 30",
                marker.display()
            ),
        ),
    )));
    mock.enqueue(Reply::Message(MockMessage::text(
        "Checked side.txt: the job had run; not repeating it.",
    )));
    let id = run_bg(&env, "phoenix", "do the long job");
    wait_until("the tool runs", Duration::from_secs(20), || marker.exists());
    // What is asserted below is the output the daemon had captured: wait
    // for it to be in the call's spool file (the daemon reads the pipe
    // when it gets the CPU; on a loaded machine that can be after the
    // command touched its marker), then kill.
    let spool = env.data_dir().join("spool").join(&id);
    wait_until("the output is spooled", Duration::from_secs(20), || {
        std::fs::read_dir(&spool).is_ok_and(|files| {
            files
                .flatten()
                .any(|f| std::fs::read_to_string(f.path()).is_ok_and(|t| t.contains("step-1-done")))
        })
    });
    daemon.kill9();
    let _daemon = env.start_daemon();
    env.ctl(&["wait", &id, "--timeout", "20"]).expect_code(0);
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 2);
    // Not the identical request again (which makes a model repeat the
    // call): the call is answered as interrupted, with its output so far.
    assert_ne!(reqs[1].body, reqs[0].body);
    let last = reqs[1].json["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    let result = &last["content"][0];
    assert_eq!(result["type"], "tool_result", "{last}");
    assert_eq!(result["tool_use_id"], "toolu_long");
    assert_eq!(result["is_error"], true);
    let text = result["content"].as_str().unwrap();
    assert!(text.contains("may have run partly or fully"), "{text}");
    assert!(text.contains("step-1-done"), "captured output: {text}");
    // The straggler was reaped when the daemon started again.
    std::thread::sleep(Duration::from_millis(2500));
    assert_eq!(std::fs::read_to_string(&side).unwrap(), "run\n");
    let agent = env.show(&id);
    assert_eq!(
        agent["result"],
        "Checked side.txt: the job had run; not repeating it."
    );
}

#[test]
fn a_read_only_call_cut_by_sigkill_simply_runs_again() {
    let mock = MockServer::start();
    let env = world(&mock, "");
    let daemon = env.start_daemon();
    std::fs::write(env.project().join("notes.txt"), "the notes\n").unwrap();
    let marker = env.project().join("began");
    // The daemon dies while the Bash call of the round runs; the Read call
    // before it had finished, but its result was not recorded either.
    mock.enqueue(Reply::Message(
        MockMessage::text("Reading, then working.")
            .with(Block::tool(
                "toolu_read",
                "Read",
                json!({"file_path": "notes.txt"}),
            ))
            .with(Block::bash(
                "toolu_wait",
                format!("touch {}; sleep 30", marker.display()),
            )),
    ));
    mock.enqueue(Reply::Message(MockMessage::text("done")));
    let id = run_bg(&env, "pr-read", "read and work");
    wait_until("the tool runs", Duration::from_secs(20), || marker.exists());
    daemon.kill9();
    let _daemon = env.start_daemon();
    env.ctl(&["wait", &id, "--timeout", "20"]).expect_code(0);
    let reqs = mock.requests();
    let last = reqs[1].json["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    let read = &last["content"][0];
    assert_eq!(read["tool_use_id"], "toolu_read");
    assert!(
        read.get("is_error").is_none(),
        "re-run, not refused: {read}"
    );
    assert!(
        read["content"].as_str().unwrap().contains("the notes"),
        "{read}"
    );
    let bash = &last["content"][1];
    assert_eq!(bash["is_error"], true);
    assert!(
        bash["content"].as_str().unwrap().starts_with("Interrupted"),
        "{bash}"
    );
}

#[test]
fn resume_is_blocked_with_a_reason_when_the_working_directory_is_gone() {
    let mock = MockServer::start();
    let env = world(&mock, "");
    let daemon = env.start_daemon();
    let dir = env.root.path().join("gone");
    std::fs::create_dir_all(&dir).unwrap();
    mock.enqueue(Reply::Message(
        MockMessage::text("never").delay_start(Duration::from_secs(60)),
    ));
    let id = env.start_agent(&["--model", MODEL, "--cwd", dir.to_str().unwrap(), "hold"]);
    mock.wait_for_requests(1, Duration::from_secs(10));
    daemon.kill9();
    std::fs::remove_dir_all(&dir).unwrap();
    let _daemon = env.start_daemon();
    let agent = env.show(&id);
    assert_eq!(agent["status"], "interrupted");
    assert_eq!(agent["resume_blocked_reason"], "cwd_missing");
    assert_eq!(agent["can_message"], false);
    let out = env.ctl(&["send", &id, "hello"]);
    out.expect_code(1);
    assert!(out.stderr.contains("cwd_missing"), "{}", out.stderr);
}

#[test]
fn bg_releases_a_foreground_run_which_prints_the_id_and_exits_0() {
    let mock = MockServer::start();
    let env = world(&mock, "");
    let _daemon = env.start_daemon();
    mock.enqueue(Reply::Message(
        MockMessage::text("slow answer").delay_start(Duration::from_secs(2)),
    ));
    let child = env
        .ctl_command(&[
            "--no-autostart",
            "run",
            "--model",
            MODEL,
            "--name",
            "fg",
            "take your time",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    mock.wait_for_requests(1, Duration::from_secs(10));
    let started = Instant::now();
    env.ctl(&["bg", "fg"]).expect_code(0);
    let out = agentd_e2e::Out::from(child.wait_with_output().unwrap());
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "released at once, not when the agent ended"
    );
    out.expect_code(0);
    let id = out.stdout.lines().last().unwrap().to_string();
    assert_eq!(env.show("fg")["id"], id);
    // The agent kept running: the one model call completes, never re-sent.
    env.ctl(&["wait", "fg"]).expect_code(0);
    assert_eq!(mock.requests().len(), 1);
}

#[test]
fn the_auto_background_timer_releases_a_foreground_run() {
    let mock = MockServer::start();
    let env = world(&mock, "");
    env.set_daemon_env("AGENTD_AUTO_BACKGROUND_SECS", "1");
    let _daemon = env.start_daemon();
    mock.enqueue(Reply::Message(
        MockMessage::text("eventually").delay_start(Duration::from_secs(3)),
    ));
    let started = Instant::now();
    let out = env.ctl(&["run", "--model", MODEL, "--name", "auto", "slow"]);
    out.expect_code(0);
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(900) && took < Duration::from_millis(2900),
        "released after {took:?}"
    );
    assert!(out.stderr.contains("background"), "{}", out.stderr);
    env.ctl(&["wait", "auto"]).expect_code(0);
    assert_eq!(env.show("auto")["result"], "eventually");
}

#[test]
fn releasing_a_childs_waiter_returns_async_launched_and_notifies_later() {
    let mock = MockServer::start();
    let env = world(&mock, "");
    let _daemon = env.start_daemon();
    mock.when(
        |r| prompt_of(r).contains("CHILD-R"),
        Reply::Message(MockMessage::text("child r result").delay_start(Duration::from_secs(2))),
    );
    parent::answers(
        &mock,
        MockMessage::text("Delegating in the foreground.").with(agent_call("CHILD-R work", false)),
        MockMessage::text("ack"),
    );
    let id = run_bg(&env, "pr", "PARENT go");
    let child_id = {
        let mut found = String::new();
        wait_until("the child runs", Duration::from_secs(20), || {
            let list = env.ctl(&["list", "--json"]).json();
            if let Some(c) = list
                .as_array()
                .unwrap()
                .iter()
                .find(|a| a["parent_id"] == json!(id))
            {
                found = c["id"].as_str().unwrap().to_string();
                true
            } else {
                false
            }
        });
        found
    };
    mock.wait_for_requests(2, Duration::from_secs(10));
    env.ctl(&["bg", &child_id]).expect_code(0);
    wait_until(
        "the parent heard back twice",
        Duration::from_secs(20),
        || {
            let t = all_text(&env.transcript(&id));
            t.contains("Async launched") && t.contains(NOTE)
        },
    );
    let text = all_text(&env.transcript(&id));
    assert_eq!(text.matches(NOTE).count(), 1);
    assert!(text.contains("child r result"));
    let child_calls = mock
        .requests()
        .iter()
        .filter(|r| prompt_of(r).contains("CHILD-R"))
        .count();
    assert_eq!(child_calls, 1, "the child's model call was not re-sent");
}

#[test]
fn subagents_nest_at_most_three_deep() {
    let mock = MockServer::start();
    let env = world(&mock, "");
    let _daemon = env.start_daemon();
    // Every agent's first turn delegates once more; later turns finish.
    mock.when(
        |r| n_messages(r) == 1,
        Reply::Message(MockMessage::text("deeper").with(agent_call("LEVEL go deeper", false))),
    );
    mock.when(
        |_| true,
        Reply::Message(MockMessage::text("done at this level")),
    );
    env.ctl(&["run", "--model", MODEL, "--name", "top", "LEVEL start"])
        .expect_code(0);
    let agents = env.agents();
    assert_eq!(agents.len(), 4, "depths 0..=3");
    let deepest = agents.last().unwrap()["id"].as_str().unwrap().to_string();
    let text = all_text(&env.transcript(&deepest));
    assert!(
        text.contains("at most 3 levels below agent")
            && text.contains("(max_depth, from config.toml)")
            && text.contains("would be 4 below"),
        "{text}"
    );
}

#[test]
fn events_streams_creation_status_changes_and_notifications() {
    use std::io::BufRead;
    let mock = MockServer::start();
    let env = world(&mock, "");
    let _daemon = env.start_daemon();
    let mut watcher = env
        .ctl_command(&["--no-autostart", "events", "--json"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = watcher.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines() {
            if tx.send(line.unwrap()).is_err() {
                return;
            }
        }
    });
    // Give the watcher a moment to subscribe before anything happens.
    std::thread::sleep(Duration::from_millis(300));
    mock.when(
        |r| prompt_of(r).contains("CHILD-E"),
        Reply::Message(MockMessage::text("e done")),
    );
    parent::answers(
        &mock,
        MockMessage::text("go").with(agent_call("CHILD-E", true)),
        MockMessage::text("ok"),
    );
    let id = run_bg(&env, "pe", "PARENT events");
    let mut seen: Vec<Value> = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !seen.iter().any(|e| e["type"] == "notification") {
        let left = deadline.saturating_duration_since(Instant::now());
        let line = rx
            .recv_timeout(left)
            .expect("the notification event arrives");
        seen.push(serde_json::from_str(&line).unwrap());
    }
    let _ = watcher.kill();
    let _ = watcher.wait();
    let created: Vec<&Value> = seen.iter().filter(|e| e["type"] == "created").collect();
    assert_eq!(created.len(), 2, "{seen:?}");
    assert_eq!(created[0]["agent_id"], json!(id));
    assert!(
        seen.iter().any(|e| e["agent_id"] == json!(id)
            && e["type"] == "status"
            && e["status"] == "running")
    );
    let note = seen.iter().find(|e| e["type"] == "notification").unwrap();
    assert_eq!(note["agent_id"], json!(id), "addressed to the parent");
    assert!(note["text"].as_str().unwrap().contains("e done"));
    // The same notification as fields, for editors that should not parse it.
    let task = &note["task"];
    assert_eq!(task["task_id"], created[1]["agent_id"], "{note}");
    assert_eq!(task["status"], "completed");
    assert_eq!(task["description"], "delegated work");
    assert!(task["result"].as_str().unwrap().contains("e done"));
    assert!(task["total_tokens"].as_u64().unwrap() > 0);
    // ListAgents gives each agent's transcript length.
    let listed = env.ctl(&["list", "--json"]).json();
    for a in listed.as_array().unwrap() {
        assert!(a["transcript_len"].as_u64().unwrap() >= 2, "{a}");
    }
}

#[test]
fn agents_beyond_the_running_limit_wait_as_pending_and_start_in_order() {
    let mock = MockServer::start();
    let env = world(&mock, "max_running_agents = 2\n");
    let _daemon = env.start_daemon();
    // The two running jobs end well apart, so the order in which the
    // pending ones take the freed slots shows in the requests (two slots
    // freed at the same instant would let the later one's request win the
    // race to the mock).
    for i in 0..4u64 {
        let delay = if i == 1 { 1_600 } else { 700 };
        mock.when(
            move |r| prompt_of(r) == format!("JOB-{i}"),
            Reply::Message(
                MockMessage::text(format!("job {i} done"))
                    .delay_start(Duration::from_millis(delay)),
            ),
        );
    }
    let ids: Vec<String> = (0..4)
        .map(|i| run_bg(&env, &format!("j{i}"), &format!("JOB-{i}")))
        .collect();
    mock.wait_for_requests(2, Duration::from_secs(10));
    std::thread::sleep(Duration::from_millis(200));
    let status = |id: &str| env.show(id)["status"].as_str().unwrap().to_string();
    assert_eq!(mock.requests().len(), 2, "only two run at once");
    assert_eq!(status(&ids[2]), "pending");
    assert_eq!(status(&ids[3]), "pending");
    for id in &ids {
        env.ctl(&["wait", id, "--timeout", "20"]).expect_code(0);
    }
    let order: Vec<String> = mock.requests().iter().map(prompt_of).collect();
    assert_eq!(
        order[2..],
        ["JOB-2".to_string(), "JOB-3".to_string()],
        "pending agents start in order"
    );
}

#[test]
fn agent_tools_list_message_and_stop_the_callers_subagents() {
    let mock = MockServer::start();
    let env = world(&mock, "");
    let _daemon = env.start_daemon();
    // The child waits a long time on its first call; the parent lists it,
    // messages it, then stops it.
    mock.when(
        |r| prompt_of(r).contains("CHILD-T") && n_messages(r) == 1,
        Reply::Message(MockMessage::text("slow").delay_start(Duration::from_secs(60))),
    );
    mock.when(
        |r| parent::is_parent(r) && n_messages(r) == 3,
        Reply::Message(
            MockMessage::text("inspect")
                .with(Block::tool("", "ListAgents", json!({})))
                .with(Block::tool(
                    "",
                    "SendMessage",
                    json!({"to": "kid", "message": "hurry"}),
                ))
                .with(Block::tool("", "TaskStop", json!({"task_id": "kid"}))),
        ),
    );
    parent::answers(
        &mock,
        MockMessage::text("launch").with(Block::agent(
            "",
            json!({"description": "tool target", "prompt": "CHILD-T", "run_in_background": true, "name": "kid"}),
        )),
        MockMessage::text("all handled"),
    );
    let id = run_bg(&env, "pt", "PARENT tools");
    wait_until("the parent finishes", Duration::from_secs(20), || {
        env.show(&id)["status"] == "completed"
    });
    let entries = env.transcript(&id);
    let results = &entries[4]["content"];
    let listed = text_of(&results[0]["content"]);
    assert!(
        listed.contains("\"name\": \"kid\"") && listed.contains("\"relation\": \"child\""),
        "{listed}"
    );
    assert!(
        text_of(&results[1]["content"]).contains("queued"),
        "{results}"
    );
    assert!(
        text_of(&results[2]["content"]).contains("cancelled"),
        "{results}"
    );
    assert_eq!(env.show("kid")["status"], "cancelled");
    // The child's inbox got the message as from its parent.
    assert!(results[2]["is_error"].is_null());
}

#[test]
fn claude_code_agent_files_define_types_unchanged() {
    let mock = MockServer::start();
    let env = world(&mock, "");
    let dir = env.project().join(".claude/agents");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::create_dir_all(env.project().join(".git")).unwrap();
    // Claude Code's format: comma tools (one agentd lacks), a model alias,
    // a UI colour.
    std::fs::write(
        dir.join("code-reviewer.md"),
        "---\nname: code-reviewer\ndescription: Expert code reviewer\ntools: Read, Grep, Glob, WebFetch\nmodel: haiku\ncolor: purple\n---\n\nYou are CC-REVIEWER.\n",
    )
    .unwrap();
    let _daemon = env.start_daemon();
    mock.when(
        |r| prompt_of(r).contains("CC-TASK"),
        Reply::Message(MockMessage::text("reviewed")),
    );
    parent::answers(
        &mock,
        MockMessage::text("delegating").with(Block::agent(
            "",
            json!({"description": "review", "prompt": "CC-TASK now", "subagent_type": "code-reviewer"}),
        )),
        MockMessage::text("done"),
    );
    env.ctl(&["run", "--model", MODEL, "PARENT go"])
        .expect_code(0);
    let reqs = mock.requests();
    let child = reqs
        .iter()
        .find(|r| prompt_of(r).contains("CC-TASK"))
        .expect("the child asked the model");
    assert_eq!(child.json["model"], "claude-haiku-4-5");
    assert!(
        child.json["system"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("You are CC-REVIEWER."),
        "{}",
        child.json["system"]
    );
    assert_eq!(child.tool_names(), ["Read", "Glob", "Grep"]);
}

#[test]
fn custom_and_explore_types_shape_the_childs_prompt_and_tools() {
    let mock = MockServer::start();
    let env = world(&mock, "");
    let agents_dir = env.project().join(".agentd/agents");
    std::fs::create_dir_all(&agents_dir).unwrap();
    std::fs::create_dir_all(env.project().join(".git")).unwrap();
    std::fs::write(
        agents_dir.join("reviewer.md"),
        "---\nname: reviewer\ndescription: Reviews changes\ntools: [Read, Grep]\n---\nYou are REVIEWER-PROMPT. Review carefully.\n",
    )
    .unwrap();
    let _daemon = env.start_daemon();
    let call = |prompt: &str, kind: &str| {
        Block::agent(
            "",
            json!({"description": "typed", "prompt": prompt, "subagent_type": kind}),
        )
    };
    mock.when(
        |r| prompt_of(r).contains("REVIEW-TASK") && n_messages(r) == 1,
        Reply::Message(MockMessage::text("reviewing")),
    );
    mock.when(
        |r| prompt_of(r).contains("EXPLORE-TASK") && n_messages(r) == 1,
        Reply::Message(MockMessage::text("trying to write").with(Block::tool(
            "",
            "Write",
            json!({"file_path": "nope.txt", "content": "x"}),
        ))),
    );
    mock.when(
        |r| prompt_of(r).contains("EXPLORE-TASK"),
        Reply::Message(MockMessage::text("explored")),
    );
    parent::answers(
        &mock,
        MockMessage::text("typed children")
            .with(call("REVIEW-TASK look", "reviewer"))
            .with(call("EXPLORE-TASK look", "Explore"))
            .with(call("whatever", "no-such-type")),
        MockMessage::text("done"),
    );
    env.ctl(&["run", "--model", MODEL, "--name", "typed", "PARENT go"])
        .expect_code(0);

    let reqs = mock.requests();
    let review = reqs
        .iter()
        .find(|r| prompt_of(r).contains("REVIEW-TASK"))
        .unwrap();
    assert!(
        review.json["system"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("You are REVIEWER-PROMPT.")
    );
    assert_eq!(review.tool_names(), ["Read", "Grep"]);
    let explore = reqs
        .iter()
        .find(|r| prompt_of(r).contains("EXPLORE-TASK") && n_messages(r) == 3)
        .unwrap();
    let refused = &explore.json["messages"][2]["content"][0];
    assert_eq!(
        refused["is_error"], true,
        "Explore may not write: {refused}"
    );
    assert!(!env.project().join("nope.txt").exists());
    let parent_final = parent::request(&mock, 3);
    let results = parent_final.json["messages"][2]["content"]
        .as_array()
        .unwrap();
    assert_eq!(results[2]["is_error"], true);
    assert!(text_of(&results[2]["content"]).contains("unknown subagent_type 'no-such-type'"));
    let kids = env.agents();
    let types: Vec<&str> = kids
        .iter()
        .filter_map(|a| a["subagent_type"].as_str())
        .collect();
    assert!(
        types.contains(&"reviewer") && types.contains(&"Explore"),
        "{types:?}"
    );
}

#[test]
fn parents_cancelled_while_taking_their_slot_back_never_raise_the_running_limit() {
    let mock = MockServer::start();
    let env = world(&mock, "max_running_agents = 2\n");
    let _daemon = env.start_daemon();
    let hold = || Reply::Message(MockMessage::text("held").delay_start(Duration::from_secs(120)));
    mock.when(|r| prompt_of(r).starts_with("HOLD"), hold());
    mock.when(
        |r| prompt_of(r).starts_with("CHILD"),
        Reply::Message(MockMessage::text("child done").delay_start(Duration::from_millis(300))),
    );
    mock.when(
        |r| prompt_of(r).starts_with("PARENT"),
        Reply::Message(MockMessage::text("delegating").with(agent_call("CHILD go", false))),
    );
    let status_of = |env: &Env, id: &str| {
        env.agents()
            .iter()
            .find(|a| a["id"] == json!(id))
            .map(|a| a["status"].as_str().unwrap().to_string())
    };
    // One slot stays taken throughout.
    let holder = run_bg(&env, "holder", "HOLD the first slot");
    for i in 0..20 {
        let parent = run_bg(&env, &format!("pp{i}x"), "PARENT waits on a child");
        // The parent lends its slot to its foreground child...
        let child = {
            let mut child = None;
            wait_until("the child runs", Duration::from_secs(20), || {
                child = env
                    .agents()
                    .iter()
                    .find(|a| a["parent_id"] == json!(parent) && a["status"] == "running")
                    .map(|a| a["id"].as_str().unwrap().to_string());
                child.is_some()
            });
            child.unwrap()
        };
        // ...and another agent queues for the slot the child will free.
        let blocker = run_bg(&env, &format!("pb{i}x"), "HOLD the slot the child frees");
        wait_until(
            "the child ends and the blocker takes its slot",
            Duration::from_secs(20),
            || {
                status_of(&env, &child).as_deref() == Some("completed")
                    && status_of(&env, &blocker).as_deref() == Some("running")
            },
        );
        // The parent now queues to take a slot back: cancel it there.
        env.ctl(&["stop", &parent]).expect_code(0);
        env.ctl(&["stop", &blocker]).expect_code(0);
    }
    env.ctl(&["stop", &holder]).expect_code(0);
    let long: Vec<String> = (0..3)
        .map(|i| run_bg(&env, &format!("long{i}x"), "HOLD a slot"))
        .collect();
    wait_until("two of three run", Duration::from_secs(20), || {
        long.iter()
            .filter(|id| status_of(&env, id).as_deref() == Some("running"))
            .count()
            == 2
    });
    std::thread::sleep(Duration::from_millis(500));
    let running: Vec<String> = long.iter().filter_map(|id| status_of(&env, id)).collect();
    assert_eq!(
        running.iter().filter(|s| *s == "running").count(),
        2,
        "the limit is still 2: {running:?}"
    );
    assert_eq!(
        running.iter().filter(|s| *s == "pending").count(),
        1,
        "{running:?}"
    );
}

#[test]
fn a_message_that_cannot_wake_its_agent_is_not_left_behind() {
    let mock = MockServer::start();
    let env = world(&mock, "");
    let daemon = env.start_daemon();
    let dir = env.root.path().join("workdir");
    std::fs::create_dir_all(&dir).unwrap();
    mock.enqueue(Reply::Message(MockMessage::text("first answer")));
    let id = env.start_agent(&["--model", MODEL, "--cwd", dir.to_str().unwrap(), "hi"]);
    env.ctl(&["wait", &id, "--timeout", "20"]).expect_code(0);
    std::fs::remove_dir_all(&dir).unwrap();
    // The revival fails: the sender is told, and the message is taken back.
    let out = env.ctl(&["send", &id, "STALE instruction"]);
    out.expect_code(1);
    assert!(out.stderr.contains("cwd_missing"), "{}", out.stderr);
    // With the directory back and the daemon restarted, nothing wakes the
    // agent for a message its sender was told had failed.
    std::fs::create_dir_all(&dir).unwrap();
    daemon.kill9();
    let _daemon = env.start_daemon();
    std::thread::sleep(Duration::from_millis(800));
    assert_eq!(mock.requests().len(), 1, "no new model call");
    assert!(!all_text(&env.transcript(&id)).contains("STALE"));
}
