//! What an editor is told about its sessions and its mistakes, through
//! both ACP SDKs (`acp_sdk`): a session's title comes from its first prompt
//! (`session_info_update`, and the agent's description), `session/list`
//! goes newest first in pages with a cursor that is checked, and what the
//! person got wrong is invalid params (-32602) saying what to do, never an
//! internal error.

#![allow(clippy::unwrap_used)] // Tests: a panic is the failure report.

use std::collections::HashSet;

use agentd_e2e::Env;
use agentd_e2e::mock::{MockServer, Reply};
use serde_json::{Value, json};

use super::of_kind;
use super::sdk::Sdk;

const TITLE_A: &str = "TASK-TITLE-A: name the first session";
const TITLE_B: &str = "TASK-TITLE-B: name the second session";
/// Sessions made after the two titled ones: past one page of 50.
const MORE: usize = 52;

/// The titles sent in `session_info_update`s among `updates`.
fn titles_sent(updates: &Value) -> Vec<&str> {
    updates
        .as_array()
        .unwrap()
        .iter()
        .filter(|u| u["sessionUpdate"] == "session_info_update")
        .map(|u| u["title"].as_str().unwrap())
        .collect()
}

fn session_ids(sessions: &Value) -> Vec<&str> {
    sessions
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["sessionId"].as_str().unwrap())
        .collect()
}

#[test]
fn titles_follow_the_first_prompt_and_lists_go_newest_first_typescript() {
    titles_and_lists(Sdk::TypeScript);
}

#[test]
fn titles_follow_the_first_prompt_and_lists_go_newest_first_python() {
    titles_and_lists(Sdk::Python);
}

fn titles_and_lists(sdk: Sdk) {
    sdk.setup();
    let mock = MockServer::start();
    let env = Env::with_mock(&mock);
    env.write_config("default_model = \"anthropic:claude-test\"\n");
    let _daemon = env.start_daemon();
    mock.enqueue_all([
        Reply::text("A done."),
        Reply::text("A2 done."),
        Reply::text("B done."),
    ]);
    let cwd = env.project().display().to_string();
    let lines = sdk.run(&env, &["titles", &cwd, &MORE.to_string()]);

    let news = of_kind(&lines, "new");
    let (a, b) = (
        news[0]["sessionId"].as_str().unwrap(),
        news[1]["sessionId"].as_str().unwrap(),
    );
    let prompts = of_kind(&lines, "prompt");
    assert_eq!(prompts.len(), 3, "{lines:?}");
    // The first prompt names the session, once; the next leaves it.
    assert_eq!(titles_sent(&prompts[0]["updates"]), [TITLE_A]);
    assert_eq!(titles_sent(&prompts[1]["updates"]), Vec::<&str>::new());
    assert_eq!(titles_sent(&prompts[2]["updates"]), [TITLE_B]);
    // It is the agent's description, for `agentctl list` too.
    assert_eq!(env.show(a)["description"], TITLE_A);
    assert_eq!(env.show(b)["description"], TITLE_B);

    let listed = &of_kind(&lines, "list")[0]["list"]["sessions"];
    assert_eq!(session_ids(listed), [b, a], "newest first: {listed}");
    assert_eq!(listed[0]["title"], TITLE_B);
    assert_eq!(listed[1]["title"], TITLE_A);

    // Page by page: every session once, newest first, no page over 50.
    let pages = of_kind(&lines, "page");
    assert_eq!(pages.len(), 2, "{} sessions in pages of 50", MORE + 2);
    let mut all = Vec::new();
    for (i, p) in pages.iter().enumerate() {
        let sessions = &p["page"]["sessions"];
        assert!(sessions.as_array().unwrap().len() <= 50);
        assert_eq!(
            p["page"].get("nextCursor").is_some_and(|c| !c.is_null()),
            i + 1 < pages.len(),
            "only the last page has no cursor: {}",
            p["page"]
        );
        all.extend(sessions.as_array().unwrap().iter().cloned());
    }
    let ids = session_ids(&Value::Array(all.clone()))
        .into_iter()
        .map(str::to_string)
        .collect::<Vec<_>>();
    assert_eq!(ids.len(), MORE + 2);
    assert_eq!(ids.iter().collect::<HashSet<_>>().len(), MORE + 2);
    // The untitled sessions came last, so they are listed first.
    assert_eq!(&ids[MORE..], [b, a]);
    let times: Vec<&str> = all
        .iter()
        .map(|s| s["updatedAt"].as_str().unwrap())
        .collect();
    assert!(
        times.windows(2).all(|w| w[0] >= w[1]),
        "newest first: {times:?}"
    );
    assert!(all[..MORE].iter().all(|s| s.get("title").is_none()));

    let bogus = of_kind(&lines, "error");
    assert_eq!(bogus.len(), 1, "{lines:?}");
    assert_eq!(bogus[0]["what"], "bogus cursor");
    assert_eq!(bogus[0]["code"], -32602, "{}", bogus[0]);
    assert!(
        bogus[0]["message"].as_str().unwrap().contains("nextCursor"),
        "{}",
        bogus[0]
    );
}

#[test]
fn what_the_person_got_wrong_is_invalid_params_typescript() {
    mistakes(Sdk::TypeScript);
}

#[test]
fn what_the_person_got_wrong_is_invalid_params_python() {
    mistakes(Sdk::Python);
}

fn mistakes(sdk: Sdk) {
    sdk.setup();
    let mock = MockServer::start();
    // Anthropic has a key, OpenAI none.
    let env = Env::new();
    env.set_daemon_env("ANTHROPIC_BASE_URL", &mock.url());
    env.set_daemon_env("ANTHROPIC_API_KEY", "sk-ant-test-key");
    env.write_config("default_model = \"anthropic:claude-test\"\n");
    let _daemon = env.start_daemon();
    mock.enqueue_all([
        Reply::tool("", "Bash", json!({"command": "sleep 3"})),
        Reply::text("Done after a moment."),
    ]);
    let cwd = env.project().display().to_string();
    // The directory that holds agentd's data directory.
    let root = env.data_dir().parent().unwrap().display().to_string();
    let lines = sdk.run(&env, &["errors", &cwd, &root]);

    assert!(of_kind(&lines, "accepted").is_empty(), "{lines:#?}");
    let errors = of_kind(&lines, "error");
    let said = |what: &str| -> (i64, String) {
        let e = errors
            .iter()
            .find(|e| e["what"] == what)
            .unwrap_or_else(|| panic!("no error for {what}: {lines:#?}"));
        (
            e["code"].as_i64().unwrap(),
            e["message"].as_str().unwrap().to_string(),
        )
    };
    for (what, hint) in [
        ("missing cwd", "/definitely/not/here-acp"),
        ("relative cwd", "absolute"),
        ("cwd holds the data directory", "overlap"),
        ("model without a key", "OPENAI_API_KEY"),
        ("not a model", "nonsense"),
        ("unknown mode", "accept-edits"),
        ("mode mid-turn", "wait for the turn to end"),
        ("model mid-turn", "wait for the turn to end"),
        ("default model without a key", "OPENAI_API_KEY"),
    ] {
        let (code, message) = said(what);
        assert_eq!(code, -32602, "{what}: {message}");
        assert!(message.contains(hint), "{what}: {message:?} lacks {hint:?}");
    }
    assert_eq!(errors.len(), 9, "{lines:#?}");

    // The turn the changes came during went on, and nothing changed.
    let prompt = of_kind(&lines, "prompt")[0];
    assert_eq!(prompt["stopReason"], "end_turn", "{prompt}");
    let id = of_kind(&lines, "new")[0]["sessionId"].as_str().unwrap();
    let shown = env.show(id);
    assert_eq!(shown["permission_mode"], "default", "{shown}");
    assert_eq!(shown["model"], "anthropic:claude-test", "{shown}");
    // Only the one good session was made.
    assert_eq!(env.agents().len(), 1, "{:?}", env.agents());
}
