//! Hooks in Claude Code's contract (DESIGN §24), end to end: the person's
//! `~/.claude/settings.json` hooks run in the agent's sandbox against
//! scripted agents; exit codes and JSON output do what Claude Code's do.

#![allow(clippy::unwrap_used)] // Tests: a panic is the failure report.

use std::path::PathBuf;

use agentd_e2e::script::{bash_each, script, text, turn};
use agentd_e2e::{Env, tool_results};
use serde_json::{Value, json};

/// Writes an executable hook script into the project (hooks run in the
/// agent's sandbox: they write only beneath its workspace).
fn hook_script(env: &Env, name: &str, body: &str) -> PathBuf {
    let dir = env.project().join("hooks");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

fn user_settings(env: &Env, settings: &Value) {
    std::fs::create_dir_all(env.home().join(".claude")).unwrap();
    std::fs::write(
        env.home().join(".claude/settings.json"),
        serde_json::to_vec_pretty(settings).unwrap(),
    )
    .unwrap();
}

fn command_hook(command: &std::path::Path) -> Value {
    json!({"type": "command", "command": command.display().to_string()})
}

#[test]
fn pre_tool_use_blocks_in_bypass_allows_rewrites_and_gets_claude_codes_input() {
    let env = Env::new();
    let p = env.project();
    // Exit 2 for curl (stderr is the reason); JSON allow with a rewritten
    // command for echo; the input it was given kept for the test.
    let pre = hook_script(
        &env,
        "pre.sh",
        &format!(
            r#"input=$(cat)
printf '%s\n' "$input" >> {dir}/pre-inputs.jsonl
case "$input" in
  *curl*) echo "no network tools here" >&2; exit 2;;
  *original*) echo '{{"hookSpecificOutput": {{"hookEventName": "PreToolUse", "permissionDecision": "allow", "updatedInput": {{"command": "echo rewritten"}}, "additionalContext": "CTX-FROM-HOOK"}}}}';;
esac
exit 0"#,
            dir = p.display()
        ),
    );
    user_settings(
        &env,
        &json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [command_hook(&pre)]}]}}),
    );
    let _daemon = env.start_daemon();
    let model = env.script(
        "pre.json",
        &bash_each(&["curl http://example.com".into(), "echo original".into()]),
    );
    // Default mode: the hook's allow runs echo without an ask.
    let id = env.start_model(&model, &["--permission-mode", "default"]);
    env.ctl(&["wait", &id]).expect_code(0);
    let got = tool_results(&env.transcript(&id));
    assert_eq!(got.len(), 2, "{got:?}");
    assert!(
        got[0].0 && got[0].1.contains("no network tools here"),
        "{:?}",
        got[0]
    );
    assert!(got[0].1.contains("denied by hook"), "{:?}", got[0]);
    assert!(!got[1].0 && got[1].1.contains("rewritten"), "{:?}", got[1]);
    assert!(got[1].1.contains("CTX-FROM-HOOK"), "{:?}", got[1]);
    // What the hook was given.
    let inputs: Vec<Value> = std::fs::read_to_string(p.join("pre-inputs.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(inputs.len(), 2, "{inputs:?}");
    let first = &inputs[0];
    assert_eq!(first["hook_event_name"], "PreToolUse");
    assert_eq!(first["session_id"], id);
    assert_eq!(first["agent_id"], id);
    assert_eq!(first["tool_name"], "Bash");
    assert_eq!(first["tool_input"]["command"], "curl http://example.com");
    assert_eq!(first["permission_mode"], "default");
    assert!(first["tool_use_id"].as_str().is_some_and(|t| !t.is_empty()));
    assert_eq!(first["cwd"], p.display().to_string());
    assert!(first["transcript_path"].is_null());
    // The decisions are on the record: log names the hook and its file.
    let log = env.ctl(&["log", &id]).expect_code(0).stderr.clone();
    assert!(log.contains("allowed by hook"), "{log}");
    assert!(log.contains("~/.claude/settings.json"), "{log}");

    // The deny holds in bypass mode too.
    let id = env.start_model(&model, &["--permission-mode", "bypass"]);
    env.ctl(&["wait", &id]).expect_code(0);
    let got = tool_results(&env.transcript(&id));
    assert!(
        got[0].0 && got[0].1.contains("no network tools here"),
        "{:?}",
        got[0]
    );
}

#[test]
fn post_tool_use_and_stop_hooks_speak_to_the_model() {
    let env = Env::new();
    let p = env.project();
    let post = hook_script(
        &env,
        "post.sh",
        r#"input=$(cat)
case "$input" in
  *'"is_error":true'*) echo "FAILURE-SEEN" >&2; exit 2;;
esac
echo '{"hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "POST-CONTEXT"}}'"#,
    );
    // Blocks the first stop (the agent goes on with the reason), then lets
    // it end; the input's stop_hook_active is kept.
    let stop = hook_script(
        &env,
        "stop.sh",
        &format!(
            r#"input=$(cat)
printf '%s\n' "$input" >> {dir}/stop-inputs.jsonl
if [ ! -e {dir}/stopped-once ]; then touch {dir}/stopped-once; echo "KEEP-GOING: check the tests" >&2; exit 2; fi
exit 0"#,
            dir = p.display()
        ),
    );
    let failing = hook_script(&env, "fail.sh", "cat >/dev/null; echo broken >&2; exit 1");
    user_settings(
        &env,
        &json!({"hooks": {
            "PostToolUse": [{"matcher": "Bash", "hooks": [command_hook(&post)]}],
            "PostToolUseFailure": [{"matcher": "Bash", "hooks": [command_hook(&post)]}],
            "Stop": [{"hooks": [command_hook(&stop), command_hook(&failing)]}]
        }}),
    );
    let _daemon = env.start_daemon();
    let model = env.script(
        "post.json",
        &script(vec![
            turn(vec![agentd_e2e::script::tool(
                "Bash",
                json!({"command": "echo fine"}),
            )]),
            turn(vec![agentd_e2e::script::tool(
                "Bash",
                json!({"command": "exit 3"}),
            )]),
            turn(vec![text("first end")]),
            turn(vec![text("second end")]),
        ]),
    );
    let id = env.start_model(&model, &[]);
    env.ctl(&["wait", &id]).expect_code(0);
    let transcript = env.transcript(&id);
    let got = tool_results(&transcript);
    assert!(
        got[0].1.contains("fine") && got[0].1.contains("POST-CONTEXT"),
        "{:?}",
        got[0]
    );
    assert!(
        got[1].0 && got[1].1.contains("FAILURE-SEEN"),
        "{:?}",
        got[1]
    );
    // The Stop hook's reason became the next user text; then it ended.
    let said = transcript.to_vec();
    let users: Vec<String> = said
        .iter()
        .filter(|e| e["role"] == "user")
        .map(|e| e["content"].to_string())
        .collect();
    assert!(
        users
            .iter()
            .any(|u| u.contains("KEEP-GOING: check the tests")),
        "{users:?}"
    );
    assert_eq!(env.show(&id)["result"], "second end");
    let inputs: Vec<Value> = std::fs::read_to_string(p.join("stop-inputs.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(inputs.len(), 2);
    assert_eq!(inputs[0]["stop_hook_active"], false);
    assert_eq!(inputs[1]["stop_hook_active"], true);
    assert_eq!(inputs[0]["hook_event_name"], "Stop");
    // The failing hook blocked nothing and is noted in the transcript.
    let notes = transcript
        .iter()
        .filter(|e| e["role"] == "system")
        .map(|e| e["content"].to_string())
        .collect::<Vec<_>>()
        .join("\n");
    assert!(
        notes.contains("Stop hook failed") && notes.contains("exit code 1"),
        "{notes}"
    );
}

#[test]
fn user_prompt_submit_refuses_a_message_and_adds_context_to_others() {
    let env = Env::new();
    let hook = hook_script(
        &env,
        "prompt.sh",
        r#"input=$(cat)
case "$input" in
  *FORBIDDEN*) echo "that topic is off limits" >&2; exit 2;;
esac
echo "CONTEXT-FOR-MODEL""#,
    );
    user_settings(
        &env,
        &json!({"hooks": {"UserPromptSubmit": [{"hooks": [command_hook(&hook)]}]}}),
    );
    let _daemon = env.start_daemon();
    let model = env.script(
        "prompt.json",
        &script(vec![turn(vec![text("one")]), turn(vec![text("two")])]),
    );
    let id = env.start_model(&model, &[]);
    env.ctl(&["wait", &id]).expect_code(0);
    env.ctl(&["send", &id, "tell me about FORBIDDEN things"])
        .expect_code(0);
    env.wait_for_agent(&id, "the refused message's end", |a| {
        a["status"] != "running" && a["status"] != "pending"
    });
    env.ctl(&["send", &id, "a fine question"]).expect_code(0);
    env.wait_for_agent(&id, "the answer", |a| a["result"] == "two");
    let transcript = env.transcript(&id);
    let all = serde_json::to_string(&transcript).unwrap();
    let users: Vec<String> = transcript
        .iter()
        .filter(|e| e["role"] == "user")
        .map(|e| e["content"].to_string())
        .collect();
    assert!(
        !users.iter().any(|u| u.contains("FORBIDDEN")),
        "never sent: {users:?}"
    );
    assert!(all.contains("off limits"), "the refusal is noted: {all}");
    assert!(
        users
            .iter()
            .any(|u| u.contains("a fine question") && u.contains("CONTEXT-FOR-MODEL")),
        "{users:?}"
    );
}

#[test]
fn a_hanging_hook_is_killed_at_its_timeout_and_never_holds_an_interrupt() {
    let env = Env::new();
    let p = env.project();
    let slow = hook_script(&env, "slow.sh", "cat >/dev/null; sleep 600");
    user_settings(
        &env,
        &json!({"hooks": {"PreToolUse": [
            {"matcher": "Bash", "hooks": [{"type": "command", "command": slow.display().to_string(), "timeout": 1}]},
            {"matcher": "Write", "hooks": [{"type": "command", "command": slow.display().to_string(), "timeout": 600}]}
        ]}}),
    );
    let daemon = env.start_daemon();
    // Bash: killed after 1 s, noted, and the call runs.
    let model = env.script("slow.json", &bash_each(&["echo after-the-hook".into()]));
    let id = env.start_model(&model, &[]);
    env.ctl(&["wait", &id]).expect_code(0);
    let got = tool_results(&env.transcript(&id));
    assert!(!got[0].0 && got[0].1.contains("after-the-hook"), "{got:?}");
    let all = serde_json::to_string(&env.transcript(&id)).unwrap();
    assert!(all.contains("ran past its timeout and was killed"), "{all}");
    // Write: the hook would run for ten minutes; an interrupt stops it now.
    let model = env.script(
        "write.json",
        &script(vec![
            turn(vec![agentd_e2e::script::tool(
                "Write",
                json!({"file_path": p.join("never.txt").display().to_string(), "content": "x"}),
            )]),
            turn(vec![text("done")]),
        ]),
    );
    let id = env.start_model(&model, &[]);
    env.wait_for_agent(&id, "the hook to start", |a| a["status"] == "running");
    // (The hook is running once its process exists in the agent's namespace;
    // the interrupt must work whether or not it has started.)
    env.ctl(&["interrupt", &id]).expect_code(0);
    let a = env.wait_for_agent(&id, "the interrupt", |a| a["status"] == "paused");
    assert_eq!(a["status"], "paused");
    assert!(!p.join("never.txt").exists());
    // And a daemon stop is not held by one either.
    let id = env.start_model(&model, &[]);
    env.wait_for_agent(&id, "the hook to start", |a| a["status"] == "running");
    let status = daemon.terminate();
    assert!(status.success(), "{status:?}");
}

#[test]
fn a_repositorys_hook_runs_nothing_until_approved() {
    let env = Env::new();
    let p = env.project();
    agentd_e2e::gitrepo::init_repo(&p);
    let marker = p.join("marker.txt");
    std::fs::write(&marker, "").unwrap();
    std::fs::create_dir_all(p.join(".claude")).unwrap();
    std::fs::write(
        p.join(".claude/settings.json"),
        serde_json::to_vec(&json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "command", "command": format!("cat >/dev/null; echo ran >> {}", marker.display())}
        ]}]}}))
        .unwrap(),
    )
    .unwrap();
    let _daemon = env.start_daemon();
    let model = env.script("repo.json", &bash_each(&["echo hi".into()]));
    let id = env.start_model(&model, &[]);
    env.ctl(&["wait", &id]).expect_code(0);
    assert_eq!(
        std::fs::read_to_string(&marker).unwrap(),
        "",
        "ran nothing unapproved"
    );
    let rows = env.ctl(&["rules", "list", "--json"]).expect_code(0).json();
    let hook = rows
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["kind"] == "hook")
        .unwrap()
        .clone();
    assert_eq!(hook["applies"], false, "{hook}");
    env.ctl(&["rules", "approve", "--all"]).expect_code(0);
    let id = env.start_model(&model, &[]);
    env.ctl(&["wait", &id]).expect_code(0);
    assert_eq!(std::fs::read_to_string(&marker).unwrap(), "ran\n");
}

/// The calls a logging hook saw, by the path they read.
fn hooked_reads(log: &std::path::Path) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            v["tool_input"]["file_path"].as_str().unwrap().to_string()
        })
        .collect()
}

#[test]
fn after_a_sigkill_a_call_its_hook_allowed_is_not_asked_again_and_one_never_asked_is() {
    use agentd_e2e::script::tool;
    let env = Env::new();
    let p = env.project();
    std::fs::write(p.join("a.txt"), "AAA").unwrap();
    std::fs::write(p.join("b.txt"), "BBB").unwrap();
    let log = p.join("read-hook.jsonl");
    let hook = hook_script(
        &env,
        "read.sh",
        &format!(
            r#"cat >> {log}; echo >> {log}
echo '{{"hookSpecificOutput": {{"hookEventName": "PreToolUse", "permissionDecision": "allow"}}}}'"#,
            log = log.display()
        ),
    );
    user_settings(
        &env,
        &json!({"hooks": {"PreToolUse": [{"matcher": "Read", "hooks": [command_hook(&hook)]}]}}),
    );
    let a = p.join("a.txt").display().to_string();
    let b = p.join("b.txt").display().to_string();
    let started = p.join("started");
    let sleep = format!("touch {}; sleep 60", started.display());
    // 1: Read a (its hook allows, kept), then a long Bash: killed there.
    let model = env.script(
        "first.json",
        &script(vec![
            turn(vec![
                tool("Read", json!({"file_path": a})),
                tool("Bash", json!({"command": sleep})),
            ]),
            turn(vec![text("done")]),
        ]),
    );
    let daemon = env.start_daemon();
    let first = env.start_model(&model, &[]);
    agentd_e2e::wait_until("Bash start", std::time::Duration::from_secs(60), || {
        started.exists()
    });
    assert_eq!(hooked_reads(&log), std::slice::from_ref(&a));
    daemon.kill9();
    let daemon = env.start_daemon();
    env.ctl(&["wait", &first]).expect_code(0);
    assert_eq!(
        hooked_reads(&log),
        std::slice::from_ref(&a),
        "not asked again"
    );
    let got = tool_results(&env.transcript(&first));
    assert!(got[0].1.contains("AAA"), "the read ran again: {got:?}");
    assert!(
        got[1].0,
        "the Bash call is answered as interrupted: {got:?}"
    );

    // 2: a long Bash first, the Read after it: the crash comes before its
    // hook was asked, so it is asked at the restart.
    std::fs::remove_file(&started).unwrap();
    let model = env.script(
        "second.json",
        &script(vec![
            turn(vec![
                tool(
                    "Bash",
                    json!({"command": format!("touch {}; sleep 60", started.display())}),
                ),
                tool("Read", json!({"file_path": b})),
            ]),
            turn(vec![text("done")]),
        ]),
    );
    let second = env.start_model(&model, &[]);
    agentd_e2e::wait_until("Bash start", std::time::Duration::from_secs(60), || {
        started.exists()
    });
    assert_eq!(hooked_reads(&log), std::slice::from_ref(&a));
    daemon.kill9();
    let _daemon = env.start_daemon();
    env.ctl(&["wait", &second]).expect_code(0);
    assert_eq!(hooked_reads(&log), [a, b], "asked once, at the restart");
}

#[test]
fn session_start_session_end_pre_compact_and_notification_hooks_run_with_their_fields() {
    use agentd_e2e::mock::{MockServer, Reply};
    let mock = MockServer::start();
    let env = Env::with_mock(&mock);
    let p = env.project();
    let log = p.join("events.jsonl");
    let logger = hook_script(
        &env,
        "log.sh",
        &format!("cat >> {log}; echo >> {log}", log = log.display()),
    );
    let start = hook_script(&env, "start.sh", "cat >/dev/null; echo SESSION-CONTEXT");
    let logged = |event: &str| -> Vec<Value> {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .filter(|v| v["hook_event_name"] == event)
            .collect()
    };
    user_settings(
        &env,
        &json!({"hooks": {
            "SessionStart": [{"matcher": "startup", "hooks": [command_hook(&start), command_hook(&logger)]}],
            "SessionEnd": [{"hooks": [command_hook(&logger)]}],
            "PreCompact": [{"matcher": "manual", "hooks": [command_hook(&logger)]}],
            "Notification": [{"matcher": "permission_prompt", "hooks": [command_hook(&logger)]}]
        }}),
    );
    let _daemon = env.start_daemon();
    mock.enqueue(Reply::text("hello"));
    let id = env.run_background(agentd_e2e::mock::MODEL, "events", "START-PROMPT");
    env.ctl(&["wait", &id]).expect_code(0);
    // SessionStart's output is context the model was sent with the prompt.
    let first = &mock.requests()[0];
    assert!(
        first.body_contains("SESSION-CONTEXT"),
        "{}",
        first.body_text()
    );
    assert_eq!(logged("SessionStart")[0]["source"], "startup");
    let ends = logged("SessionEnd");
    assert_eq!(ends.len(), 1, "{ends:?}");
    assert_eq!(ends[0]["reason"], "completed");
    // PreCompact, matched against "manual".
    mock.when(
        agentd_e2e::compacting::is_summary_request,
        Reply::text("SUMMARY"),
    );
    env.ctl(&["compact", &id]).expect_code(0);
    let compacts = logged("PreCompact");
    assert_eq!(compacts.len(), 1, "{compacts:?}");
    assert_eq!(compacts[0]["trigger"], "manual");
    // Notification, when the agent asks for permission.
    mock.enqueue(Reply::tool("", "Bash", json!({"command": "echo x"})));
    let asker = env.start_agent(&[
        "--model",
        agentd_e2e::mock::MODEL,
        "--permission-mode",
        "default",
        "ASK",
    ]);
    env.wait_for_agent(&asker, "its ask", |a| a["status"] == "waiting");
    agentd_e2e::wait_until(
        "the Notification hook",
        std::time::Duration::from_secs(60),
        || !logged("Notification").is_empty(),
    );
    let n = &logged("Notification")[0];
    assert_eq!(n["notification_type"], "permission_prompt");
    assert!(n["message"].as_str().unwrap().contains("Bash"), "{n}");
    assert_eq!(n["agent_id"], asker);
    env.ctl(&["stop", &asker]).expect_code(0);
}

#[test]
fn a_pre_tool_use_continue_false_pauses_the_agent_before_the_call_and_a_message_continues_it() {
    let env = Env::new();
    let p = env.project();
    // Stops the agent while a STOP file exists; lets everything run after.
    let pre = hook_script(
        &env,
        "stop.sh",
        &format!(
            r#"cat >/dev/null
if [ -e {dir}/STOP ]; then
  echo '{{"continue": false, "stopReason": "enough for today"}}'
fi
exit 0"#,
            dir = p.display()
        ),
    );
    std::fs::write(p.join("STOP"), "").unwrap();
    user_settings(
        &env,
        &json!({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [command_hook(&pre)]}]}}),
    );
    let _daemon = env.start_daemon();
    let model = env.script("stop.json", &bash_each(&["touch MARKER".into()]));
    let id = env.start_model(&model, &["--permission-mode", "bypass"]);
    let a = env.wait_for_agent(&id, "the hook's stop", |a| a["status"] == "paused");
    assert_eq!(a["status"], "paused", "{a}");
    assert!(!p.join("MARKER").exists(), "the call never ran");
    let all = serde_json::to_string(&env.transcript(&id)).unwrap();
    assert!(
        all.contains("a PreToolUse hook stopped the agent: enough for today"),
        "{all}"
    );
    // The model is told why the call did not run (not "a permission ask").
    let got = tool_results(&env.transcript(&id));
    assert!(
        got[0].0
            && got[0].1.contains(
                "a PreToolUse hook stopped the agent before this Bash call (enough for today)"
            ),
        "{got:?}"
    );
    // Once the hook lets it, a message continues the agent (the stopped
    // call is the model's to make again: nothing runs behind its back).
    std::fs::remove_file(p.join("STOP")).unwrap();
    env.ctl(&["send", &id, "go on"]).expect_code(0);
    env.wait_status(&id, "completed", std::time::Duration::from_secs(120));
    assert!(!p.join("MARKER").exists());
}
