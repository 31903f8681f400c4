//! Gemini CLI under agentd (DESIGN §19), offline: the real `gemini --acp`
//! (@google/gemini-cli, pinned in tests/external-agents) on the daemon's
//! PATH, so agentd runs it as the built-in `gemini`, against the mock's
//! Gemini API (`GOOGLE_GEMINI_BASE_URL`, `GEMINI_API_KEY` given in
//! `[agents.gemini]`, the model with `--model` so that no routing call is
//! made). The user's HOME holds a Gemini CLI login choice, which the
//! agent's private home (`GEMINI_CLI_HOME`) starts with; agentd adds what
//! it needs under the sandbox (no pseudo-terminal shell).

#![allow(clippy::unwrap_used)] // Tests: a panic is the failure report.

use std::time::Duration;

use agentd_e2e::attached::Attached;
use agentd_e2e::gemini_cli;
use agentd_e2e::mock::{Api, Block, MockConfig, MockMessage, MockServer, RecordedRequest, Reply};
use agentd_e2e::{Env, all_text, wait_until};
use agentd_shared::proto as pb;
use pb::permission_answer::Decision;
use serde_json::{Value, json};

const MODEL: &str = "gemini-test-main";
const KEY: &str = "gemini-test-key";
const LOGIN_CHOICE: &str = "{\"security\": {\"auth\": {\"selectedType\": \"gemini-api-key\"}}}\n";
const LIMIT: Duration = Duration::from_secs(60);

struct World {
    mock: MockServer,
    env: Env,
}

impl World {
    /// None (after saying why) when node is missing outside CI.
    fn new() -> Option<World> {
        let bin = gemini_cli::installed()?;
        let mock = MockServer::start_with(MockConfig {
            log_requests: true,
            api_key: Some(KEY.into()),
            ..MockConfig::default()
        });
        // Anything but a turn (a one-shot generateContent) gets a short
        // answer, so the queue serves turns only.
        mock.when(|r| !is_turn(r), Reply::text("{}"));
        let env = Env::with_mock(&mock);
        let path = std::env::var("PATH").unwrap_or_default();
        env.set_daemon_env(
            "PATH",
            &format!("{}:{path}", bin.parent().unwrap().display()),
        );
        env.write_config(&format!(
            "[agents.gemini]\nargs = [\"--acp\", \"--model\", {MODEL:?}]\n\
             env = {{ GEMINI_API_KEY = {KEY:?}, GOOGLE_GEMINI_BASE_URL = {url:?} }}\n",
            url = mock.url(),
        ));
        let own = env.home().join(".gemini");
        std::fs::create_dir_all(&own).unwrap();
        std::fs::write(own.join("settings.json"), LOGIN_CHOICE).unwrap();
        Some(World { mock, env })
    }

    fn turns(&self) -> Vec<RecordedRequest> {
        self.mock.requests().into_iter().filter(is_turn).collect()
    }
}

/// A model call of a turn: a streamed generateContent.
fn is_turn(r: &RecordedRequest) -> bool {
    r.api == Api::Gemini && r.path.ends_with(":streamGenerateContent")
}

/// The text of the user's last content in a request.
fn last_user_text(r: &RecordedRequest) -> String {
    let contents = r.json["contents"].as_array().cloned().unwrap_or_default();
    let last = contents
        .iter()
        .rev()
        .find(|c| c["role"] == "user")
        .cloned()
        .unwrap_or(Value::Null);
    last["parts"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p["text"].as_str())
        .collect::<Vec<_>>()
        .join("")
}

#[test]
fn gemini_cli_runs_asks_through_agentd_and_keeps_to_its_own_home() {
    let Some(w) = World::new() else { return };
    let _daemon = w.env.start_daemon();
    w.mock
        .enqueue(Reply::Message(MockMessage::new().with(Block::tool(
            "",
            "run_shell_command",
            json!({"command": "echo hi > f.txt", "description": "Write hi to f.txt"}),
        ))));
    w.mock.enqueue(Reply::text("Wrote f.txt"));
    w.mock.enqueue(Reply::text("It holds hi."));
    let id = w.env.start_agent(&[
        "--agent",
        "gemini",
        "--permission-mode",
        "default",
        "Write hi to f.txt",
    ]);
    let file = w.env.project().join("f.txt");
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let mut attached = Attached::open(&w.env, &id).await;
        // Gemini CLI's usage reports (play.googleapis.com) are not on its
        // proxy's list: asked, and refused here as a person would.
        let mut ask = attached.next_ask().await;
        while ask.tool_name == "Network" {
            assert!(
                !ask.summary.contains("127.0.0.1"),
                "its model is allowed: {ask:?}"
            );
            attached.answer(&ask, Decision::Deny, "").await;
            ask = attached.next_ask().await;
        }
        // Gemini CLI asks before it reports the call, with the command as
        // the call's title and no raw input: the ask shows the title.
        assert_eq!(ask.tool_name, "Bash", "{ask:?}");
        assert_eq!(ask.summary, "echo hi > f.txt", "{ask:?}");
        assert!(ask.input_json.contains("echo hi > f.txt"), "{ask:?}");
        assert!(!file.exists(), "nothing runs before the answer");
        assert_eq!(w.env.show(&id)["status"], "waiting");
        attached.answer(&ask, Decision::AllowOnce, "").await;
        attached.resolved(&ask).await;
    });
    let done = w.env.wait_status(&id, "completed", LIMIT);
    assert_eq!(done["result"], "Wrote f.txt");
    assert_eq!(done["model"], "acp:gemini");
    let turns = w.turns();
    assert_eq!(turns.len(), 2, "{turns:?}");
    assert_eq!(turns[0].model(), Some(MODEL));
    assert!(last_user_text(&turns[0]).contains("Write hi to f.txt"));
    let answer = turns[1].json["contents"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert!(
        answer["parts"][0]["functionResponse"]["name"] == "run_shell_command",
        "the model got the command's result: {answer}"
    );
    assert_eq!(
        std::fs::read_to_string(&file).ok().as_deref(),
        Some("hi\n"),
        "the command ran: {answer}"
    );
    // `send` is the next prompt, in the same session.
    w.env.ctl(&["send", &id, "What is in it?"]).expect_code(0);
    wait_until("the second answer", LIMIT, || {
        w.env.show(&id)["result"] == "It holds hi."
    });
    let turns = w.turns();
    assert_eq!(turns.len(), 3);
    assert!(last_user_text(&turns[2]).contains("What is in it?"));
    assert!(
        turns[2].json["contents"]
            .to_string()
            .contains("Wrote f.txt"),
        "the session kept its history"
    );
    let entries = w.env.transcript(&id);
    assert!(all_text(&entries).contains("It holds hi."));
    // Its state went to its own home, which started with the user's login
    // choice; the user's ~/.gemini holds what it held.
    let full_id = w.env.show(&id)["id"].as_str().unwrap().to_string();
    let home = w
        .env
        .data_dir()
        .join("external")
        .join(full_id)
        .join("gemini/.gemini");
    // ... and, since it runs under the sandbox, which grants no terminal
    // devices, with its pseudo-terminal shell off (the command above ran).
    let settings: Value =
        serde_json::from_slice(&std::fs::read(home.join("settings.json")).unwrap()).unwrap();
    assert_eq!(
        settings,
        json!({"security": {"auth": {"selectedType": "gemini-api-key"}},
               "tools": {"shell": {"enableInteractiveShell": false}}})
    );
    let own: Vec<String> = std::fs::read_dir(w.env.home().join(".gemini"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .collect();
    assert_eq!(
        own,
        vec!["settings.json"],
        "nothing else in the user's ~/.gemini"
    );
}

/// Gemini CLI 0.61.0 offers `loadSession`, and a new process sometimes
/// reloads the session and sometimes refuses ("No previous sessions found
/// for this project": it records the session anew before it looks, and
/// whether the old record is still there to find depends on timing; both
/// were seen). It also answers the load before its replay of the history
/// is written, so agentd drops what comes just after the answer (the
/// deterministic test of that is external_reload.rs); the answer below
/// is the new turn's words alone. Either way agentd keeps its word: the next message is
/// answered in the same session, with its history; or the agent is blocked
/// with Gemini's reason and its transcript. Never a new session in the old
/// one's place.
#[test]
fn after_a_daemon_kill_gemini_cli_goes_on_in_its_session_or_is_blocked_never_in_a_new_one() {
    let Some(w) = World::new() else { return };
    let daemon = w.env.start_daemon();
    w.mock.enqueue(Reply::text("First answer."));
    let id = w
        .env
        .start_agent(&["--agent", "gemini", "Remember the word kumquat"]);
    w.env.wait_status(&id, "completed", LIMIT);
    // Gemini CLI records the turn a moment after it ends.
    std::thread::sleep(Duration::from_secs(2));
    daemon.kill9();
    let _daemon = w.env.start_daemon();
    w.mock.enqueue(Reply::text("You said kumquat."));
    w.env.ctl(&["send", &id, "What was the word?"]);
    let deadline = std::time::Instant::now() + LIMIT;
    let shown = loop {
        let shown = w.env.show(&id);
        if shown["result"] == "You said kumquat."
            || shown["resume_blocked_reason"] == "external_agent_cannot_resume"
        {
            break shown;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "neither the answer nor blocked: {shown}\n{}\n{}",
            all_text(&w.env.transcript(&id)),
            w.env.daemon_log_text(),
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    let turns = w.turns();
    if shown["result"] == "You said kumquat." {
        assert_eq!(turns.len(), 2, "{turns:?}");
        let history = turns[1].json["contents"].to_string();
        assert!(
            history.contains("Remember the word kumquat") && history.contains("First answer."),
            "the reloaded session has its history: {history}"
        );
    } else {
        let detail = shown["resume_blocked_detail"].to_string();
        assert!(
            detail.contains("session/load") && detail.contains("No previous sessions found"),
            "{shown}"
        );
        assert_eq!(turns.len(), 1, "no new session answered in its place");
    }
    let text = all_text(&w.env.transcript(&id));
    assert!(
        text.contains("Remember the word kumquat") && text.contains("First answer."),
        "{text}"
    );
}
