//! The real providers against the mock model server: byte-stable requests,
//! prompt-cache accounting, retries, failures, cancellation and key hygiene.

#![allow(clippy::unwrap_used)] // Tests: a panic is the failure report.

use std::time::{Duration, Instant};

use agentd_e2e::Env;
use agentd_e2e::forking::MARKER;
use agentd_e2e::mock::{Block, MockMessage, MockServer, Reply};
use serde_json::{Value, json};

/// Quick retries so fault tests take milliseconds, not minutes.
const FAST_RETRY: &str =
    "[retry]\nmax_attempts = 4\ninitial_backoff_ms = 20\nmax_backoff_ms = 100\n";

fn world(mock: &MockServer) -> Env {
    let env = Env::with_mock(mock);
    env.write_config(FAST_RETRY);
    env
}

fn tool_msg(id: &str, name: &str, input: Value) -> MockMessage {
    MockMessage::text("Working on it.").with(Block::ToolUse {
        id: id.into(),
        name: name.into(),
        input,
    })
}

fn messages_of(body: &[u8]) -> String {
    let v: Value = serde_json::from_slice(body).unwrap();
    // The messages array as sent: the body text from `"messages":` on.
    let text = std::str::from_utf8(body).unwrap();
    let at = text.find(r#""messages":["#).expect("messages in body");
    assert!(v["messages"].is_array());
    text[at..].to_string()
}

#[test]
fn multi_turn_requests_are_byte_stable_and_served_from_the_prompt_cache() {
    let mock = MockServer::start();
    mock.set_min_cacheable_tokens(64);
    let env = world(&mock);
    std::fs::write(env.project().join("a.txt"), "alpha\n").unwrap();
    let _daemon = env.start_daemon();
    mock.enqueue(Reply::Message(tool_msg(
        "toolu_1",
        "Bash",
        json!({"command": "ls"}),
    )));
    mock.enqueue(Reply::Message(tool_msg(
        "toolu_2",
        "Read",
        json!({"file_path": "a.txt"}),
    )));
    mock.enqueue(Reply::Message(tool_msg(
        "toolu_3",
        "Write",
        json!({"file_path": "b.txt", "content": "beta\n"}),
    )));
    mock.enqueue(Reply::Message(MockMessage::text("All done.")));

    let out = env.ctl(&[
        "run",
        "--model",
        "anthropic:claude-test",
        "--name",
        "cachey",
        "do the work",
    ]);
    out.expect_code(0);
    assert!(out.stdout.contains("All done."), "{}", out.stdout);
    assert_eq!(
        std::fs::read_to_string(env.project().join("b.txt")).unwrap(),
        "beta\n"
    );

    let reqs = mock.requests();
    assert_eq!(reqs.len(), 4, "one request per turn, none duplicated");
    for r in &reqs {
        assert_eq!(r.path, "/v1/messages");
        let header = |name: &str| {
            r.headers
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
        };
        assert_eq!(header("anthropic-version").as_deref(), Some("2023-06-01"));
        assert_eq!(header("x-api-key").as_deref(), Some("sk-ant-test-key"));
        assert_eq!(r.json["stream"], true);
        assert_eq!(r.json["model"], "claude-test");
        // Breakpoints: the last system block and the newest message's last block.
        assert_eq!(
            std::str::from_utf8(&r.body)
                .unwrap()
                .matches(MARKER)
                .count(),
            2
        );
    }
    for pair in reqs.windows(2) {
        let (prev, next) = (&pair[0], &pair[1]);
        // Everything before the messages (model, system, tools) is identical.
        let head = |b: &[u8]| {
            let t = std::str::from_utf8(b).unwrap().to_string();
            t[..t.find(r#""messages":["#).unwrap()].to_string()
        };
        assert_eq!(head(&prev.body), head(&next.body));
        // The previous messages reappear byte for byte (the moving breakpoint aside).
        let prev_msgs = messages_of(&prev.body).replace(MARKER, "");
        let prev_msgs = &prev_msgs[..prev_msgs.len() - 2]; // drop the closing "]}"
        let next_msgs = messages_of(&next.body).replace(MARKER, "");
        assert!(
            next_msgs.starts_with(prev_msgs),
            "turn prefix changed:\n{prev_msgs}\n---\n{next_msgs}"
        );
        // And the cache serves them.
        let p = prev.cache.as_ref().unwrap();
        let n = next.cache.as_ref().unwrap();
        let prev_prompt = p.read + p.creation + p.input;
        assert!(
            n.read as f64 >= 0.95 * prev_prompt as f64,
            "turn {} read {} of the previous prompt's {}",
            next.index,
            n.read,
            prev_prompt
        );
    }

    // The daemon recorded the usage the provider reported, per entry and in sum.
    let log = env.ctl(&["log", "cachey", "--json"]).expect_code(0).json();
    let assistant: Vec<&Value> = log
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["role"] == "assistant")
        .collect();
    assert_eq!(assistant.len(), 4);
    let mut sum = [0u64; 4];
    for (entry, req) in assistant.iter().zip(&reqs) {
        let c = req.cache.as_ref().unwrap();
        assert_eq!(entry["usage"]["cache_read_input_tokens"], c.read);
        assert_eq!(entry["usage"]["cache_creation_input_tokens"], c.creation);
        assert_eq!(entry["usage"]["input_tokens"], c.input);
        let u = &entry["usage"];
        for (i, k) in [
            "input_tokens",
            "output_tokens",
            "cache_read_input_tokens",
            "cache_creation_input_tokens",
        ]
        .iter()
        .enumerate()
        {
            sum[i] += u[k].as_u64().unwrap();
        }
    }
    assert!(sum[1] > 0, "output tokens are counted");
    let agent = env.show("cachey");
    assert_eq!(agent["usage"]["input_tokens"], sum[0]);
    assert_eq!(agent["usage"]["output_tokens"], sum[1]);
    assert_eq!(agent["usage"]["cache_read_input_tokens"], sum[2]);
    assert_eq!(agent["usage"]["cache_creation_input_tokens"], sum[3]);
    assert!(sum[2] > 0);
}

/// Runs a two-turn agent whose first request meets `fault`; returns the env,
/// the mock, the CLI output and the (still running) daemon.
fn run_with_fault(fault: Reply) -> (Env, MockServer, agentd_e2e::Out, agentd_e2e::Daemon) {
    run_with_fault_and_config(fault, FAST_RETRY)
}

fn run_with_fault_and_config(
    fault: Reply,
    config: &str,
) -> (Env, MockServer, agentd_e2e::Out, agentd_e2e::Daemon) {
    let mock = MockServer::start();
    let env = world(&mock);
    env.write_config(config);
    let daemon = env.start_daemon();
    mock.enqueue(fault);
    mock.enqueue(Reply::Message(tool_msg(
        "toolu_1",
        "Bash",
        json!({"command": "echo ran >> ran.txt"}),
    )));
    mock.enqueue(Reply::Message(MockMessage::text("Finished.")));
    let out = env.ctl(&[
        "run",
        "--model",
        "anthropic:claude-test",
        "--name",
        "faulty",
        "go",
    ]);
    (env, mock, out, daemon)
}

fn assert_clean_transcript(env: &Env) {
    let log = env.ctl(&["log", "faulty", "--json"]).expect_code(0).json();
    let roles: Vec<&str> = log
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        ["user", "assistant", "user", "assistant"],
        "no partial or duplicate entries: {log}"
    );
    assert_eq!(
        log[3]["content"],
        json!([{"type": "text", "text": "Finished."}])
    );
    // The tool ran exactly once.
    assert_eq!(
        std::fs::read_to_string(env.project().join("ran.txt")).unwrap(),
        "ran\n"
    );
}

#[test]
fn transient_faults_are_retried_to_success_without_partial_entries() {
    let partial =
        || MockMessage::text("This partial answer must never be stored because the stream breaks.");
    let faults: Vec<(&str, Reply)> = vec![
        (
            "429",
            Reply::Status {
                code: 429,
                message: "Rate limited".into(),
                retry_after: Some(0),
            },
        ),
        (
            "500",
            Reply::Status {
                code: 500,
                message: "Internal".into(),
                retry_after: None,
            },
        ),
        (
            "502",
            Reply::Status {
                code: 502,
                message: "Bad gateway".into(),
                retry_after: None,
            },
        ),
        (
            "503",
            Reply::Status {
                code: 503,
                message: "Unavailable".into(),
                retry_after: None,
            },
        ),
        (
            "529",
            Reply::Status {
                code: 529,
                message: "Overloaded".into(),
                retry_after: None,
            },
        ),
        ("reset", Reply::Reset),
        (
            "cut",
            Reply::Cut {
                message: partial(),
                after_events: 4,
            },
        ),
        (
            "error event",
            Reply::ErrorEvent {
                message: partial(),
                after_events: 4,
                error_type: "overloaded_error".into(),
                error_message: "Overloaded".into(),
            },
        ),
    ];
    for (name, fault) in faults {
        let (env, mock, out, _daemon) = run_with_fault(fault);
        // (Whether the CLI saw the retry depends on when it attached; the
        // retry-after test, with a long wait, checks that it is shown.)
        assert_eq!(out.code, 0, "{name}: {}\n{}", out.stdout, out.stderr);
        assert_eq!(
            mock.requests().len(),
            3,
            "{name}: one retry, then two turns"
        );
        assert_clean_transcript(&env);
        let agent = env.show("faulty");
        assert_eq!(agent["status"], "completed", "{name}");
        assert_eq!(agent["turns"], 2, "{name}");
    }
}

#[test]
fn retry_after_is_honoured() {
    // Backoff alone would retry within 40 ms; retry-after asks for a second.
    let (env, mock, out, _daemon) = run_with_fault_and_config(
        Reply::Status {
            code: 429,
            message: "slow down".into(),
            retry_after: Some(1),
        },
        "[retry]\nmax_attempts = 3\ninitial_backoff_ms = 20\nmax_backoff_ms = 5000\n",
    );
    out.expect_code(0);
    assert!(
        out.stderr.contains("retrying in") && out.stderr.contains("slow down"),
        "a client attached during the wait is told why nothing streams: {}",
        out.stderr
    );
    let reqs = mock.requests();
    let gap = reqs[1].received_at - reqs[0].received_at;
    assert!(
        gap >= Duration::from_millis(900),
        "retried after {gap:?}, before retry-after"
    );
    assert_clean_transcript(&env);
}

#[test]
fn request_errors_fail_at_once_with_the_providers_message() {
    for (code, message) in [
        (400, "messages: text content blocks must be non-empty"),
        (401, "invalid x-api-key"),
        (403, "your key may not use this model"),
        (404, "model: claude-nope"),
    ] {
        let mock = MockServer::start();
        let env = world(&mock);
        let _daemon = env.start_daemon();
        mock.enqueue(Reply::Status {
            code,
            message: message.into(),
            retry_after: None,
        });
        let out = env.ctl(&[
            "run",
            "--model",
            "anthropic:claude-test",
            "--name",
            "badreq",
            "go",
        ]);
        out.expect_code(1);
        assert!(
            out.stderr.contains(message),
            "{code}: CLI shows the provider's message: {}",
            out.stderr
        );
        assert_eq!(mock.requests().len(), 1, "{code} is not retried");
        let agent = env.show("badreq");
        assert_eq!(agent["status"], "failed");
        let error = agent["error"].as_str().unwrap();
        assert!(
            error.contains(message) && error.contains(&code.to_string()),
            "{error}"
        );
        let log = env.ctl(&["log", "badreq"]);
        log.expect_code(0);
        assert!(log.stdout.contains(message), "log shows it: {}", log.stdout);
        let entries = env.ctl(&["log", "badreq", "--json"]).json();
        let roles: Vec<&str> = entries
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["role"].as_str().unwrap())
            .collect();
        assert_eq!(
            roles,
            ["user", "system"],
            "no assistant entry for a failed call"
        );
    }
}

#[test]
fn an_exhausted_retry_budget_fails_the_agent_cleanly() {
    let mock = MockServer::start();
    let env = world(&mock);
    let _daemon = env.start_daemon();
    for _ in 0..4 {
        mock.enqueue(Reply::Status {
            code: 529,
            message: "Overloaded".into(),
            retry_after: None,
        });
    }
    let out = env.ctl(&[
        "run",
        "--model",
        "anthropic:claude-test",
        "--name",
        "tired",
        "go",
    ]);
    out.expect_code(1);
    assert_eq!(mock.requests().len(), 4, "max_attempts = 4");
    let agent = env.show("tired");
    let error = agent["error"].as_str().unwrap();
    assert!(
        error.contains("Overloaded") && error.contains("gave up after 4 attempts"),
        "{error}"
    );
}

#[test]
fn thinking_blocks_round_trip_with_their_signatures() {
    let mock = MockServer::start();
    let env = world(&mock);
    let _daemon = env.start_daemon();
    let signature =
        "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds5w1HhjDYGGp+xtaLb7Zh8wBXGYpPnvnG4Hx";
    mock.enqueue(Reply::Message(
        MockMessage {
            content: vec![
                Block::Thinking {
                    thinking: "The user wants a listing; ls will do.".into(),
                    signature: signature.into(),
                },
                Block::RedactedThinking {
                    data: "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP".into(),
                },
            ],
            ..MockMessage::text("")
        }
        .with(Block::bash("toolu_t", "true")),
    ));
    mock.enqueue(Reply::Message(MockMessage::text("ok")));
    env.ctl(&["run", "--model", "anthropic:claude-test", "think"])
        .expect_code(0);
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 2);
    let sent_back = &reqs[1].json["messages"][1]["content"];
    assert_eq!(
        sent_back[0],
        json!({"type": "thinking", "thinking": "The user wants a listing; ls will do.", "signature": signature})
    );
    assert_eq!(sent_back[1]["type"], "redacted_thinking");
    assert_eq!(
        sent_back[1]["data"],
        "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP"
    );
    assert_eq!(sent_back[2]["id"], "toolu_t");
}

#[test]
fn openai_tool_calls_round_trip() {
    let mock = MockServer::start();
    let env = world(&mock);
    let _daemon = env.start_daemon();
    mock.enqueue(Reply::Message(tool_msg(
        "call_abc",
        "Write",
        json!({"file_path": "o.txt", "content": "from openai\n"}),
    )));
    mock.enqueue(Reply::Message(MockMessage::text("Wrote it.")));
    let out = env.ctl(&[
        "run",
        "--model",
        "openai:gpt-test",
        "--name",
        "oa",
        "write a file",
    ]);
    out.expect_code(0);
    assert!(out.stdout.contains("Wrote it."), "{}", out.stdout);
    assert_eq!(
        std::fs::read_to_string(env.project().join("o.txt")).unwrap(),
        "from openai\n"
    );
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 2);
    assert!(
        reqs[0].path.ends_with("/chat/completions"),
        "{}",
        reqs[0].path
    );
    let auth = reqs[0]
        .headers
        .iter()
        .find(|(k, _)| k == "authorization")
        .map(|(_, v)| v.as_str());
    assert_eq!(auth, Some("Bearer sk-openai-test-key"));
    let second = &reqs[1].json;
    assert_eq!(second["stream"], true);
    assert_eq!(second["stream_options"]["include_usage"], true);
    let msgs = second["messages"].as_array().unwrap();
    let assistant = msgs.iter().find(|m| m["role"] == "assistant").unwrap();
    assert_eq!(assistant["tool_calls"][0]["id"], "call_abc");
    assert_eq!(assistant["tool_calls"][0]["function"]["name"], "Write");
    let args: Value = serde_json::from_str(
        assistant["tool_calls"][0]["function"]["arguments"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        args,
        json!({"file_path": "o.txt", "content": "from openai\n"})
    );
    let tool = msgs.iter().find(|m| m["role"] == "tool").unwrap();
    assert_eq!(tool["tool_call_id"], "call_abc");
    // The canonical transcript holds Anthropic-shaped blocks.
    let log = env.ctl(&["log", "oa", "--json"]).json();
    assert_eq!(
        log[1]["content"][1],
        json!({"type": "tool_use", "id": "call_abc", "name": "Write", "input": {"file_path": "o.txt", "content": "from openai\n"}})
    );
    assert_eq!(log[2]["content"][0]["tool_use_id"], "call_abc");
    // The prefix is byte-stable for OpenAI's automatic cache too.
    let first_msgs = serde_json::to_string(&reqs[0].json["messages"]).unwrap();
    let second_msgs = serde_json::to_string(&second["messages"]).unwrap();
    assert!(second_msgs.starts_with(&first_msgs[..first_msgs.len() - 1]));
}

#[test]
fn stop_aborts_a_slow_stream_within_a_second() {
    let mock = MockServer::start();
    let env = world(&mock);
    let _daemon = env.start_daemon();
    let long = "word ".repeat(200);
    mock.enqueue(Reply::Message(
        MockMessage::text(&long).slow(Duration::from_millis(200)),
    ));
    let id = env.start_agent(&["--model", "anthropic:claude-test", "slow"]);
    mock.wait_for_requests(1, Duration::from_secs(10));
    std::thread::sleep(Duration::from_millis(300)); // mid-stream
    let started = Instant::now();
    env.ctl(&["stop", &id]).expect_code(0);
    let took = started.elapsed();
    assert!(took < Duration::from_secs(1), "stop took {took:?}");
    let agent = env.show(&id);
    assert_eq!(agent["status"], "cancelled");
    assert_eq!(
        agent["transcript_len"], 1,
        "the partial response is not stored"
    );
    assert_eq!(mock.requests().len(), 1);
}

#[test]
fn a_missing_key_or_unknown_scheme_is_refused_at_run() {
    let env = Env::new();
    let _daemon = env.start_daemon();
    let out = env.ctl(&["run", "--model", "anthropic:claude-test", "hi"]);
    out.expect_code(1);
    assert!(out.stderr.contains("ANTHROPIC_API_KEY"), "{}", out.stderr);
    assert!(out.stderr.contains("failed precondition"), "{}", out.stderr);
    let out = env.ctl(&["run", "--model", "openai:gpt-x", "hi"]);
    out.expect_code(1);
    assert!(out.stderr.contains("OPENAI_API_KEY"), "{}", out.stderr);
    assert_eq!(env.ctl(&["list", "--all", "--json"]).json(), json!([]));
}

#[test]
fn api_keys_never_reach_logs_output_or_the_store() {
    let secret = "sk-ant-SECRET-do-not-log-4242";
    let mock = MockServer::start();
    let env = Env::new();
    env.set_daemon_env("ANTHROPIC_BASE_URL", &mock.url());
    env.set_daemon_env("ANTHROPIC_API_KEY", secret);
    env.set_daemon_env("RUST_LOG", "trace");
    env.write_config(FAST_RETRY);
    let daemon = env.start_daemon();
    mock.enqueue(Reply::Status {
        code: 529,
        message: "Overloaded".into(),
        retry_after: None,
    });
    mock.enqueue(Reply::Message(tool_msg(
        "toolu_k",
        "Bash",
        json!({"command": "echo hi"}),
    )));
    mock.enqueue(Reply::Message(MockMessage::text("done")));
    let run = env.ctl(&[
        "run",
        "--model",
        "anthropic:claude-test",
        "--name",
        "k",
        "go",
    ]);
    run.expect_code(0);
    let header = mock.requests()[0]
        .headers
        .iter()
        .find(|(k, _)| k == "x-api-key")
        .map(|(_, v)| v.clone());
    assert_eq!(header.as_deref(), Some(secret), "the key was sent");
    let mut seen = vec![run.stdout, run.stderr];
    for args in [
        &["show", "k", "--json"][..],
        &["log", "k", "--json"],
        &["status", "--json"],
        &["list", "--json"],
    ] {
        let out = env.ctl(args);
        seen.push(out.stdout);
        seen.push(out.stderr);
    }
    assert!(daemon.terminate().success());
    let log = env.daemon_log_text();
    assert!(
        log.contains("TRACE"),
        "the daemon really logged at trace level"
    );
    seen.push(log);
    for text in &seen {
        assert!(
            !text.contains(secret),
            "the key leaked: …{}…",
            &text[text.find(secret).unwrap().saturating_sub(200)..]
        );
    }
    for entry in walk(&env.data_dir()) {
        let bytes = std::fs::read(&entry).unwrap();
        assert!(
            !bytes.windows(secret.len()).any(|w| w == secret.as_bytes()),
            "the key is stored in {}",
            entry.display()
        );
    }
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[test]
fn stop_reasons_are_handled_deliberately() {
    // max_tokens with nothing to run: the model is asked to continue.
    let mock = MockServer::start();
    let env = world(&mock);
    let _daemon = env.start_daemon();
    mock.enqueue(Reply::Message(
        MockMessage::text("The first half of a long answer").stop_reason("max_tokens"),
    ));
    mock.enqueue(Reply::Message(MockMessage::text("and the second half.")));
    let out = env.ctl(&[
        "run",
        "--model",
        "anthropic:claude-test",
        "--name",
        "long",
        "go",
    ]);
    out.expect_code(0);
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 2);
    let last_user = reqs[1].json["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(last_user["role"], "user");
    assert!(
        last_user["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("cut off at the output token limit")
    );
    assert_eq!(env.show("long")["result"], "and the second half.");

    // pause_turn: the paused message goes back as is, with no new user message.
    mock.enqueue(Reply::Message(
        MockMessage::text("Searching…").stop_reason("pause_turn"),
    ));
    mock.enqueue(Reply::Message(MockMessage::text("Found it.")));
    env.ctl(&[
        "run",
        "--model",
        "anthropic:claude-test",
        "--name",
        "paused",
        "go",
    ])
    .expect_code(0);
    let reqs = mock.requests();
    let resumed = reqs[3].json["messages"].as_array().unwrap();
    assert_eq!(resumed.len(), 2);
    assert_eq!(resumed[1]["role"], "assistant");
    assert_eq!(resumed[1]["content"][0]["text"], "Searching…");

    // refusal: the agent fails and says why.
    mock.enqueue(Reply::Message(
        MockMessage::text("I can't help with that.").stop_reason("refusal"),
    ));
    let out = env.ctl(&[
        "run",
        "--model",
        "anthropic:claude-test",
        "--name",
        "no",
        "go",
    ]);
    out.expect_code(1);
    assert!(out.stderr.contains("refusal"), "{}", out.stderr);
    assert_eq!(env.show("no")["status"], "failed");
}

#[test]
fn openai_cached_tokens_are_reported_as_cache_reads() {
    let mock = MockServer::start();
    mock.set_openai_min_cached_tokens(64);
    let env = world(&mock);
    let _daemon = env.start_daemon();
    mock.enqueue(Reply::Message(tool_msg(
        "call_1",
        "Bash",
        json!({"command": "true"}),
    )));
    mock.enqueue(Reply::Message(MockMessage::text("ok")));
    env.ctl(&[
        "run",
        "--model",
        "openai:gpt-test",
        "--name",
        "cached",
        "go",
    ])
    .expect_code(0);
    let reqs = mock.requests();
    let cached = reqs[1].cache.as_ref().unwrap().read;
    assert!(
        cached > 0,
        "the mock served the repeated prefix from its cache"
    );
    let log = env.ctl(&["log", "cached", "--json"]).json();
    let second = log
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["role"] == "assistant")
        .nth(1)
        .unwrap()
        .clone();
    assert_eq!(second["usage"]["cache_read_input_tokens"], cached);
    let prompt: u64 = serde_json::from_value(second["usage"]["input_tokens"].clone()).unwrap();
    assert!(prompt > 0, "uncached prompt tokens are input_tokens");
}

#[test]
fn the_model_comes_from_the_flag_then_agentd_model_then_the_config() {
    let mock = MockServer::start();
    let env = world(&mock);
    // default_model must come before any table in TOML.
    env.write_config(&format!(
        "default_model = \"anthropic:from-config\"\n{FAST_RETRY}"
    ));
    let _daemon = env.start_daemon();
    for _ in 0..3 {
        mock.enqueue(Reply::Message(MockMessage::text("ok")));
    }
    env.ctl(&["run", "hi"]).expect_code(0);
    let mut cmd = env.ctl_command(&["--no-autostart", "run", "hi"]);
    cmd.env("AGENTD_MODEL", "anthropic:from-env");
    assert!(cmd.status().unwrap().success());
    env.ctl(&["run", "--model", "anthropic:from-flag", "hi"])
        .expect_code(0);
    let models: Vec<String> = mock
        .requests()
        .iter()
        .map(|r| r.json["model"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(models, ["from-config", "from-env", "from-flag"]);
}

#[test]
fn connection_refused_is_retried_until_the_provider_is_back() {
    // A port with nobody listening (yet).
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let env = Env::new();
    env.use_mock(&format!("http://127.0.0.1:{port}"));
    env.write_config("[retry]\nmax_attempts = 8\ninitial_backoff_ms = 200\nmax_backoff_ms = 400\n");
    let _daemon = env.start_daemon();
    let id = env.start_agent(&["--model", "anthropic:claude-test", "go"]);
    std::thread::sleep(Duration::from_millis(300));
    let mock = MockServer::start_on(agentd_e2e::mock::MockConfig::default(), port);
    mock.enqueue(Reply::Message(MockMessage::text("back online")));
    env.ctl(&["wait", &id, "--timeout", "20"]).expect_code(0);
    assert_eq!(
        mock.requests().len(),
        1,
        "refused attempts never reached it; the retry did"
    );
    let log = env.ctl(&["log", &id, "--json"]).json();
    assert_eq!(log.as_array().unwrap().len(), 2);
}

#[test]
fn an_unreachable_provider_fails_the_agent_after_the_budget() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let env = Env::new();
    env.use_mock(&format!("http://127.0.0.1:{port}"));
    env.write_config("[retry]\nmax_attempts = 2\ninitial_backoff_ms = 10\nmax_backoff_ms = 20\n");
    let _daemon = env.start_daemon();
    let out = env.ctl(&[
        "run",
        "--model",
        "anthropic:claude-test",
        "--name",
        "gone",
        "go",
    ]);
    out.expect_code(1);
    let error = env.show("gone")["error"].as_str().unwrap().to_string();
    assert!(
        error.contains("cannot reach") && error.contains("gave up after 2 attempts"),
        "{error}"
    );
}
