//! A full disk (DESIGN §3, §16): only the agents whose writes need space
//! wait, with a clear reason; reads go on; once space is back the same
//! daemon continues them and takes new work; nothing acknowledged is lost.
//! Runs on a small tmpfs, which needs root (CI runs as root).

#![allow(clippy::unwrap_used)] // Tests: a panic is the failure report.

use std::time::Duration;

use agentd_e2e::disk::SmallDisk;
use agentd_e2e::mock::{Block, MockMessage, MockServer, Reply};
use agentd_e2e::{Env, wait_until};
use serde_json::Value;

/// Every entry once, in order, and every tool call answered once.
fn assert_clean(entries: &[Value]) {
    for (i, e) in entries.iter().enumerate() {
        assert_eq!(e["seq"], i as u64, "sequence numbers are contiguous");
    }
    let mut answered = std::collections::HashSet::new();
    for e in entries {
        for b in e["content"].as_array().into_iter().flatten() {
            if b["type"] == "tool_result" {
                let id = b["tool_use_id"].as_str().unwrap().to_string();
                assert!(answered.insert(id.clone()), "{id} answered twice");
            }
        }
    }
}

/// A world on a small disk: the data directory on a tmpfs, the mock
/// serving `turns` tool rounds that each sleep a little.
fn world(turns: usize, min_free_mb: u64) -> Option<(Env, MockServer, SmallDisk)> {
    let env = Env::new();
    let disk = SmallDisk::mount(&env.root.path().join("small"), 48)?;
    let mock = MockServer::start();
    env.use_mock(&mock.url());
    env.set_daemon_env(
        "AGENTD_DATA_DIR",
        &disk.path.join("data").display().to_string(),
    );
    env.write_config(&format!("store_min_free_mb = {min_free_mb}\n"));
    for i in 0..turns {
        mock.enqueue(Reply::Message(
            MockMessage::text(format!("step {i}")).with(Block::bash(format!("t{i}"), "sleep 0.15")),
        ));
    }
    mock.enqueue(Reply::Message(MockMessage::text("all steps done")));
    Some((env, mock, disk))
}

fn run_through_a_full_disk(min_free_mb: u64, leave: u64, sled_failed: bool) {
    let Some((env, mock, disk)) = world(30, min_free_mb) else {
        return;
    };
    let _daemon = env.start_daemon();
    let id = env.start_agent(&["--model", "anthropic:claude-test", "many steps"]);
    wait_until("a few steps", Duration::from_secs(20), || {
        env.show(&id)["transcript_len"].as_u64().unwrap() >= 5
    });
    let ballast = disk.fill(leave);

    // The writer waits, and says why.
    wait_until("the agent waits for space", Duration::from_secs(20), || {
        env.show(&id)["status"] == "waiting"
    });
    let agent = env.show(&id);
    let why = agent["waiting_for"].as_str().unwrap();
    assert!(
        why.contains("disk space") && why.contains("out of disk space"),
        "{agent}"
    );
    let seen = agent["transcript_len"].as_u64().unwrap();
    // Reads are served meanwhile.
    env.ctl(&["list"]).expect_code(0);
    env.ctl(&["log", &id]).expect_code(0);
    assert_eq!(env.ctl(&["status", "--json"]).json()["disk_full"], true);
    // New work is refused with the reason, and nothing of it is stored.
    let refused = env.ctl(&[
        "run",
        "--background",
        "--model",
        "anthropic:claude-test",
        "new work",
    ]);
    refused.expect_code(1);
    assert!(
        refused.stderr.contains("resource exhausted") && refused.stderr.contains("disk space"),
        "{}",
        refused.stderr
    );

    // Space is back: the same daemon goes on.
    std::fs::remove_file(&ballast).unwrap();
    env.ctl(&["wait", &id, "--timeout", "60"]).expect_code(0);
    assert_eq!(env.show(&id)["result"], "all steps done");
    let log = env.ctl(&["log", &id, "--json"]).expect_code(0).json();
    let entries = log.as_array().unwrap();
    assert!(
        entries.len() as u64 >= seen,
        "nothing acknowledged was lost"
    );
    assert_clean(entries);
    mock.enqueue(Reply::Message(MockMessage::text("new work done")));
    let later = env.ctl(&[
        "run",
        "--model",
        "anthropic:claude-test",
        "after the disk was freed",
    ]);
    later.expect_code(0);
    assert!(later.stdout.contains("new work done"), "{}", later.stdout);
    assert_eq!(env.ctl(&["status", "--json"]).json()["disk_full"], false);
    let healed = format!("reopened={sled_failed}");
    assert!(
        env.daemon_log_text().contains(&healed),
        "expected the store to heal with {healed}:\n{}",
        env.daemon_log_text()
    );
}

#[test]
fn a_full_disk_pauses_only_its_writers_and_heals_without_a_restart() {
    // The usual case: agentd notices the space running out before sled does.
    run_through_a_full_disk(8, 2 * 1024 * 1024, false);
}

#[test]
fn a_store_whose_write_failed_for_lack_of_space_is_reopened_when_space_returns() {
    // No margin: the disk fills completely, a write fails inside sled, and
    // sled refuses everything until the database is opened again.
    run_through_a_full_disk(0, 0, true);
}

#[test]
fn the_daemon_starts_on_a_full_disk_and_resumes_its_agents_once_space_is_back() {
    let Some((env, _mock, disk)) = world(30, 8) else {
        return;
    };
    let daemon = env.start_daemon();
    let id = env.start_agent(&["--model", "anthropic:claude-test", "many steps"]);
    wait_until("a few steps", Duration::from_secs(20), || {
        env.show(&id)["transcript_len"].as_u64().unwrap() >= 5
    });
    let ballast = disk.fill(2 * 1024 * 1024);
    daemon.kill9();
    // It starts, says what it is doing, and serves reads.
    let _daemon = env.start_daemon();
    assert_eq!(env.show(&id)["status"], "interrupted");
    assert_eq!(env.ctl(&["status", "--json"]).json()["disk_full"], true);
    assert!(
        env.daemon_log_text()
            .contains("resuming once space is back")
    );
    std::fs::remove_file(&ballast).unwrap();
    wait_until(
        "the agent resumed and completed",
        Duration::from_secs(60),
        || env.show(&id)["status"] == "completed",
    );
    assert_eq!(env.show(&id)["result"], "all steps done");
    let log = env.ctl(&["log", &id, "--json"]).expect_code(0).json();
    assert_clean(log.as_array().unwrap());
}

/// With not one byte free the daemon still starts (the store's reserve
/// makes room for sled to open), serves reads, and writes again once space
/// is back — the hostile review found it refusing to start.
#[test]
fn the_daemon_starts_with_no_byte_free_and_writes_once_space_returns() {
    let Some((env, _mock, disk)) = world(30, 8) else {
        return;
    };
    let daemon = env.start_daemon();
    let id = env.start_agent(&["--model", "anthropic:claude-test", "many steps"]);
    wait_until("a few steps", Duration::from_secs(20), || {
        env.show(&id)["transcript_len"].as_u64().unwrap() >= 5
    });
    daemon.kill9();
    let ballast = disk.fill(0);
    assert!(disk.free() < 64 * 1024, "{} bytes free", disk.free());
    let _daemon = env.start_daemon();
    assert_eq!(env.show(&id)["status"], "interrupted");
    assert_eq!(env.ctl(&["status", "--json"]).json()["disk_full"], true);
    std::fs::remove_file(&ballast).unwrap();
    wait_until(
        "the agent resumed and completed",
        Duration::from_secs(60),
        || env.show(&id)["status"] == "completed",
    );
    let log = env.ctl(&["log", &id, "--json"]).expect_code(0).json();
    assert_clean(log.as_array().unwrap());
    // The room for the next time is kept again.
    wait_until("the reserve is back", Duration::from_secs(10), || {
        disk.path.join("data/reserve").exists()
    });
}

/// An agent a full disk keeps from resuming after a restart says so: it is
/// `interrupted` with `waiting_for` naming disk space, not stuck without a
/// reason (found by the torture run).
#[test]
fn an_agent_a_full_disk_keeps_from_resuming_says_why() {
    let mock = MockServer::start();
    let env = Env::with_mock(&mock);
    mock.enqueue(Reply::Message(
        MockMessage::text("working").with(Block::bash("t0", "sleep 30")),
    ));
    let daemon = env.start_daemon();
    let id = env.start_agent(&["--model", "anthropic:claude-test", "hold"]);
    wait_until("the tool runs", Duration::from_secs(20), || {
        env.show(&id)["transcript_len"].as_u64().unwrap() >= 2
    });
    daemon.kill9();
    // More free space wanted than any disk has: the disk counts as full.
    env.write_config("store_min_free_mb = 100000000\n");
    let _daemon = env.start_daemon();
    let agent = env.show(&id);
    assert_eq!(agent["status"], "interrupted", "{agent}");
    assert!(agent["resume_blocked_reason"].is_null(), "{agent}");
    assert!(
        agent["waiting_for"]
            .as_str()
            .unwrap_or("")
            .starts_with("disk space"),
        "{agent}"
    );
}

/// sled applies a write in memory before its flush fails on a full disk,
/// and serves it until the store is reopened: an agent whose creation
/// failed was listed and shown, then gone after a restart (found by the
/// torture run). Refused means it does not exist, ever.
#[test]
fn an_agent_whose_creation_failed_on_a_full_disk_is_never_shown() {
    let Some((env, _mock, disk)) = world(0, 0) else {
        return;
    };
    let daemon = env.start_daemon();
    env.ctl(&["status"]).expect_code(0);
    let ballast = disk.fill(0);
    let mut refused = 0;
    for i in 0..5 {
        let name = format!("phantom-{i}");
        let out = env.ctl(&[
            "run",
            "--background",
            "--model",
            "anthropic:claude-test",
            "--name",
            &name,
            "never",
        ]);
        if out.code == 0 {
            continue;
        }
        refused += 1;
        assert!(out.stderr.contains("disk space"), "{}", out.stderr);
        let listed = env.ctl(&["list", "--all", "--json"]).expect_code(0).json();
        assert!(
            !listed.to_string().contains(&name),
            "a refused agent is listed: {listed}"
        );
        let shown = env.ctl(&["show", &name]);
        assert!(
            shown.code != 0 && shown.stderr.contains("not found"),
            "{}",
            shown.stderr
        );
    }
    assert!(refused > 0, "the full disk refused nothing");
    std::fs::remove_file(&ballast).unwrap();
    wait_until("the store heals", Duration::from_secs(20), || {
        env.ctl(&["status", "--json"]).json()["disk_full"] == false
    });
    daemon.kill9();
    let _daemon = env.start_daemon();
    let listed = env.ctl(&["list", "--all", "--json"]).expect_code(0).json();
    assert!(!listed.to_string().contains("phantom-"), "{listed}");
}
