//! `agentctl run`, `list`, `show`, `log`, `wait`, `stop` against the real daemon.

#![allow(clippy::unwrap_used)] // Tests: a panic is the failure report.

use agentd_e2e::Env;
use agentd_e2e::script::{delayed, script, text, tool, turn};
use serde_json::{Value, json};

fn demo_script() -> Value {
    script(vec![
        turn(vec![
            text("Listing files."),
            tool("Bash", json!({"command": "ls -1"})),
        ]),
        turn(vec![
            text("Reading the notes."),
            tool("Read", json!({"file_path": "notes.txt"})),
        ]),
        turn(vec![
            text("Writing a summary."),
            tool(
                "Write",
                json!({"file_path": "out/summary.md", "content": "# Summary\nnotes has 2 lines\n"}),
            ),
        ]),
        turn(vec![text("Done: wrote out/summary.md.")]),
    ])
}

#[test]
fn run_in_foreground_writes_files_and_records_the_transcript() {
    let env = Env::new();
    std::fs::write(env.project().join("notes.txt"), "alpha\nbeta\n").unwrap();
    let _daemon = env.start_daemon();
    let model = env.script("demo.json", &demo_script());

    let out = env.ctl(&[
        "run",
        "--model",
        &model,
        "--name",
        "demo",
        "Summarize the notes",
    ]);
    out.expect_code(0);
    assert!(out.stdout.contains("Listing files."), "{}", out.stdout);
    assert!(
        out.stdout.contains("Done: wrote out/summary.md."),
        "{}",
        out.stdout
    );
    assert!(out.stderr.contains("✓ Bash(ls -1)"), "{}", out.stderr);
    assert!(
        out.stderr.contains("✓ Write(out/summary.md)"),
        "{}",
        out.stderr
    );
    assert_eq!(
        std::fs::read_to_string(env.project().join("out/summary.md")).unwrap(),
        "# Summary\nnotes has 2 lines\n"
    );

    let log = env.ctl(&["log", "demo", "--json"]).expect_code(0).json();
    let entries = log.as_array().unwrap();
    let roles: Vec<&str> = entries
        .iter()
        .map(|e| e["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        [
            "user",
            "assistant",
            "user",
            "assistant",
            "user",
            "assistant",
            "user",
            "assistant"
        ]
    );
    let seqs: Vec<u64> = entries.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, (0..8).collect::<Vec<u64>>());
    assert_eq!(
        entries[0]["content"],
        json!([{"type": "text", "text": "Summarize the notes"}])
    );
    // Tool results pair with their tool_use ids and carry the real output.
    let ls_id = entries[1]["content"][1]["id"].as_str().unwrap();
    let ls_result = &entries[2]["content"][0];
    assert_eq!(ls_result["type"], "tool_result");
    assert_eq!(ls_result["tool_use_id"], ls_id);
    assert!(ls_result["content"].as_str().unwrap().contains("notes.txt"));
    let read_result = entries[4]["content"][0]["content"].as_str().unwrap();
    assert!(
        read_result.contains("alpha") && read_result.contains("beta"),
        "{read_result}"
    );
    assert_eq!(entries[7]["stop_reason"], "end_turn");
    assert_eq!(entries[1]["stop_reason"], "tool_use");

    let agent = env.show("demo");
    assert_eq!(agent["status"], "completed");
    assert_eq!(agent["turns"], 4);
    assert_eq!(agent["tool_uses"], 3);
    assert_eq!(agent["result"], "Done: wrote out/summary.md.");
    assert_eq!(agent["transcript_len"], 8);
}

#[test]
fn background_run_prints_only_the_id_and_wait_returns_the_result() {
    let env = Env::new();
    let _daemon = env.start_daemon();
    let model = env.script(
        "s.json",
        &script(vec![delayed(300, vec![text("background answer")])]),
    );
    let out = env.ctl(&["run", "--background", "--model", &model, "work quietly"]);
    out.expect_code(0);
    let id = out.stdout.trim_end_matches('\n');
    assert_eq!(
        out.stdout,
        format!("{id}\n"),
        "stdout must hold the id alone"
    );
    assert!(uuid_like(id), "{id}");

    let waited = env.ctl(&["wait", id]);
    waited.expect_code(0);
    assert_eq!(waited.stdout, "background answer\n");
    let agent = env.ctl(&["show", &id[..8], "--json"]).expect_code(0).json();
    assert_eq!(agent["status"], "completed");
    assert_eq!(agent["background"], true);
}

fn uuid_like(s: &str) -> bool {
    s.len() == 36 && s.chars().filter(|c| *c == '-').count() == 4
}

#[test]
fn wait_times_out_with_124_and_stop_cancels_a_running_agent() {
    let env = Env::new();
    let _daemon = env.start_daemon();
    let model = env.script(
        "slow.json",
        &script(vec![delayed(60_000, vec![text("too late")])]),
    );
    let id = env.start_agent(&["--model", &model, "--name", "slow", "wait a minute"]);
    env.wait_for_agent(&id, "running", |a| a["status"] == "running");
    env.ctl(&["wait", "slow", "--timeout", "0.3"])
        .expect_code(124);

    let started = std::time::Instant::now();
    let stopped = env.ctl(&["stop", "slow"]);
    stopped.expect_code(0);
    assert!(stopped.stdout.contains("cancelled"), "{}", stopped.stdout);
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    env.ctl(&["wait", &id]).expect_code(1);
    let agent = env.show(&id);
    assert_eq!(agent["status"], "cancelled");
    // The unfinished response was never written.
    let log = env.ctl(&["log", &id, "--json"]).expect_code(0).json();
    assert_eq!(log.as_array().unwrap().len(), 1);
    // Stopping again is refused: there is nothing to stop.
    let again = env.ctl(&["stop", &id]);
    again.expect_code(1);
    assert!(
        again.stderr.contains("already cancelled"),
        "{}",
        again.stderr
    );
}

#[test]
fn stop_kills_a_running_tool_promptly() {
    let env = Env::new();
    let _daemon = env.start_daemon();
    let marker = env.project().join("marker");
    let model = env.script(
        "sleepy.json",
        &script(vec![
            turn(vec![tool(
                "Bash",
                json!({"command": format!("touch {}; sleep 60; echo finished > {}", marker.display(), marker.display())}),
            )]),
            turn(vec![text("never")]),
        ]),
    );
    let id = env.start_agent(&["--model", &model, "sleep"]);
    agentd_e2e::wait_for_path(&marker);
    let started = std::time::Instant::now();
    env.ctl(&["stop", &id]).expect_code(0);
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    std::thread::sleep(std::time::Duration::from_millis(200));
    assert_eq!(
        std::fs::read_to_string(&marker).unwrap(),
        "",
        "the command's process group was not killed"
    );
}

#[test]
fn foreground_run_exits_1_when_the_agent_fails() {
    let env = Env::new();
    let _daemon = env.start_daemon();
    // Two tool turns but max_turns 1: the agent cannot finish.
    let model = env.script(
        "loop.json",
        &script(vec![
            turn(vec![tool("Bash", json!({"command": "true"}))]),
            turn(vec![text("unreachable")]),
        ]),
    );
    let out = env.ctl(&["run", "--max-turns", "1", "--model", &model, "loop"]);
    out.expect_code(1);
    assert!(out.stderr.contains("max_turns (1)"), "{}", out.stderr);
    let agents = env.ctl(&["list", "--json"]).expect_code(0).json();
    assert_eq!(agents[0]["status"], "failed");
    assert!(agents[0]["error"].as_str().unwrap().contains("max_turns"));
}

#[test]
fn script_running_out_of_turns_fails_the_agent_with_a_clear_error() {
    let env = Env::new();
    let _daemon = env.start_daemon();
    let model = env.script(
        "short.json",
        &script(vec![turn(vec![tool("Bash", json!({"command": "true"}))])]),
    );
    let out = env.ctl(&["run", "--model", &model, "go"]);
    out.expect_code(1);
    assert!(out.stderr.contains("has 1 turns"), "{}", out.stderr);
}

#[test]
fn json_shapes_of_list_show_and_log() {
    let env = Env::new();
    let _daemon = env.start_daemon();
    let model = env.script("s.json", &script(vec![turn(vec![text("hi")])]));
    env.ctl(&["run", "--model", &model, "--name", "shape", "say hi"])
        .expect_code(0);

    let list = env.ctl(&["list", "--json"]).expect_code(0).json();
    let agent = &list.as_array().unwrap()[0];
    for key in [
        "id",
        "short_id",
        "name",
        "description",
        "subagent_type",
        "status",
        "background",
        "parent_id",
        "model",
        "cwd",
        "created_at",
        "updated_at",
        "turns",
        "usage",
        "can_message",
        "resume_blocked_reason",
        "result",
        "error",
    ] {
        assert!(agent.get(key).is_some(), "list entry lacks {key}: {agent}");
    }
    for key in [
        "input_tokens",
        "output_tokens",
        "cache_read_input_tokens",
        "cache_creation_input_tokens",
    ] {
        assert!(agent["usage"][key].is_u64(), "usage lacks {key}");
    }
    assert_eq!(agent["short_id"], agent["id"].as_str().unwrap()[..8]);
    assert_eq!(agent["name"], "shape");
    assert_eq!(agent["description"], "say hi");
    assert_eq!(agent["status"], "completed");
    assert_eq!(agent["can_message"], true);
    assert!(agent["parent_id"].is_null());
    assert!(agent["error"].is_null());
    assert_eq!(
        agent["cwd"],
        env.project().canonicalize().unwrap().display().to_string()
    );
    let created = agent["created_at"].as_str().unwrap();
    assert!(
        created.ends_with('Z') && created.contains('T'),
        "not RFC 3339: {created}"
    );

    let show = env.show("shape");
    assert_eq!(show["id"], agent["id"]);
    assert_eq!(show["result"], "hi");

    let log = env.ctl(&["log", "shape", "--json"]).expect_code(0).json();
    let entries = log.as_array().unwrap();
    assert_eq!(entries.len(), 2);
    for e in entries {
        for key in ["seq", "role", "content", "created_at"] {
            assert!(e.get(key).is_some(), "entry lacks {key}: {e}");
        }
    }
    assert!(
        entries[0].get("usage").is_none(),
        "usage only on assistant entries"
    );
    assert!(entries[1]["usage"]["output_tokens"].is_u64());
    assert_eq!(
        entries[1]["content"],
        json!([{"type": "text", "text": "hi"}])
    );

    let table = env.ctl(&["list"]);
    table.expect_code(0);
    let header = table.stdout.lines().next().unwrap();
    for col in [
        "ID",
        "NAME",
        "STATUS",
        "AGE",
        "TURNS",
        "MODEL",
        "DESCRIPTION",
    ] {
        assert!(header.contains(col), "{header}");
    }
    assert!(table.stdout.contains("shape") && table.stdout.contains("completed"));
}

#[test]
fn agents_made_in_one_burst_have_distinct_short_ids_that_resolve() {
    let env = Env::new();
    let _daemon = env.start_daemon();
    let model = env.script("s.json", &script(vec![turn(vec![text("ok")])]));
    // Twenty agents within a second: time-derived short ids would all be
    // the same eight digits.
    let ids: Vec<String> = (0..20)
        .map(|i| env.start_agent(&["--model", &model, &format!("agent {i}")]))
        .collect();
    let listed = env.ctl(&["list", "--json"]).expect_code(0).json();
    let shorts: Vec<String> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["short_id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(shorts.len(), 20);
    let distinct: std::collections::HashSet<&String> = shorts.iter().collect();
    assert_eq!(distinct.len(), 20, "short ids collide: {shorts:?}");
    let table = env.ctl(&["list"]).stdout;
    for (short, a) in shorts.iter().zip(listed.as_array().unwrap()) {
        assert!(table.contains(short.as_str()), "list shows {short}");
        // Whatever is shown resolves, to that agent.
        let shown = env.show(short);
        assert_eq!(shown["id"], a["id"]);
    }

    // Among twenty ids two share a first hex digit: that prefix is
    // ambiguous, and the error names the candidates by short id.
    let (a, _b) = ids
        .iter()
        .enumerate()
        .find_map(|(i, a)| {
            ids[i + 1..]
                .iter()
                .find(|b| b[..1] == a[..1])
                .map(|b| (a, b))
        })
        .expect("pigeonhole");
    let out = env.ctl(&["show", &a[..1]]);
    out.expect_code(1);
    assert!(out.stderr.contains("ambiguous"), "{}", out.stderr);
    let short_of = |id: &str| -> String { env.show(id)["short_id"].as_str().unwrap().to_string() };
    assert!(out.stderr.contains(&short_of(a)), "{}", out.stderr);
    // The shortest prefix of `a` that no other id shares works (a third
    // id may share more with `a` than `b` does, so look at all of them).
    let unique = (1..=a.len())
        .find(|&n| ids.iter().filter(|x| x.starts_with(&a[..n])).count() == 1)
        .expect("ids are distinct");
    let v = env
        .ctl(&["show", &a[..unique], "--json"])
        .expect_code(0)
        .json();
    assert_eq!(v["id"].as_str(), Some(a.as_str()));

    for unknown in [
        "ffffffff",
        "no-such-agent",
        "00000000-0000-7000-8000-000000000000",
    ] {
        let out = env.ctl(&["show", unknown]);
        out.expect_code(1);
        assert!(
            out.stderr.contains("no agent matches"),
            "{unknown}: {}",
            out.stderr
        );
        env.ctl(&["wait", unknown]).expect_code(1);
        env.ctl(&["stop", unknown]).expect_code(1);
        env.ctl(&["log", unknown]).expect_code(1);
    }
}

#[test]
fn names_in_use_by_unfinished_agents_are_refused() {
    let env = Env::new();
    let _daemon = env.start_daemon();
    let slow = env.script("slow.json", &script(vec![delayed(60_000, vec![text("x")])]));
    env.ctl(&[
        "run",
        "--background",
        "--model",
        &slow,
        "--name",
        "dup",
        "a",
    ])
    .expect_code(0);
    let out = env.ctl(&[
        "run",
        "--background",
        "--model",
        &slow,
        "--name",
        "dup",
        "b",
    ]);
    out.expect_code(1);
    assert!(
        out.stderr.contains("already exists") && out.stderr.contains("dup"),
        "{}",
        out.stderr
    );
    let bad = env.ctl(&[
        "run",
        "--background",
        "--model",
        &slow,
        "--name",
        "bad name",
        "c",
    ]);
    bad.expect_code(1);
    assert!(bad.stderr.contains("invalid agent name"), "{}", bad.stderr);
    // A name that reads as an id prefix would shadow that agent's id.
    for id_like in ["cafe", "0190ab", "3f2a-1b"] {
        let out = env.ctl(&[
            "run",
            "--background",
            "--model",
            &slow,
            "--name",
            id_like,
            "c",
        ]);
        out.expect_code(1);
        assert!(
            out.stderr.contains("reads as an agent id"),
            "{}",
            out.stderr
        );
    }
    assert_eq!(
        env.ctl(&["list", "--json"])
            .json()
            .as_array()
            .unwrap()
            .len(),
        1
    );
}

#[test]
fn status_reports_the_daemon_and_counts_agents() {
    let env = Env::new();
    let daemon = env.start_daemon();
    let model = env.script("s.json", &script(vec![turn(vec![text("ok")])]));
    env.ctl(&["run", "--model", &model, "x"]).expect_code(0);
    let s = env.ctl(&["status", "--json"]).expect_code(0).json();
    assert_eq!(s["pid"], daemon.pid());
    assert_eq!(s["socket"], env.socket().display().to_string());
    assert_eq!(s["data_dir"], env.data_dir().display().to_string());
    assert_eq!(s["agents"]["completed"], 1);
    assert_eq!(s["agents_total"], 1);
    assert!(s["version"].is_string() && s["uptime_secs"].is_u64());
}

#[test]
fn max_turns_bounds_each_run_not_the_agents_whole_life() {
    let env = Env::new();
    env.write_config("max_turns = 2\n");
    let _daemon = env.start_daemon();
    let model = env.script(
        "s.json",
        &script(vec![
            turn(vec![tool("Bash", json!({"command": "true"}))]),
            turn(vec![text("first task done")]),
            turn(vec![tool("Bash", json!({"command": "true"}))]),
            turn(vec![text("second task done")]),
        ]),
    );
    let id = env.run_background(&model, "budget", "first");
    env.wait_for_agent(&id, "completed", |a| a["status"] == "completed");
    // Two more model turns after a message: a new run, a new budget (an
    // editor session sends many messages to one agent).
    env.ctl(&["send", &id, "second", "--wait"]).expect_code(0);
    let done = env.wait_for_agent(&id, "completed", |a| {
        a["status"] == "completed" && a["turns"] == 4
    });
    assert_eq!(done["result"], "second task done", "{done}");
}
