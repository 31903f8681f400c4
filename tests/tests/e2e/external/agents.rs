//! External agents over ACP (DESIGN §19), driven through the scripted ACP
//! agent of tests/acp-agent (the official TypeScript SDK): the real daemon
//! runs it as `[agents.scripted]`, and each test asserts on what agentd
//! recorded and showed, and on what the agent received (its log).

#![allow(clippy::unwrap_used)] // Tests: a panic is the failure report.

use std::path::{Path, PathBuf};
use std::time::Duration;

use agentd_e2e::acp_agent::{self, log_lines, script};
use agentd_e2e::attached::Attached;
use agentd_e2e::gitrepo::init_repo;
use agentd_e2e::mock::{Block, MockMessage, MockServer, Reply};
use agentd_e2e::parent;
use agentd_e2e::{Env, all_text, wait_until};
use agentd_shared::proto as pb;
use pb::permission_answer::Decision;
use serde_json::{Value, json};

/// An environment with `[agents.scripted]` configured: the agent's state
/// and log live in the test's temp root, which it may write.
pub struct World {
    pub env: Env,
    pub state: PathBuf,
    pub log: PathBuf,
}

impl World {
    pub fn new(extra_env: &str, extra_config: &str) -> World {
        World::in_env(Env::new(), extra_env, extra_config)
    }

    /// In `env` (one with a mock model, say).
    pub fn in_env(env: Env, extra_env: &str, extra_config: &str) -> World {
        let agent = acp_agent::setup().unwrap();
        let root = env.home().join("scripted");
        let state = root.join("state");
        std::fs::create_dir_all(&state).unwrap();
        let log = root.join("agent.log");
        env.write_config(&format!(
            "{extra_config}\n[agents.scripted]\ncommand = \"node\"\nargs = [{agent:?}]\n\
             env = {{ TEST_AGENT_STATE = {state:?}, TEST_AGENT_LOG = {log:?}, MY_SETTING = \"from-config\"{extra_env} }}\n\
             writable = [{root:?}]\n",
            agent = agent.display().to_string(),
            state = state.display().to_string(),
            log = log.display().to_string(),
            root = root.display().to_string(),
        ));
        World { env, state, log }
    }

    /// How many processes of this world's agent run (found by the state
    /// directory in their environment).
    pub fn processes(&self) -> usize {
        let marker = format!("TEST_AGENT_STATE={}", self.state.display());
        std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(|e| std::fs::read(e.ok()?.path().join("environ")).ok())
            .filter(|env| env.split(|b| *b == 0).any(|v| v == marker.as_bytes()))
            .count()
    }

    /// What the agent received, by method.
    pub fn received(&self, method: &str) -> Vec<Value> {
        log_lines(&self.log)
            .into_iter()
            .filter(|l| l["method"] == method)
            .collect()
    }

    /// The prompts' texts the agent received, in order.
    pub fn prompts(&self) -> Vec<String> {
        self.received("session/prompt")
            .iter()
            .map(|p| {
                p["params"]["prompt"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter_map(|b| b["text"].as_str())
                    .collect::<Vec<_>>()
                    .join("")
            })
            .collect()
    }
}

/// Starts a background external agent on `prompt`; its id.
fn start(w: &World, extra: &[&str], prompt: &str) -> String {
    let mut args = vec!["run", "--agent", "scripted", "--background"];
    args.extend_from_slice(extra);
    args.push(prompt);
    let out = w.env.ctl(&args);
    out.expect_code(0);
    out.stdout.trim().to_string()
}

/// Starts an agent that says `words`, then sleeps in its turn; its id,
/// once the words are recorded.
fn start_saying(w: &World, words: &str) -> String {
    let id = start(w, &[], &script(&json!([{"say": words}, {"sleep": 60000}])));
    wait_until("the words are recorded", Duration::from_secs(20), || {
        said(&w.env.transcript(&id)).contains(words)
    });
    id
}

/// What the agent said (its answers' text, not the prompts').
pub fn said(entries: &[Value]) -> String {
    let answers: Vec<Value> = entries
        .iter()
        .filter(|e| e["role"] == "assistant")
        .cloned()
        .collect();
    all_text(&answers)
}

fn blocks(entries: &[Value], kind: &str) -> Vec<Value> {
    entries
        .iter()
        .flat_map(|e| e["content"].as_array().cloned().unwrap_or_default())
        .filter(|b| b["type"] == kind)
        .collect()
}

#[test]
fn an_external_agent_runs_and_every_update_is_recorded() {
    let w = World::new("", "");
    let _daemon = w.env.start_daemon();
    let cwd = w.env.project().canonicalize().unwrap();
    let prompt = script(&json!([
        {"think": "planning the change"},
        {"plan": [{"content": "write the file", "status": "in_progress"},
                  {"content": "report", "status": "pending"}]},
        {"say": "Writing notes.txt now."},
        {"tool": {"id": "w1", "title": "Write notes.txt", "kind": "edit",
                  "rawInput": {"file_path": "notes.txt"}, "locations": [{"path": "notes.txt", "line": 1}]},
         "then": {"status": "completed", "text": "wrote it",
                  "diff": {"path": "notes.txt", "oldText": null, "newText": "hello\n"}, "writeFile": true}},
        {"tool": {"id": "x1", "title": "Run false", "kind": "execute", "rawInput": {"command": "false"}},
         "then": {"status": "failed", "text": "exit 1"}},
        {"usage": {"inputTokens": 120, "outputTokens": 30, "cachedReadTokens": 7}},
        {"say": "All done."}
    ]));
    let out = w
        .env
        .ctl(&["run", "--agent", "scripted", "--name", "ext-one", &prompt]);
    out.expect_code(0);
    assert!(out.stdout.contains("All done."), "{}", out.stdout);

    let agent = w.env.show("ext-one");
    assert_eq!(agent["status"], "completed");
    assert_eq!(agent["model"], "acp:scripted");
    assert_eq!(agent["subagent_type"], "scripted");
    assert_eq!(agent["result"], "All done.");
    assert_eq!(agent["turns"], 1);
    assert_eq!(agent["tool_uses"], 2);
    assert_eq!(agent["usage"]["input_tokens"], 120);
    assert_eq!(agent["usage"]["cache_read_input_tokens"], 7);
    assert_eq!(agent["plan"][0]["content"], "write the file");
    assert_eq!(agent["plan"][0]["status"], "in_progress");

    let entries = w.env.transcript("ext-one");
    let thinking = blocks(&entries, "thinking");
    assert_eq!(thinking[0]["thinking"], "planning the change");
    let texts = all_text(&entries);
    assert!(
        texts.contains("Writing notes.txt now.") && texts.contains("All done."),
        "{texts}"
    );
    let uses = blocks(&entries, "tool_use");
    assert_eq!(uses.len(), 2, "{uses:?}");
    assert_eq!(uses[0]["id"], "w1");
    assert_eq!(uses[0]["name"], "Write notes.txt");
    assert_eq!(uses[0]["acp_kind"], "edit");
    assert_eq!(uses[0]["input"]["file_path"], "notes.txt");
    let results = blocks(&entries, "tool_result");
    assert_eq!(results[0]["content"], "wrote it");
    assert_eq!(results[0]["is_error"], false);
    assert_eq!(results[1]["content"], "exit 1");
    assert_eq!(results[1]["is_error"], true);
    // The diff is recorded beside the result, with the absolute path.
    let change = entries
        .iter()
        .flat_map(|e| e["file_changes"].as_array().cloned().unwrap_or_default())
        .next()
        .expect("a file change");
    assert_eq!(change["path"], cwd.join("notes.txt").display().to_string());
    assert_eq!(
        std::fs::read_to_string(cwd.join("notes.txt")).unwrap(),
        "hello\n"
    );
    // The last answer carries the turn's stop reason and usage.
    let last = entries
        .iter()
        .rev()
        .find(|e| e["role"] == "assistant")
        .unwrap();
    assert_eq!(last["stop_reason"], "end_turn");
    assert_eq!(last["usage"]["output_tokens"], 30);

    // What agentd sent: its handshake, a session in the agent's
    // directory, and the prompt.
    let init = &w.received("initialize")[0];
    assert_eq!(init["params"]["protocolVersion"], 1);
    assert_eq!(init["params"]["clientCapabilities"]["terminal"], false);
    let new = &w.received("session/new")[0];
    assert_eq!(new["params"]["cwd"], cwd.display().to_string());
    assert_eq!(new["params"]["mcpServers"], json!([]));
    assert_eq!(w.prompts(), vec![prompt]);
    let session = w.env.rpc(async |c| {
        c.get_agent(pb::GetAgentRequest {
            id: "ext-one".into(),
        })
        .await
        .unwrap()
        .into_inner()
    });
    assert_eq!(session.executor, "scripted");
    assert!(!session.external_session_id.is_empty());
    let shown = w.env.ctl(&["show", "ext-one"]);
    assert!(
        shown.stdout.contains(&format!(
            "scripted over ACP, its session {}",
            session.external_session_id
        )),
        "{}",
        shown.stdout
    );
    assert_eq!(
        new_session_ids(&w),
        vec![session.external_session_id.clone()],
        "one session, the one the record keeps"
    );
}

/// The session ids the agent's state directory holds.
fn new_session_ids(w: &World) -> Vec<String> {
    let mut ids: Vec<String> = std::fs::read_dir(&w.state)
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().to_string_lossy().to_string();
            name.strip_suffix(".jsonl").map(String::from)
        })
        .collect();
    ids.sort();
    ids
}

#[test]
fn its_environment_has_the_entrys_variables_and_not_agentds_keys() {
    let w = World::new("", "");
    w.env
        .set_daemon_env("ANTHROPIC_API_KEY", "sk-ant-daemons-own");
    let _daemon = w.env.start_daemon();
    let prompt = script(&json!([
        {"env": "MY_SETTING"},
        {"env": "ANTHROPIC_API_KEY"},
        {"shell": "touch inside.txt && echo ok"},
        {"shell": "touch /etc/agentd-external-escape 2>&1; echo done"}
    ]));
    let out = w.env.ctl(&["run", "--agent", "scripted", &prompt]);
    out.expect_code(0);
    assert!(
        out.stdout.contains("env MY_SETTING=from-config"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("env ANTHROPIC_API_KEY=<unset>"),
        "{}",
        out.stdout
    );
    assert!(w.env.project().join("inside.txt").exists());
    // Under the agent's sandbox it writes in its directory only.
    assert!(!Path::new("/etc/agentd-external-escape").exists());
    assert!(out.stdout.contains("Permission denied"), "{}", out.stdout);
}

#[test]
fn permission_asks_reach_clients_and_follow_the_mode() {
    let w = World::new("", "");
    let _daemon = w.env.start_daemon();
    let ask = |id: &str, kind: &str| {
        json!({"tool": {"id": id, "title": format!("{kind} it"), "kind": kind,
                        "rawInput": {"command": "echo hi"}},
               "ask": true, "then": {"status": "completed", "text": "ran"}})
    };
    // Default mode: the execute call is asked of a client; reads are not.
    let id = start(
        &w,
        &["--permission-mode", "default"],
        &script(
            &json!([ask("r1", "read"), ask("b1", "execute"), ask("b2", "execute"), {"say": "end"}]),
        ),
    );
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let mut attached = Attached::open(&w.env, &id).await;
        let first = attached.next_ask().await;
        assert_eq!(first.tool_use_id, "b1");
        assert_eq!(first.tool_name, "Bash");
        assert_eq!(w.env.show(&id)["status"], "waiting");
        attached.answer(&first, Decision::AllowAlways, "").await;
        attached.resolved(&first).await;
    });
    let done = w
        .env
        .wait_for_agent(&id, "completed", |a| a["status"] == "completed");
    assert_eq!(done["result"], "end");
    // The second execute call was allowed by the "always": not asked again.
    let answers: Vec<Value> = log_lines(&w.log)
        .into_iter()
        .filter(|l| l.get("result").is_some_and(|r| r.get("outcome").is_some()))
        .map(|l| l["result"]["outcome"].clone())
        .collect();
    assert_eq!(
        answers,
        vec![
            json!({"outcome": "selected", "optionId": "allow"}),
            json!({"outcome": "selected", "optionId": "always"}),
            json!({"outcome": "selected", "optionId": "allow"}),
        ]
    );

    // Plan mode refuses the edit without asking anyone.
    let plan = start(
        &w,
        &["--permission-mode", "plan"],
        &script(&json!([ask("e1", "edit"), {"say": "planned"}])),
    );
    let done = w
        .env
        .wait_for_agent(&plan, "completed", |a| a["status"] == "completed");
    assert_eq!(done["result"], "planned");
    let entries = w.env.transcript(&plan);
    let results = blocks(&entries, "tool_result");
    assert_eq!(results[0]["is_error"], true, "{results:?}");
    assert_eq!(results[0]["content"], "rejected");
}

#[test]
fn send_queues_the_next_prompt_and_interrupt_cancels_the_turn() {
    let w = World::new("", "");
    let _daemon = w.env.start_daemon();
    let id = start(
        &w,
        &[],
        &script(&json!([{"say": "working"}, {"sleep": 60000}, {"say": "never"}])),
    );
    wait_until("the first prompt arrives", Duration::from_secs(20), || {
        w.prompts().len() == 1
    });
    w.env.ctl(&["send", &id, "and then this"]).expect_code(0);
    w.env.ctl(&["interrupt", &id]).expect_code(0);
    let paused = w
        .env
        .wait_for_agent(&id, "paused", |a| a["status"] == "paused");
    assert_eq!(paused["status"], "paused");
    assert_eq!(w.received("session/cancel").len(), 1);
    let text = said(&w.env.transcript(&id));
    assert!(
        text.contains("working") && !text.contains("never"),
        "{text}"
    );
    // The queued message waits for the next send (an interrupt stops);
    // then both go, in order, as one prompt.
    w.env.ctl(&["send", &id, "go on"]).expect_code(0);
    let done = w
        .env
        .wait_for_agent(&id, "completed", |a| a["status"] == "completed");
    assert_eq!(done["result"], "echo: and then this\n\ngo on");
    assert_eq!(w.prompts().len(), 2);
    // The same process and session served both turns.
    assert_eq!(w.received("initialize").len(), 1);
}

#[test]
fn a_daemon_killed_mid_turn_revives_the_session_with_load() {
    let w = World::new("", "");
    let daemon = w.env.start_daemon();
    let id = start_saying(&w, "before the crash");
    let session = w.env.show(&id);
    daemon.kill9();
    let _daemon = w.env.start_daemon();
    let done = w
        .env
        .wait_for_agent(&id, "completed", |a| a["status"] == "completed");
    assert_eq!(done["id"], session["id"]);
    let loads = w.received("session/load");
    assert_eq!(loads.len(), 1, "{loads:?}");
    assert_eq!(w.received("session/new").len(), 1);
    // The cut turn is not sent again: the session is told it was cut.
    let prompts = w.prompts();
    assert_eq!(prompts.len(), 2, "{prompts:?}");
    assert!(prompts[1].contains("cut short"), "{}", prompts[1]);
    let text = said(&w.env.transcript(&id));
    assert!(text.contains("before the crash"), "{text}");
    assert!(
        text.contains("echo: [agentd] Your previous turn was cut short"),
        "{text}"
    );
}

#[test]
fn a_daemon_stopped_mid_turn_cancels_it_and_the_revived_session_finishes() {
    let w = World::new("", "");
    let daemon = w.env.start_daemon();
    let id = start_saying(&w, "started");
    let status = daemon.terminate();
    assert!(status.success(), "{status:?}");
    assert_eq!(
        w.received("session/cancel").len(),
        1,
        "a clean stop cancels the turn"
    );
    let _daemon = w.env.start_daemon();
    let done = w
        .env
        .wait_for_agent(&id, "completed", |a| a["status"] == "completed");
    assert!(
        done["result"].as_str().unwrap().contains("cut short"),
        "{done}"
    );
    assert_eq!(w.received("session/load").len(), 1);
}

#[test]
fn an_agent_that_cannot_load_is_blocked_after_a_restart_with_its_transcript() {
    let w = World::new(", TEST_AGENT_NO_LOAD = \"1\"", "");
    let daemon = w.env.start_daemon();
    let id = start_saying(&w, "kept words");
    daemon.kill9();
    let _daemon = w.env.start_daemon();
    let agent = w.env.wait_for_agent(&id, "blocked", |a| {
        a["resume_blocked_reason"] == "external_agent_cannot_resume"
    });
    assert!(
        agent["resume_blocked_detail"]
            .as_str()
            .unwrap()
            .contains("neither session/load nor session/resume"),
        "{agent}"
    );
    assert!(said(&w.env.transcript(&id)).contains("kept words"));
    assert!(w.received("session/load").is_empty());
    let refused = w.env.ctl(&["send", &id, "hello?"]);
    assert_ne!(refused.code, 0, "{}", refused.stdout);
    assert!(
        refused.stderr.contains("external_agent_cannot_resume"),
        "{}",
        refused.stderr
    );
}

#[test]
fn an_agent_process_that_dies_mid_turn_is_started_again_and_told() {
    let w = World::new("", "");
    let _daemon = w.env.start_daemon();
    let id = start(
        &w,
        &[],
        &script(&json!([{"say": "about to fall"}, {"exit": 3}])),
    );
    let done = w
        .env
        .wait_for_agent(&id, "completed", |a| a["status"] == "completed");
    assert!(
        done["result"].as_str().unwrap().contains("cut short"),
        "{done}"
    );
    assert_eq!(w.received("initialize").len(), 2);
    assert_eq!(w.received("session/load").len(), 1);
    assert!(said(&w.env.transcript(&id)).contains("about to fall"));
}

#[test]
fn a_worktree_run_works_in_its_tree_and_keeps_the_work() {
    let w = World::new("", "");
    let repo = w.env.project().canonicalize().unwrap();
    init_repo(&repo);
    let _daemon = w.env.start_daemon();
    let prompt = script(&json!([
        {"tool": {"id": "w1", "title": "Write a.txt", "kind": "edit"},
         "then": {"status": "completed", "diff": {"path": "a.txt", "newText": "in the tree\n"}, "writeFile": true}},
        {"say": "wrote a.txt"}
    ]));
    let out = w.env.ctl(&[
        "run",
        "--agent",
        "scripted",
        "--worktree",
        "--name",
        "ext-tree",
        &prompt,
    ]);
    out.expect_code(0);
    let agent = w.env.show("ext-tree");
    let tree = PathBuf::from(agent["worktree"]["path"].as_str().unwrap());
    assert_ne!(tree, repo);
    assert_eq!(
        std::fs::read_to_string(tree.join("a.txt")).unwrap(),
        "in the tree\n"
    );
    assert!(!repo.join("a.txt").exists(), "the checkout is untouched");
    let new = &w.received("session/new")[0];
    assert_eq!(new["params"]["cwd"], tree.display().to_string());
    assert_eq!(agent["worktree"]["state"], "kept", "{agent}");
    let diff = w.env.ctl(&["diff", "ext-tree"]);
    diff.expect_code(0);
    assert!(diff.stdout.contains("+in the tree"), "{}", diff.stdout);
}

#[test]
fn an_external_agents_committed_work_merges_into_the_checkout() {
    let w = World::new("", "");
    let repo = w.env.project().canonicalize().unwrap();
    init_repo(&repo);
    let _daemon = w.env.start_daemon();
    // Committing writes the checkout's .git, outside the tree: as for
    // agentd's own agents, that needs the sandbox off.
    let prompt = script(&json!([
        {"shell": "echo merged > m.txt && git add m.txt && git commit -qm 'add m.txt' && echo committed"}
    ]));
    w.env
        .ctl(&[
            "run",
            "--agent",
            "scripted",
            "--worktree",
            "--sandbox",
            "off",
            "--name",
            "ext-merge",
            &prompt,
        ])
        .expect_code(0);
    let text = said(&w.env.transcript("ext-merge"));
    assert!(text.contains("committed"), "{text}");
    let merged = w.env.ctl(&["merge", "ext-merge"]);
    merged.expect_code(0);
    assert!(
        merged.stdout.contains("fast-forwarded main"),
        "{}",
        merged.stdout
    );
    assert_eq!(
        std::fs::read_to_string(repo.join("m.txt")).unwrap(),
        "merged\n"
    );
}

#[test]
fn bad_executors_get_the_documented_codes() {
    let w = World::new("", "");
    let _daemon = w.env.start_daemon();
    let cwd = w.env.project().display().to_string();
    let codes = w.env.rpc(async |c| {
        let mut codes = Vec::new();
        for (executor, model, no_network) in [
            ("aider", "", false),
            ("Not A Name", "", false),
            (&*"x".repeat(10_000), "", false),
            ("scripted", "anthropic:claude-test", false),
            ("scripted", "", true),
        ] {
            let err = c
                .create_agent(pb::CreateAgentRequest {
                    prompt: "hi".into(),
                    cwd: cwd.clone(),
                    executor: executor.into(),
                    model: model.into(),
                    no_network,
                    background: true,
                    ..Default::default()
                })
                .await
                .unwrap_err();
            assert!(err.message().len() < 400, "{}", err.message());
            codes.push(err.code());
        }
        codes
    });
    use tonic::Code;
    assert_eq!(
        codes,
        [
            Code::FailedPrecondition,
            Code::InvalidArgument,
            Code::InvalidArgument,
            Code::InvalidArgument,
            Code::InvalidArgument
        ]
    );
    assert!(w.env.agents().is_empty(), "nothing was stored");
}

#[test]
fn forks_of_an_external_agent_are_refused_and_bad_requests_too() {
    let w = World::new("", "");
    let _daemon = w.env.start_daemon();
    w.env
        .ctl(&["run", "--agent", "scripted", "--name", "ext-fork", "hello"])
        .expect_code(0);
    let fork = w.env.ctl(&["fork", "ext-fork", "do something else"]);
    assert_ne!(fork.code, 0);
    assert!(fork.stderr.contains("byte for byte"), "{}", fork.stderr);
    let unknown = w.env.ctl(&["run", "--agent", "aider", "hi"]);
    assert_ne!(unknown.code, 0);
    assert!(
        unknown.stderr.contains("[agents.aider]"),
        "{}",
        unknown.stderr
    );
    let bad = w.env.ctl(&["run", "--agent", "Not/A/Name", "hi"]);
    assert_ne!(bad.code, 0);
    assert!(
        bad.stderr.contains("invalid external agent name"),
        "{}",
        bad.stderr
    );
    let both = w
        .env
        .ctl(&["run", "--agent", "scripted", "--model", "anthropic:x", "hi"]);
    assert_eq!(both.code, 2, "{}", both.stderr);
    let offline = w
        .env
        .ctl(&["run", "--agent", "scripted", "--no-network", "hi"]);
    assert_ne!(offline.code, 0);
    assert!(
        offline.stderr.contains("network none"),
        "{}",
        offline.stderr
    );
    assert_eq!(w.env.show("ext-fork")["status"], "completed");
}

#[test]
fn a_background_external_child_reports_to_its_parent_and_gets_the_mcp_servers() {
    let fx = crate::mcp::common::fixtures();
    let (command, args) = fx.python_stdio_command();
    let mock = MockServer::start();
    let w = World::in_env(
        Env::with_mock(&mock),
        "",
        &format!(
            "[mcp_servers.fx]\ncommand = {}\nargs = {}\n",
            crate::mcp::common::quoted(&command),
            serde_json::to_string(&args).unwrap()
        ),
    );
    let _daemon = w.env.start_daemon();
    parent::answers(
        &mock,
        Reply::Message(MockMessage::new().with(Block::agent(
            "toolu_01Background",
            json!({"description": "scripted work", "subagent_type": "scripted",
                   "run_in_background": true,
                   "prompt": script(&json!([{"sleep": 300}, {"say": "background result"}]))}),
        ))),
        Reply::text("noted"),
    );
    let out = w.env.ctl(&[
        "run",
        "--model",
        agentd_e2e::mock::MODEL,
        "--name",
        "ext-parent",
        "PARENT go",
    ]);
    out.expect_code(0);
    // The child's end wakes the parent with its notification.
    // The child's end wakes the parent with its notification, which
    // carries the child's answer (the `Agent` call itself returned at
    // once, with none).
    let notified = |r: &agentd_e2e::mock::RecordedRequest| {
        let messages = r.json["messages"].to_string();
        parent::is_parent(r)
            && messages.contains("<task-notification>")
            && messages.contains("background result")
    };
    wait_until(
        "the parent reads the notification",
        Duration::from_secs(30),
        || mock.requests().iter().any(notified),
    );
    let child = w
        .env
        .agents()
        .into_iter()
        .find(|a| a["subagent_type"] == "scripted")
        .unwrap();
    let id = child["id"].as_str().unwrap();
    let child = w
        .env
        .wait_for_agent(id, "completed", |a| a["status"] == "completed");
    assert_eq!(child["parent_id"], w.env.show("ext-parent")["id"]);
    // The external agent was given the agent's MCP servers.
    let new = &w.received("session/new")[0];
    let servers = new["params"]["mcpServers"].as_array().unwrap();
    assert_eq!(servers.len(), 1, "{servers:?}");
    assert_eq!(servers[0]["name"], "fx");
    assert_eq!(servers[0]["command"], command.as_str());
    assert_eq!(servers[0]["args"], json!(args));
}

#[test]
fn stop_cancels_the_turn_and_ends_the_process() {
    let w = World::new("", "");
    let _daemon = w.env.start_daemon();
    let id = start_saying(&w, "busy");
    w.env.ctl(&["stop", &id]).expect_code(0);
    let agent = w
        .env
        .wait_for_agent(&id, "cancelled", |a| a["status"] == "cancelled");
    assert_eq!(agent["status"], "cancelled");
    assert_eq!(w.received("session/cancel").len(), 1);
    wait_until("the agent process ends", Duration::from_secs(10), || {
        w.processes() == 0
    });
}

#[test]
fn an_editor_drives_an_external_agent_through_the_acp_bridge() {
    let sdk = crate::acp::sdk::Sdk::TypeScript;
    sdk.setup();
    let w = World::new("", "");
    let _daemon = w.env.start_daemon();
    let cwd = w.env.project().canonicalize().unwrap();
    let prompt = script(&json!([
        {"tool": {"id": "w1", "title": "Write notes.txt", "kind": "edit",
                  "rawInput": {"file_path": "notes.txt"}, "locations": [{"path": "notes.txt", "line": 1}]},
         "then": {"status": "completed", "text": "wrote it",
                  "diff": {"path": "notes.txt", "oldText": null, "newText": "hello\n"}, "writeFile": true}},
        {"usage": {"inputTokens": 90000, "outputTokens": 10000,
                   "used": 53000, "size": 200000, "cost": {"amount": 0.25, "currency": "USD"}}},
        {"say": "Done writing."}
    ]));
    let cwd_arg = cwd.display().to_string();
    let lines = sdk.run(&w.env, &["external", &cwd_arg, "scripted", &prompt]);
    let reply = crate::acp::of_kind(&lines, "prompt")[0];
    assert_eq!(reply["stopReason"], "end_turn", "{reply}");
    let updates = reply["updates"].as_array().unwrap();
    let call = updates
        .iter()
        .find(|u| u["sessionUpdate"] == "tool_call")
        .expect("a tool call");
    assert_eq!(call["title"], "Write notes.txt");
    assert_eq!(call["kind"], "edit");
    let file = cwd.join("notes.txt").display().to_string();
    assert_eq!(call["locations"][0]["path"], file.as_str());
    let done = updates
        .iter()
        .find(|u| u["sessionUpdate"] == "tool_call_update" && u["status"] == "completed")
        .expect("the call completes");
    let diff = done["content"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "diff")
        .expect("its diff, as the daemon recorded it");
    assert_eq!(diff["path"], file.as_str());
    assert_eq!(diff["newText"], "hello\n");
    let text: String = updates
        .iter()
        .filter(|u| u["sessionUpdate"] == "agent_message_chunk")
        .filter_map(|u| u["content"]["text"].as_str())
        .collect();
    assert!(text.contains("Done writing."), "{text}");
    // Its context and cost as it reported them, not its turn's token sum
    // (100,000) as a fill.
    let usage: Vec<&Value> = updates
        .iter()
        .filter(|u| u["sessionUpdate"] == "usage_update")
        .collect();
    assert_eq!(
        usage,
        [
            &json!({"sessionUpdate": "usage_update", "used": 53000, "size": 200000,
                 "cost": {"amount": 0.25, "currency": "USD"}})
        ],
        "{updates:?}"
    );
    let id = crate::acp::of_kind(&lines, "new")[0]["sessionId"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(w.env.show(&id)["model"], "acp:scripted");
}

#[test]
fn an_agent_that_asks_for_a_login_gets_it_with_the_key_its_entry_gives() {
    // As codex-acp does: `session/new` answers "authentication required"
    // until `authenticate` names its `env_var` method, whose variable the
    // entry's env sets.
    let w = World::new(
        ", TEST_AGENT_AUTH_VAR = \"MY_AGENT_KEY\", MY_AGENT_KEY = \"k-123\"",
        "",
    );
    let _daemon = w.env.start_daemon();
    let out = w.env.ctl(&["run", "--agent", "scripted", "hello"]);
    out.expect_code(0);
    assert!(out.stdout.contains("echo: hello"), "{}", out.stdout);
    let logins = w.received("authenticate");
    assert_eq!(logins.len(), 1, "{logins:?}");
    assert_eq!(logins[0]["params"]["methodId"], "env-key");
    assert_eq!(
        w.received("session/new").len(),
        2,
        "asked again after the login"
    );
}

#[test]
fn without_the_key_the_agent_fails_saying_how_to_log_in() {
    let w = World::new(", TEST_AGENT_AUTH_VAR = \"MY_AGENT_KEY\"", "");
    let _daemon = w.env.start_daemon();
    let out = w
        .env
        .ctl(&["run", "--agent", "scripted", "--name", "no-key", "hello"]);
    out.expect_code(1);
    let agent = w.env.show("no-key");
    assert_eq!(agent["status"], "failed");
    let error = agent["error"].as_str().unwrap();
    assert!(
        error.contains("log in") && error.contains("[agents.NAME] env"),
        "{error}"
    );
    assert!(
        w.received("authenticate").is_empty(),
        "no login is tried without the key"
    );
}
