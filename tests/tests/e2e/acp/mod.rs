//! `agentctl acp` driven by real ACP clients nobody here wrote: the
//! official TypeScript SDK and the Python SDK (`sdk`), against the mock
//! model, asserting on what the editor saw and on what the model was sent.

#![allow(clippy::unwrap_used)] // Tests: a panic is the failure report.

pub(crate) mod fidelity;
pub(crate) mod mcp;
pub(crate) mod network;
pub(crate) mod restart;
pub(crate) mod rules;
pub(crate) mod sdk;
pub(crate) mod sessions;
pub(crate) mod test_agent;
pub(crate) mod usage;
pub(crate) mod wire;

use agentd_e2e::Env;
use agentd_e2e::mock::{MockMessage, MockServer, Reply, last_text};
use serde_json::{Value, json};

use crate::acp::sdk::Sdk;

pub(super) fn setup() {
    Sdk::TypeScript.setup();
}

/// Runs one step of the TypeScript SDK client; its JSON lines.
pub(super) fn client(env: &Env, args: &[&str]) -> Vec<Value> {
    Sdk::TypeScript.run(env, args)
}

pub(super) fn of_kind<'a>(lines: &'a [Value], kind: &str) -> Vec<&'a Value> {
    lines.iter().filter(|l| l["kind"] == kind).collect()
}

fn kinds(updates: &Value) -> Vec<String> {
    updates
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["sessionUpdate"].as_str().unwrap().to_string())
        .collect()
}

/// The text of every agent_message_chunk, joined.
fn said(updates: &Value) -> String {
    updates
        .as_array()
        .unwrap()
        .iter()
        .filter(|u| u["sessionUpdate"] == "agent_message_chunk")
        .map(|u| u["content"]["text"].as_str().unwrap())
        .collect()
}

const LONG: &str =
    "Wrote one.txt as asked; every word of this sentence arrives as its own delta, once, in order.";

#[test]
fn an_editor_drives_an_agent_through_the_official_acp_sdk() {
    an_editor_drives_an_agent(Sdk::TypeScript);
}

#[test]
fn an_editor_drives_an_agent_through_the_python_acp_sdk() {
    an_editor_drives_an_agent(Sdk::Python);
}

fn an_editor_drives_an_agent(sdk: Sdk) {
    sdk.setup();
    let mock = MockServer::start();
    let env = Env::with_mock(&mock);
    env.write_config("default_model = \"anthropic:claude-test\"\n");
    let _daemon = env.start_daemon();
    mock.enqueue_all([
        Reply::Message(
            MockMessage::text("Writing it.").with(agentd_e2e::mock::Block::tool(
                "",
                "Bash",
                json!({"command": "echo one > one.txt"}),
            )),
        ),
        Reply::text(LONG),
        Reply::tool("", "Bash", json!({"command": "echo two > two.txt"})),
        Reply::text("You said no; two.txt is not written."),
        Reply::tool(
            "",
            "Bash",
            json!({"command": "touch slow-started; sleep 30; touch slow-finished"}),
        ),
        Reply::text("Fourth done."),
    ]);
    let cwd = env.project().display().to_string();

    // First editor process: initialize, new, three prompts.
    let first = sdk.run(&env, &["first", &cwd]);
    let init = &of_kind(&first, "initialize")[0]["init"];
    assert_eq!(init["protocolVersion"], 1);
    assert_eq!(init["agentCapabilities"]["loadSession"], true);
    assert_eq!(init["agentInfo"]["name"], "agentd");
    let new = of_kind(&first, "new")[0];
    let id = new["sessionId"].as_str().unwrap().to_string();
    // Permission modes are session modes; the model a config option.
    assert_eq!(new["modes"]["currentModeId"], "default");
    assert_eq!(new["modes"]["availableModes"].as_array().unwrap().len(), 4);
    let model = new["configOptions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["category"] == "model")
        .unwrap();
    assert_eq!(model["currentValue"], "anthropic:claude-test");
    // A session is an agent: listed, with the id.
    let shown = env.show(&id);
    assert_eq!(shown["id"], id);

    let prompts = of_kind(&first, "prompt");
    assert_eq!(prompts.len(), 3, "{first:?}");
    // 1: a tool call, allowed once, then the answer.
    assert_eq!(prompts[0]["stopReason"], "end_turn");
    let u = &prompts[0]["updates"];
    let k = kinds(u);
    let call = k.iter().position(|k| k == "tool_call").unwrap();
    assert_eq!(u[call]["kind"], "execute");
    assert_eq!(u[call]["title"], "Bash: echo one > one.txt");
    let done = u
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["sessionUpdate"] == "tool_call_update" && x["status"] == "completed")
        .expect("the call completes");
    assert_eq!(done["toolCallId"], u[call]["toolCallId"]);
    assert_eq!(
        std::fs::read_to_string(env.project().join("one.txt")).unwrap(),
        "one\n"
    );
    // Every text delta once and in order: the chunks are the answers.
    assert_eq!(said(u), format!("Writing it.{LONG}"));
    // 2: rejected in the editor: nothing written, the model told.
    assert_eq!(prompts[1]["stopReason"], "end_turn");
    assert!(!env.project().join("two.txt").exists());
    let failed = prompts[1]["updates"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["sessionUpdate"] == "tool_call_update" && x["status"] == "failed");
    assert!(failed.is_some(), "{}", prompts[1]["updates"]);
    let permissions = of_kind(&first, "permission");
    assert_eq!(permissions.len(), 3, "{first:?}");
    assert_eq!(
        permissions[0]["options"],
        json!(["allow_once", "allow_always", "reject_once", "reject_always"])
    );
    // The ask is about the call the editor was already shown.
    assert_eq!(
        permissions[0]["toolCallId"],
        prompts[0]["updates"][call]["toolCallId"]
    );
    // 3: cancelled while the tool ran: killed, recorded, session usable.
    assert_eq!(prompts[2]["stopReason"], "cancelled");
    assert!(env.project().join("slow-started").exists());
    assert!(!env.project().join("slow-finished").exists());
    let errors = of_kind(&first, "error");
    assert_eq!(errors[0]["code"], -32601);
    assert_eq!(errors[1]["code"], -32002);
    assert_eq!(errors[1]["data"]["sessionId"], "no-such-session");

    // The editor is gone; the agent stays, paused after the cancel.
    let shown = env.show(&id);
    assert_eq!(shown["status"], "paused", "{shown}");

    // What the model was sent: the denial reached it as a tool error, the
    // cancelled call never got a next request.
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 5, "{}", reqs.len());
    assert!(last_text(&reqs[0]).contains("TASK-ONE"));
    assert!(last_text(&reqs[2]).contains("TASK-TWO"));
    let denied = &reqs[3].json["messages"].as_array().unwrap().last().unwrap()["content"][0];
    assert_eq!(denied["type"], "tool_result");
    assert_eq!(denied["is_error"], true);
    assert!(last_text(&reqs[4]).contains("TASK-SLOW"));

    // Second editor process: list, then load the conversation.
    let second = sdk.run(&env, &["second", &cwd, &id]);
    let list = &of_kind(&second, "list")[0]["list"]["sessions"];
    assert!(
        list.as_array()
            .unwrap()
            .iter()
            .any(|s| s["sessionId"] == id),
        "{list}"
    );
    let replay = &of_kind(&second, "load")[0]["updates"];
    let k = kinds(replay);
    // The title first (the first prompt's first line), then the history.
    assert_eq!(k[0], "session_info_update", "{replay}");
    assert_eq!(replay[0]["title"], "TASK-ONE: write one.txt");
    assert_eq!(
        list.as_array()
            .unwrap()
            .iter()
            .find(|s| s["sessionId"] == id)
            .unwrap()["title"],
        "TASK-ONE: write one.txt"
    );
    let users: Vec<String> = replay
        .as_array()
        .unwrap()
        .iter()
        .filter(|u| u["sessionUpdate"] == "user_message_chunk")
        .map(|u| u["content"]["text"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(users.len(), 3, "{replay}");
    assert!(users[0].contains("TASK-ONE") && users[2].contains("TASK-SLOW"));
    assert_eq!(k.iter().filter(|k| *k == "tool_call").count(), 3, "{k:?}");
    assert!(said(replay).contains(LONG));
    // The interrupted call shows as failed in the replay.
    assert!(
        replay
            .as_array()
            .unwrap()
            .iter()
            .any(|u| u["status"] == "failed"
                && u["content"][0]["content"]["text"]
                    .as_str()
                    .is_some_and(|t| t.contains("interrupted"))),
        "{replay}"
    );

    // Third: resume (no replay) and go on.
    let third = sdk.run(&env, &["third", &cwd, &id]);
    assert_eq!(
        of_kind(&third, "resume")[0]["updates"],
        json!([]),
        "resume replays nothing"
    );
    assert_eq!(
        of_kind(&third, "resume")[0]["modes"]["currentModeId"],
        "default"
    );
    // The pickers change the agent: mode plan, another model.
    let options = &of_kind(&third, "config")[0]["configOptions"];
    let current = |category: &str| {
        options
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o["category"] == category)
            .unwrap()["currentValue"]
            .clone()
    };
    assert_eq!(current("model"), "anthropic:claude-other");
    assert_eq!(current("mode"), "plan");
    let p = &of_kind(&third, "prompt")[0];
    assert_eq!(p["stopReason"], "end_turn");
    assert_eq!(said(&p["updates"]), "Fourth done.");
    assert_eq!(of_kind(&third, "closed").len(), 1);
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 6);
    assert!(last_text(&reqs[5]).contains("TASK-FOUR"));
    assert_eq!(reqs[5].json["model"], "claude-other");
    assert_eq!(env.show(&id)["permission_mode"], "plan");
    assert_eq!(env.show(&id)["status"], "completed");
}

#[test]
fn a_loaded_session_marks_where_its_context_was_compacted() {
    setup();
    let mock = MockServer::start();
    let env = Env::with_mock(&mock);
    let _daemon = env.start_daemon();
    mock.enqueue(Reply::text("BEFORE-COMPACTION"));
    let id = env.run_background(agentd_e2e::mock::MODEL, "compacted", "remember ALBATROSS");
    env.wait_for_agent(&id, "completed", |a| a["status"] == "completed");
    mock.when(
        agentd_e2e::compacting::is_summary_request,
        Reply::text("SUMMARY-ALBATROSS"),
    );
    env.ctl(&["compact", &id]).expect_code(0);
    let cwd = env.show(&id)["cwd"].as_str().unwrap().to_string();
    let second = client(&env, &["second", &cwd, &id]);
    let replay = &of_kind(&second, "load")[0]["updates"];
    let k = kinds(replay);
    let at = k
        .iter()
        .position(|kind| kind == "agent_thought_chunk")
        .unwrap_or_else(|| panic!("no boundary in {replay}"));
    let marker = &replay[at];
    assert!(
        marker["content"]["text"]
            .as_str()
            .unwrap()
            .contains("SUMMARY-ALBATROSS"),
        "{marker}"
    );
    assert_eq!(
        marker["_meta"]["agentd"]["compactBoundary"]["trigger"],
        "manual"
    );
    // The history before it is still shown, before it.
    let before = said(&json!(replay.as_array().unwrap()[..at]));
    assert!(before.contains("BEFORE-COMPACTION"), "{replay}");
}

#[test]
fn a_loaded_session_after_a_rewind_replays_what_the_agent_now_sees() {
    setup();
    let mock = MockServer::start();
    let env = Env::with_mock(&mock);
    let _daemon = env.start_daemon();
    mock.enqueue(Reply::text("ANSWER-ONE"));
    let id = env.run_background(agentd_e2e::mock::MODEL, "rewound", "FIRST-QUESTION");
    env.wait_for_agent(&id, "completed", |a| a["status"] == "completed");
    mock.enqueue(Reply::text("ANSWER-TWO"));
    env.ctl(&["send", &id, "SECOND-QUESTION"]).expect_code(0);
    env.wait_for_agent(&id, "the second answer", |a| {
        a["status"] == "completed" && a["result"] == "ANSWER-TWO"
    });
    env.ctl(&["rewind", &id, "--to", "2", "--conversation"])
        .expect_code(0);
    let cwd = env.show(&id)["cwd"].as_str().unwrap().to_string();
    let second = client(&env, &["second", &cwd, &id]);
    let replay = &of_kind(&second, "load")[0]["updates"];
    let text = replay.to_string();
    assert!(
        text.contains("FIRST-QUESTION") && said(replay).contains("ANSWER-ONE"),
        "{replay}"
    );
    assert!(
        !text.contains("SECOND-QUESTION") && !text.contains("ANSWER-TWO"),
        "turn 2 is out of what the agent sees: {replay}"
    );
    // The transcript keeps it.
    let log = env.ctl(&["log", &id]).expect_code(0).stdout.clone();
    assert!(log.contains("ANSWER-TWO"), "{log}");
}
