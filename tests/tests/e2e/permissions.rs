//! Permission modes and asks: a tool call waits (`waiting`) until a client
//! attached to the agent or an ancestor answers; the first answer wins.

#![allow(clippy::unwrap_used)] // Tests: a panic is the failure report.

use std::time::Duration;

use agentd_e2e::attached::Attached;
use agentd_e2e::mock::{Block, MODEL, MockMessage, MockServer, Reply, n_messages, prompt_of};
use agentd_e2e::{Env, parent};
use agentd_shared::proto as pb;
use pb::permission_answer::Decision;
use serde_json::json;

fn run_bg(env: &Env, name: &str, mode: &str, prompt: &str) -> String {
    env.start_agent(&[
        "--model",
        MODEL,
        "--name",
        name,
        "--permission-mode",
        mode,
        prompt,
    ])
}

#[test]
fn default_mode_waits_for_an_answer_and_honours_allow_deny_and_always() {
    let mock = MockServer::start();
    let env = Env::with_mock(&mock);
    let _daemon = env.start_daemon();
    mock.enqueue(Reply::Message(
        MockMessage::text("first").with(Block::bash("t1", "echo one > one.txt")),
    ));
    mock.enqueue(Reply::Message(
        MockMessage::text("second").with(Block::bash("t2", "echo two > two.txt")),
    ));
    mock.enqueue(Reply::Message(
        MockMessage::text("third").with(Block::bash("t3", "echo three > three.txt")),
    ));
    mock.enqueue(Reply::Message(
        MockMessage::text("fourth").with(Block::bash("t4", "echo four > four.txt")),
    ));
    mock.enqueue(Reply::Message(MockMessage::text("done")));
    let id = run_bg(&env, "asker", "default", "write files");

    // Nobody attached: the agent waits, and says what for.
    let waiting = env.wait_status(&id, "waiting", Duration::from_secs(20));
    assert_eq!(
        waiting["waiting_for"],
        "permission to run Bash: echo one > one.txt"
    );
    let table = env.ctl(&["list"]);
    assert!(
        table.stdout.contains("waiting: permission to run Bash"),
        "{}",
        table.stdout
    );
    assert!(
        !env.project().join("one.txt").exists(),
        "nothing ran before the answer"
    );

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        // Attaching later still shows the open ask.
        let mut client = Attached::open(&env, &id).await;
        let ask = client.next_ask().await;
        assert_eq!(ask.tool_name, "Bash");
        assert_eq!(ask.agent_id, id);
        client.answer(&ask, Decision::AllowOnce, "").await;
        let ask = client.next_ask().await;
        assert!(ask.summary.contains("two.txt"));
        client.answer(&ask, Decision::Deny, "not that file").await;
        let ask = client.next_ask().await;
        assert!(ask.summary.contains("three.txt"));
        client.answer(&ask, Decision::AllowAlways, "").await;
        client.resolved(&ask).await;
        // The fourth Bash call runs without asking.
    });
    let done = env.wait_status(&id, "completed", Duration::from_secs(20));
    assert!(done["waiting_for"].is_null());
    assert!(env.project().join("one.txt").exists());
    assert!(
        !env.project().join("two.txt").exists(),
        "denied calls never run"
    );
    assert!(env.project().join("three.txt").exists());
    assert!(env.project().join("four.txt").exists());
    let third_request = &mock.requests()[2];
    let denied = &third_request.json["messages"][4]["content"][0];
    assert_eq!(denied["is_error"], true);
    assert_eq!(
        denied["content"],
        "The user denied this Bash call: not that file"
    );
}

#[test]
fn plan_mode_refuses_changes_and_accept_edits_asks_only_for_bash() {
    let mock = MockServer::start();
    let env = Env::with_mock(&mock);
    let _daemon = env.start_daemon();
    mock.enqueue(Reply::Message(MockMessage::text("try").with(Block::tool(
        "w1",
        "Write",
        json!({"file_path": "plan.txt", "content": "x"}),
    ))));
    mock.enqueue(Reply::Message(MockMessage::text("ok, planned")));
    env.ctl(&[
        "run",
        "--model",
        MODEL,
        "--permission-mode",
        "plan",
        "plan it",
    ])
    .expect_code(0);
    assert!(!env.project().join("plan.txt").exists());
    let refused = &mock.requests()[1].json["messages"][2]["content"][0];
    assert_eq!(refused["is_error"], true);
    assert!(
        refused["content"].as_str().unwrap().contains("plan mode"),
        "{refused}"
    );

    mock.enqueue(Reply::Message(MockMessage::text("edit").with(Block::tool(
        "w2",
        "Write",
        json!({"file_path": "edit.txt", "content": "y"}),
    ))));
    mock.enqueue(Reply::Message(
        MockMessage::text("shell").with(Block::bash("b2", "echo hi > shell.txt")),
    ));
    mock.enqueue(Reply::Message(MockMessage::text("finished")));
    let id = run_bg(&env, "editor", "accept-edits", "edit then shell");
    let waiting = env.wait_status(&id, "waiting", Duration::from_secs(20));
    assert!(
        env.project().join("edit.txt").exists(),
        "edits run without asking"
    );
    assert!(waiting["waiting_for"].as_str().unwrap().contains("Bash"));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut c = Attached::open(&env, &id).await;
        let ask = c.next_ask().await;
        c.answer(&ask, Decision::AllowOnce, "").await;
        c.resolved(&ask).await;
    });
    env.wait_status(&id, "completed", Duration::from_secs(20));
    assert!(env.project().join("shell.txt").exists());
}

#[test]
fn a_childs_ask_reaches_the_parents_attachers_and_the_first_answer_wins() {
    let mock = MockServer::start();
    let env = Env::with_mock(&mock);
    let _daemon = env.start_daemon();
    mock.when(
        |r| prompt_of(r).contains("CHILD") && n_messages(r) == 1,
        Reply::Message(
            MockMessage::text("child shell").with(Block::bash("cb", "echo child > child.txt")),
        ),
    );
    mock.when(
        |r| prompt_of(r).contains("CHILD"),
        Reply::Message(MockMessage::text("child done")),
    );
    parent::answers(
        &mock,
        MockMessage::text("delegate").with(Block::agent(
            "a1",
            json!({"description": "shell work", "prompt": "CHILD run it"}),
        )),
        MockMessage::text("parent done"),
    );
    let id = run_bg(&env, "pp", "default", "PARENT go");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut first = Attached::open(&env, &id).await;
        let mut second = Attached::open(&env, &id).await;
        let ask = first.next_ask().await;
        assert_ne!(ask.agent_id, id, "the child asks");
        assert_eq!(
            second.next_ask().await.request_id,
            ask.request_id,
            "every attacher sees it"
        );
        first.answer(&ask, Decision::AllowOnce, "").await;
        // Give the first answer time to land, then answer again.
        tokio::time::sleep(Duration::from_millis(200)).await;
        second.answer(&ask, Decision::Deny, "too late").await;
        let notice = second.next_notice().await;
        assert!(
            notice.is_error && notice.text.contains("not open"),
            "{notice:?}"
        );
    });
    env.wait_status(&id, "completed", Duration::from_secs(20));
    assert!(
        env.project().join("child.txt").exists(),
        "the first answer (allow) won"
    );
    let child = env
        .agents()
        .iter()
        .find(|a| a["parent_id"] == json!(id))
        .unwrap()
        .clone();
    assert_eq!(
        child["permission_mode"], "default",
        "children inherit the mode"
    );
}
