//! Claude Code's ACP adapter (`@zed-industries/claude-agent-acp`, pinned in
//! tests/external-agents), driven over its stdio as agentd drives an
//! external agent, offline against the mock model: what it advertises, the
//! requests each turn makes, how it asks permission for Bash, and whether a
//! restarted adapter loads or resumes a session. These tests pin down the
//! behaviour the external-agent support relies on (DESIGN §19), so a new
//! version of the adapter that changes it fails here first.
//!
//! They need node; without it they say `skipped` and pass, except under CI
//! (`CI` set), where node is installed by scripts/test-deps and a skip fails.

#![allow(clippy::unwrap_used)] // Tests: a panic is the failure report.

use std::path::{Path, PathBuf};

use agentd_e2e::acp_stdio::{AcpAgent, Handler, agent_text, chunk_text, refuse};
use agentd_e2e::claude_code::{self, RequestKind, STEP_LIMIT};
use agentd_e2e::mock::{Block, MockConfig, MockMessage, MockServer, RecordedRequest, Reply};
use serde_json::{Value, json};
use tempfile::TempDir;

/// A mock, a HOME and a project directory for one test.
struct Probe {
    mock: MockServer,
    entry: PathBuf,
    home: TempDir,
    project: TempDir,
}

impl Probe {
    /// None (after saying why) when node is missing outside CI.
    fn new() -> Option<Probe> {
        let entry = claude_code::installed()?;
        let mock = MockServer::start_with(MockConfig {
            api_key: Some(claude_code::API_KEY.into()),
            log_requests: true,
            ..MockConfig::default()
        });
        claude_code::answer_auxiliary(&mock);
        Some(Probe {
            mock,
            entry,
            home: TempDir::new().unwrap(),
            project: TempDir::new().unwrap(),
        })
    }

    fn cwd(&self) -> &Path {
        self.project.path()
    }

    /// Starts the adapter and initializes it; the agent and its answer.
    fn start(&self) -> (AcpAgent, Value) {
        let cmd = claude_code::command(&self.entry, &self.mock.url(), self.home.path());
        let stderr = self
            .home
            .path()
            .join(format!("adapter-{}.stderr", self.mock.requests().len()));
        let mut agent = AcpAgent::spawn(cmd, stderr).unwrap();
        let init = agent
            .request(
                "initialize",
                json!({
                    "protocolVersion": 1,
                    "clientCapabilities": {
                        "fs": {"readTextFile": false, "writeTextFile": false},
                        "terminal": false,
                    },
                }),
                STEP_LIMIT,
                &mut refuse,
            )
            .unwrap();
        (agent, init)
    }

    fn new_session(&self, agent: &mut AcpAgent) -> String {
        let made = agent
            .request(
                "session/new",
                json!({"cwd": self.cwd(), "mcpServers": []}),
                STEP_LIMIT,
                &mut refuse,
            )
            .unwrap();
        made["sessionId"].as_str().unwrap().to_string()
    }

    /// Reopens `session` with `method` (`session/load`, `session/resume`).
    fn reopen(&self, agent: &mut AcpAgent, method: &str, session: &str) -> Value {
        agent
            .request(
                method,
                json!({"sessionId": session, "cwd": self.cwd(), "mcpServers": []}),
                STEP_LIMIT,
                &mut refuse,
            )
            .unwrap_or_else(|e| panic!("{method} failed: {e}"))
    }

    /// The turn requests the mock has seen.
    fn turns(&self) -> Vec<RecordedRequest> {
        claude_code::turns(&self.mock.requests())
    }

    /// Every auxiliary request, as `METHOD path`.
    fn auxiliary(&self) -> Vec<String> {
        self.mock
            .requests()
            .iter()
            .filter(|r| claude_code::kind(r) == RequestKind::Auxiliary)
            .map(|r| format!("{} {}", r.method, r.path))
            .collect()
    }
}

fn prompt(agent: &mut AcpAgent, session: &str, text: &str, handler: Handler<'_>) -> Value {
    agent
        .request(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]}),
            STEP_LIMIT,
            handler,
        )
        .unwrap_or_else(|e| panic!("session/prompt failed: {e}"))
}

#[test]
fn a_text_turn_streams_the_reply_and_makes_one_model_request() {
    let Some(probe) = Probe::new() else { return };
    probe.mock.enqueue(Reply::text("Hello from the mock model"));
    let (mut agent, init) = probe.start();
    assert_eq!(init["protocolVersion"], 1, "{init}");
    assert_eq!(
        init["agentInfo"]["version"],
        claude_code::pinned_version(),
        "{init}"
    );
    let session = probe.new_session(&mut agent);

    let done = prompt(&mut agent, &session, "Say hello", &mut refuse);
    assert_eq!(done["stopReason"], "end_turn", "{done}");
    let updates = agent.updates(&session);
    assert_eq!(agent_text(&updates), "Hello from the mock model");

    let turns = probe.turns();
    assert_eq!(turns.len(), 1, "one model call: {:?}", probe.auxiliary());
    let r = &turns[0];
    assert_eq!(r.query.as_deref(), Some("beta=true"));
    assert_eq!(r.header("x-api-key"), Some(claude_code::API_KEY));
    assert_eq!(r.model(), Some(claude_code::MODEL));
    assert_eq!(claude_code::user_text(r).as_deref(), Some("Say hello"));
    assert!(
        r.tool_names().iter().any(|t| t == "Bash"),
        "{:?}",
        r.tool_names()
    );
    assert_eq!(r.json["stream"], true);
    // Besides the turn, only the start-up reachability probe: no title,
    // quota or small-model request.
    assert_eq!(probe.auxiliary(), ["HEAD /"]);
    assert!(
        agent.requests_to_client().is_empty(),
        "no question for a text turn: {:?}",
        agent.requests_to_client()
    );
}

#[test]
fn bash_asks_permission_and_runs_once_allowed() {
    let Some(probe) = Probe::new() else { return };
    let tool_id = "toolu_01ProbeBashWrite";
    probe.mock.enqueue(Reply::Message(
        MockMessage::new().with(Block::bash(tool_id, "echo hi > f.txt")),
    ));
    probe.mock.enqueue(Reply::text("Wrote f.txt"));
    let (mut agent, _) = probe.start();
    let session = probe.new_session(&mut agent);

    let file = probe.cwd().join("f.txt");
    let mut asked = Vec::new();
    let mut allow = |method: &str, params: &Value| {
        if method != "session/request_permission" {
            return refuse(method, params);
        }
        asked.push((params.clone(), file.exists()));
        let option = params["options"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|o| o["kind"] == "allow_once")
            .unwrap_or_else(|| panic!("no allow_once option: {params}"));
        Ok(json!({"outcome": {"outcome": "selected", "optionId": option["optionId"]}}))
    };
    let done = prompt(&mut agent, &session, "Write hi to f.txt", &mut allow);
    assert_eq!(done["stopReason"], "end_turn", "{done}");

    assert_eq!(asked.len(), 1, "one question: {asked:?}");
    let (question, existed) = &asked[0];
    assert!(!existed, "the command ran before it was allowed");
    assert_eq!(question["sessionId"], session.as_str());
    assert_eq!(question["toolCall"]["toolCallId"], tool_id);
    assert_eq!(question["toolCall"]["kind"], "execute");
    assert_eq!(
        question["toolCall"]["rawInput"]["command"],
        "echo hi > f.txt"
    );
    let options: Vec<(&str, &str)> = question["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| (o["optionId"].as_str().unwrap(), o["kind"].as_str().unwrap()))
        .collect();
    assert_eq!(
        options,
        [
            ("allow_always", "allow_always"),
            ("allow", "allow_once"),
            ("reject", "reject_once"),
        ]
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "hi\n");

    let updates = agent.updates(&session);
    let of_tool: Vec<&Value> = updates
        .iter()
        .filter(|u| u["toolCallId"] == tool_id)
        .collect();
    assert_eq!(of_tool[0]["sessionUpdate"], "tool_call", "{of_tool:?}");
    assert_eq!(of_tool[0]["kind"], "execute");
    let last = of_tool.last().unwrap();
    assert_eq!(last["sessionUpdate"], "tool_call_update", "{of_tool:?}");
    assert_eq!(last["status"], "completed", "{of_tool:?}");
    assert_eq!(agent_text(&updates), "Wrote f.txt");

    let turns = probe.turns();
    assert_eq!(turns.len(), 2, "two model calls: {:?}", probe.auxiliary());
    let result = turns[1].messages().last().unwrap()["content"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["type"] == "tool_result")
        .cloned()
        .unwrap_or_else(|| panic!("no tool_result in {}", turns[1].body_text()));
    assert_eq!(result["tool_use_id"], tool_id);
    assert_ne!(result["is_error"], true, "{result}");
    assert_eq!(probe.auxiliary(), ["HEAD /"]);
}

/// Whether a conversation survives the adapter's death: it advertises
/// `loadSession` and `session/resume`, keeps sessions under
/// `$HOME/.claude/projects`, and a new process with the same HOME loads
/// one (replaying it as updates) or resumes one (without a replay); either
/// way the next turn sends the model the whole history.
#[test]
fn a_restarted_adapter_loads_or_resumes_the_session() {
    let Some(probe) = Probe::new() else { return };
    probe.mock.enqueue_all([
        Reply::text("first answer"),
        Reply::text("second answer"),
        Reply::text("third answer"),
        Reply::text("fourth answer"),
    ]);
    let (mut agent, init) = probe.start();
    let caps = &init["agentCapabilities"];
    assert_eq!(caps["loadSession"], true, "{init}");
    assert!(caps["sessionCapabilities"]["resume"].is_object(), "{init}");
    let session = probe.new_session(&mut agent);
    prompt(&mut agent, &session, "one", &mut refuse);
    prompt(&mut agent, &session, "two", &mut refuse);
    stop(&mut agent);
    let stored = probe.home.path().join(".claude/projects");
    let files = walk(&stored);
    assert!(
        files
            .iter()
            .any(|f| f.ends_with(format!("{session}.jsonl"))),
        "{files:?}"
    );

    let (mut agent, _) = probe.start();
    probe.reopen(&mut agent, "session/load", &session);
    let replay = agent.updates(&session);
    let said = chunk_text(&replay, "user_message_chunk");
    assert!(
        said.find("one").unwrap() < said.find("two").unwrap(),
        "{said}"
    );
    assert_eq!(agent_text(&replay), "first answersecond answer");
    let done = prompt(&mut agent, &session, "three", &mut refuse);
    assert_eq!(done["stopReason"], "end_turn", "{done}");
    assert_history(
        &probe.turns()[2],
        &["first answer", "second answer"],
        "three",
    );
    stop(&mut agent);

    let (mut agent, _) = probe.start();
    probe.reopen(&mut agent, "session/resume", &session);
    assert!(agent.updates(&session).is_empty(), "resume replays nothing");
    prompt(&mut agent, &session, "four", &mut refuse);
    assert_eq!(agent_text(&agent.updates(&session)), "fourth answer");
    assert_history(
        &probe.turns()[3],
        &["first answer", "second answer", "third answer"],
        "four",
    );
}

/// Stops the adapter as a supervisor should (SIGTERM, then waiting for
/// its process group to end), so that Claude Code writes the session out.
fn stop(agent: &mut AcpAgent) {
    assert!(
        agent.stop(STEP_LIMIT),
        "the adapter did not end within {STEP_LIMIT:?} of a SIGTERM; its stderr:\n{}",
        agent.stderr_tail()
    );
}

/// `r` carries the earlier answers, in order, and ends with `last`.
fn assert_history(r: &RecordedRequest, answers: &[&str], last: &str) {
    let said: Vec<String> = r
        .messages()
        .iter()
        .filter(|m| m["role"] == "assistant")
        .map(|m| agentd_e2e::mock::text_of(&m["content"]))
        .collect();
    assert_eq!(said, answers, "{}", r.body_text());
    assert_eq!(claude_code::user_text(r).as_deref(), Some(last));
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(walk(&path));
        } else {
            found.push(path);
        }
    }
    found
}
