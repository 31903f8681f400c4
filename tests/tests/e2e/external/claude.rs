//! Claude Code supervised by agentd (DESIGN §19): the real adapter
//! (`@zed-industries/claude-agent-acp`, pinned in tests/external-agents)
//! run through the built-in `claude-code` entry — its command found on the
//! daemon's PATH, the mock's URL and key given in `[agents.claude-code]
//! env` — under the agent's sandbox, with its model requests answered by
//! the mock. Each test asserts on what agentd recorded and on the requests
//! Claude Code made.

#![allow(clippy::unwrap_used)] // Tests: a panic is the failure report.

use std::time::Duration;

use agentd_e2e::attached::Attached;
use agentd_e2e::claude_code::{self, MODEL, SMALL_MODEL, turns, user_text};
use agentd_e2e::gitrepo::init_repo;
use agentd_e2e::mock::{Block, MockConfig, MockMessage, MockServer, Reply};
use agentd_e2e::parent;
use agentd_e2e::{Env, all_text, wait_until};
use agentd_shared::proto as pb;
use pb::permission_answer::Decision;
use serde_json::{Value, json};

struct World {
    mock: MockServer,
    env: Env,
}

impl World {
    /// None (after saying why) when node is missing outside CI.
    fn new() -> Option<World> {
        claude_code::installed()?;
        let mock = MockServer::start_with(MockConfig {
            log_requests: true,
            ..MockConfig::default()
        });
        claude_code::answer_auxiliary(&mock);
        let env = Env::with_mock(&mock);
        let bin = claude_code::dir().join("node_modules/.bin");
        let path = std::env::var("PATH").unwrap_or_default();
        env.set_daemon_env("PATH", &format!("{}:{path}", bin.display()));
        env.write_config(&format!(
            "[agents.claude-code]\nenv = {{ ANTHROPIC_BASE_URL = {url:?}, ANTHROPIC_API_KEY = {key:?}, \
             ANTHROPIC_DEFAULT_SONNET_MODEL = {MODEL:?}, ANTHROPIC_DEFAULT_OPUS_MODEL = {MODEL:?}, \
             ANTHROPIC_DEFAULT_HAIKU_MODEL = {SMALL_MODEL:?}, CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC = \"1\", \
             DISABLE_TELEMETRY = \"1\", DISABLE_AUTOUPDATER = \"1\" }}\n",
            url = mock.url(),
            key = claude_code::API_KEY,
        ));
        Some(World { mock, env })
    }

    fn turns(&self) -> Vec<agentd_e2e::mock::RecordedRequest> {
        turns(&self.mock.requests())
    }
}

fn said(entries: &[Value]) -> String {
    let answers: Vec<Value> = entries
        .iter()
        .filter(|e| e["role"] == "assistant")
        .cloned()
        .collect();
    all_text(&answers)
}

fn tool_uses(entries: &[Value]) -> Vec<Value> {
    entries
        .iter()
        .flat_map(|e| e["content"].as_array().cloned().unwrap_or_default())
        .filter(|b| b["type"] == "tool_use")
        .collect()
}

const LIMIT: Duration = Duration::from_secs(60);

#[test]
fn claude_code_runs_asks_through_agentd_and_takes_a_second_message() {
    let Some(w) = World::new() else { return };
    let _daemon = w.env.start_daemon();
    w.mock.enqueue(Reply::Message(
        MockMessage::new().with(Block::bash("toolu_01AgentdBash", "echo hi > f.txt")),
    ));
    w.mock.enqueue(Reply::text("Wrote f.txt"));
    w.mock.enqueue(Reply::text("It holds hi."));
    let id = w.env.start_agent(&[
        "--agent",
        "claude-code",
        "--permission-mode",
        "default",
        "Write hi to f.txt",
    ]);
    let file = w.env.project().join("f.txt");
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let mut attached = Attached::open(&w.env, &id).await;
        let ask = attached.next_ask().await;
        assert_eq!(ask.tool_name, "Bash", "{ask:?}");
        assert!(ask.input_json.contains("echo hi > f.txt"), "{ask:?}");
        assert!(!file.exists(), "nothing runs before the answer");
        assert_eq!(w.env.show(&id)["status"], "waiting");
        attached.answer(&ask, Decision::AllowOnce, "").await;
        attached.resolved(&ask).await;
    });
    let done = w.env.wait_status(&id, "completed", LIMIT);
    assert_eq!(done["result"], "Wrote f.txt");
    let first_cost = w.env.show(&id)["cost"]["usd"].as_f64().unwrap();
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "hi\n");
    assert_eq!(done["model"], "acp:claude-code");
    let entries = w.env.transcript(&id);
    let uses = tool_uses(&entries);
    assert_eq!(uses.len(), 1, "{uses:?}");
    assert_eq!(uses[0]["id"], "toolu_01AgentdBash");
    assert_eq!(uses[0]["acp_kind"], "execute");
    let requests = w.turns();
    assert_eq!(requests.len(), 2, "{requests:?}");
    assert_eq!(
        user_text(&requests[0]).as_deref(),
        Some("Write hi to f.txt")
    );
    let results: Vec<Value> = requests[1].messages().last().unwrap()["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["type"] == "tool_result")
        .cloned()
        .collect();
    assert_eq!(results.len(), 1, "the model got the command's result");

    // `send` is the next prompt, in the same session.
    w.env.ctl(&["send", &id, "What is in it?"]).expect_code(0);
    wait_until("the second answer", LIMIT, || {
        w.env.show(&id)["result"] == "It holds hi."
    });
    let requests = w.turns();
    assert_eq!(requests.len(), 3);
    assert_eq!(user_text(&requests[2]).as_deref(), Some("What is in it?"));
    let history = requests[2].json["messages"].to_string();
    assert!(
        history.contains("Wrote f.txt"),
        "the session kept its history"
    );
    // Claude Code kept its session and state in the agent's own home,
    // never in the user's ~/.claude or ~/.claude.json.
    let full_id = w.env.show(&id)["id"].as_str().unwrap().to_string();
    let home = w
        .env
        .data_dir()
        .join("external")
        .join(full_id)
        .join("claude-code");
    assert!(home.join("projects").is_dir(), "{}", home.display());
    assert!(home.join(".claude.json").is_file(), "{}", home.display());
    assert!(!w.env.home().join(".claude").exists());
    assert!(!w.env.home().join(".claude.json").exists());
    // Its cost is what it reported (usage_update), as its own figure.
    // (Claude Code prices the mock's tokens by its own table), the
    // second turn's added to the first's.
    let shown = w.env.show(&id);
    assert_eq!(shown["cost_reported"], true, "{shown}");
    assert!(first_cost > 0.0, "{first_cost}");
    assert!(
        shown["cost"]["usd"].as_f64().unwrap() > first_cost,
        "{shown} after {first_cost}"
    );
}

#[test]
fn a_daemon_killed_mid_turn_revives_claude_code_with_its_history() {
    let Some(w) = World::new() else { return };
    let daemon = w.env.start_daemon();
    w.mock.enqueue(Reply::Message(
        MockMessage::new()
            .with(Block::text("Sleeping first."))
            .with(Block::bash("toolu_01LongSleep", "sleep 60")),
    ));
    w.mock.enqueue(Reply::text("Picked up after the restart."));
    let id = w
        .env
        .start_agent(&["--agent", "claude-code", "Take a long nap"]);
    wait_until("the sleep starts", LIMIT, || {
        !tool_uses(&w.env.transcript(&id)).is_empty()
    });
    std::thread::sleep(Duration::from_millis(500));
    daemon.kill9();
    let _daemon = w.env.start_daemon();
    let done = w.env.wait_status(&id, "completed", LIMIT);
    assert_eq!(done["result"], "Picked up after the restart.");
    let text = said(&w.env.transcript(&id));
    assert!(text.contains("Sleeping first."), "{text}");
    let requests = w.turns();
    assert_eq!(requests.len(), 2, "{requests:?}");
    let after = &requests[1];
    assert!(
        user_text(after).unwrap_or_default().contains("cut short"),
        "{:?}",
        user_text(after)
    );
    let history = after.json["messages"].to_string();
    assert!(
        history.contains("Take a long nap") && history.contains("Sleeping first."),
        "the reloaded session has its history: {history}"
    );
}

#[test]
fn claude_code_in_a_worktree_writes_there_only() {
    let Some(w) = World::new() else { return };
    let repo = w.env.project().canonicalize().unwrap();
    init_repo(&repo);
    let _daemon = w.env.start_daemon();
    w.mock.enqueue(Reply::Message(
        MockMessage::new().with(Block::bash("toolu_01TreeWrite", "echo tree > g.txt")),
    ));
    w.mock.enqueue(Reply::text("Wrote g.txt in the tree"));
    let out = w.env.ctl(&[
        "run",
        "--agent",
        "claude-code",
        "--worktree",
        "--name",
        "cc-tree",
        "Write g.txt",
    ]);
    out.expect_code(0);
    let agent = w.env.show("cc-tree");
    let tree = std::path::PathBuf::from(agent["worktree"]["path"].as_str().unwrap());
    assert_eq!(
        std::fs::read_to_string(tree.join("g.txt")).unwrap(),
        "tree\n"
    );
    assert!(!repo.join("g.txt").exists());
    assert_eq!(agent["worktree"]["state"], "kept", "{agent}");
    // Claude Code was told where it works.
    let first = &w.turns()[0];
    assert!(first.json.to_string().contains(&tree.display().to_string()));
}

#[test]
fn an_agentd_agent_hands_a_task_to_claude_code() {
    let Some(w) = World::new() else { return };
    let _daemon = w.env.start_daemon();
    parent::answers(
        &w.mock,
        Reply::Message(MockMessage::new().with(Block::agent(
            "toolu_01HandOff",
            json!({"description": "ask claude", "prompt": "Say which tool you are",
                   "subagent_type": "claude-code"}),
        ))),
        Reply::text("The child answered."),
    );
    w.mock
        .enqueue(Reply::text("I am Claude Code under agentd."));
    let out = w.env.ctl(&[
        "run",
        "--model",
        agentd_e2e::mock::MODEL,
        "--name",
        "hands-off",
        "PARENT go",
    ]);
    out.expect_code(0);
    let parent = w.env.show("hands-off");
    assert_eq!(parent["result"], "The child answered.");
    let children: Vec<Value> = w
        .env
        .agents()
        .into_iter()
        .filter(|a| a["parent_id"] == parent["id"])
        .collect();
    assert_eq!(children.len(), 1);
    assert_eq!(children[0]["subagent_type"], "claude-code");
    assert_eq!(children[0]["result"], "I am Claude Code under agentd.");
    // The parent's Agent tool named it, and got its answer back.
    let first = w
        .mock
        .requests()
        .into_iter()
        .find(parent::is_parent)
        .unwrap();
    let agent_tool = first.json["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "Agent")
        .unwrap()
        .clone();
    assert!(
        agent_tool["description"]
            .as_str()
            .unwrap()
            .contains("claude-code"),
        "{agent_tool}"
    );
    let second = parent::request(&w.mock, 3);
    assert!(
        second.json["messages"]
            .to_string()
            .contains("I am Claude Code under agentd."),
        "the parent read the child's answer"
    );
}
