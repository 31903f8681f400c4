//! The supervisor with a real store, scripted models and injected faults:
//! what the end-to-end tests cannot arrange precisely.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use super::{DaemonInfo, NewAgent, Supervisor};
use crate::config::Config;
use crate::domain::Status;
use crate::error::AgentdError;
use crate::store::{Store, StoreOptions};

struct World {
    dir: tempfile::TempDir,
    sup: Arc<Supervisor>,
}

fn world() -> World {
    world_with(Config::default())
}

fn world_with(config: Config) -> World {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    let store = Store::open(&data, StoreOptions::default()).unwrap();
    let models = config.model_settings().unwrap();
    let sup = Supervisor::new(
        store,
        config,
        models,
        DaemonInfo {
            socket: dir.path().join("run/s.sock"),
            data_dir: data,
            config_path: dir.path().join("config.toml"),
            socket_activated: false,
        },
    );
    sup.start_housekeeping();
    World { dir, sup }
}

impl World {
    fn script(&self, name: &str, turns: serde_json::Value) -> String {
        let path = self.dir.path().join(name);
        std::fs::write(&path, turns.to_string()).unwrap();
        format!("scripted:{}", path.display())
    }

    /// Where agents work: beside the daemon's directories, never around
    /// them (the sandbox refuses that).
    fn project(&self) -> std::path::PathBuf {
        let p = self.dir.path().join("project");
        std::fs::create_dir_all(&p).unwrap();
        p
    }

    fn new_agent(&self, model: &str, prompt: &str) -> NewAgent {
        NewAgent {
            prompt: prompt.into(),
            model: Some(crate::model::ModelSpec::parse(model).unwrap()),
            cwd: self.project(),
            background: true,
            ..Default::default()
        }
    }

    async fn status_becomes(&self, query: &str, status: Status) -> crate::domain::AgentRecord {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        loop {
            let r = self.sup.resolve(query).unwrap();
            if r.status == status {
                return r;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "{query} never became {status}: {r:?}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

fn steps(n: usize) -> serde_json::Value {
    let mut turns: Vec<_> = (0..n)
        .map(|i| {
            json!({"content": [
                {"type": "text", "text": format!("step {i}")},
                {"type": "tool_use", "name": "Bash", "input": {"command": "sleep 0.05"}}
            ]})
        })
        .collect();
    turns.push(json!({"content": [{"type": "text", "text": "finished"}]}));
    json!({ "turns": turns })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_refused_for_space_pauses_only_its_agent_until_the_store_heals() {
    let w = world();
    let idle = w.script(
        "idle.json",
        json!({"turns": [{"content": [{"type": "text", "text": "idle done"}]}]}),
    );
    let busy = w.script("busy.json", steps(8));
    let done = w.sup.create(w.new_agent(&idle, "be idle")).await.unwrap();
    w.status_becomes(&done.id.to_string(), Status::Completed)
        .await;
    let a = w.sup.create(w.new_agent(&busy, "work")).await.unwrap();
    let a_id = a.id.to_string();
    w.status_becomes(&a_id, Status::Running).await;

    // The store now reports no space: the next write of the busy agent is
    // refused, and it waits, saying why.
    w.sup.store().fake_free_space(Some(0));
    let waiting = w.status_becomes(&a_id, Status::Waiting).await;
    let why = w.sup.waiting_for(waiting.id).unwrap();
    assert!(why.starts_with("disk space"), "{why}");
    // Reads are served; the idle agent is untouched.
    assert_eq!(w.sup.list(true, None).unwrap().len(), 2);
    assert_eq!(
        w.sup.resolve(&done.id.to_string()).unwrap().status,
        Status::Completed
    );
    // New work is refused with RESOURCE_EXHAUSTED, and nothing is stored.
    let refused = w.sup.create(w.new_agent(&idle, "more")).await.unwrap_err();
    assert!(refused.is_disk_full(), "{refused}");
    assert!(matches!(refused, AgentdError::Store(_)));
    assert_eq!(w.sup.list(true, None).unwrap().len(), 2);

    // Space is back: the same supervisor finishes the agent and takes work.
    w.sup.store().fake_free_space(None);
    let finished = w.status_becomes(&a_id, Status::Completed).await;
    assert_eq!(finished.result(), "finished");
    let entries = w.sup.store().transcript(finished.id, 0, 1000).unwrap();
    for (i, e) in entries.iter().enumerate() {
        assert_eq!(e.seq, i as u64, "contiguous, nothing written twice");
    }
    assert_eq!(entries.len(), 2 + 2 * 8, "prompt, 8 rounds, answer");
    let later = w.sup.create(w.new_agent(&idle, "after")).await.unwrap();
    w.status_becomes(&later.id.to_string(), Status::Completed)
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transcript_with_a_corrupt_entry_is_not_continued_with_a_hole() {
    let w = world();
    let two = w.script(
        "two.json",
        json!({"turns": [
            {"content": [{"type": "text", "text": "first"}]},
            {"content": [{"type": "text", "text": "second"}]}
        ]}),
    );
    let a = w.sup.create(w.new_agent(&two, "talk")).await.unwrap();
    let id = a.id.to_string();
    w.status_becomes(&id, Status::Completed).await;
    w.sup.store().corrupt_entry_for_tests(a.id, 1);
    w.sup.send(&id, "and then?", None).await.unwrap();
    let failed = w.status_becomes(&id, Status::Failed).await;
    assert!(failed.error().contains("unreadable"), "{}", failed.error());
    assert!(w.sup.store().corrupt_count() >= 1, "counted");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_paused_while_waiting_for_space_continues_later_with_its_transcript_whole() {
    let w = world();
    let busy = w.script("busy.json", steps(6));
    let a = w.sup.create(w.new_agent(&busy, "work")).await.unwrap();
    let id = a.id.to_string();
    w.status_becomes(&id, Status::Running).await;
    w.sup.store().fake_free_space(Some(0));
    w.status_becomes(&id, Status::Waiting).await;
    // It stops, but its paused state cannot be written: the answer must
    // not say "paused" as if it were on disk (a crash would undo it).
    let not_on_disk = w.sup.pause(&id).await.unwrap_err();
    assert!(not_on_disk.is_disk_full(), "{not_on_disk}");
    assert!(
        not_on_disk
            .to_string()
            .contains("stopped (paused), but that is not on disk yet"),
        "{not_on_disk}"
    );
    let mut writable = w.sup.store().writable();
    w.sup.store().fake_free_space(None);
    tokio::time::timeout(Duration::from_secs(10), writable.wait_for(|w| *w))
        .await
        .unwrap()
        .unwrap();
    let paused = w.status_becomes(&id, Status::Paused).await;
    let entries = w.sup.store().transcript(a.id, 0, 1000).unwrap();
    assert_eq!(
        paused.transcript_len,
        entries.len() as u64,
        "the record counts what was written, not the entry that was not"
    );
    // Continuing it works: the transcript has no hole.
    w.sup.send(&id, "go on", None).await.unwrap();
    let done = w.status_becomes(&id, Status::Completed).await;
    assert_eq!(done.result(), "finished");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revival_refused_for_space_leaves_the_agent_as_it_was() {
    let w = world();
    let idle = w.script(
        "idle.json",
        json!({"turns": [
            {"content": [{"type": "text", "text": "one"}]},
            {"content": [{"type": "text", "text": "two"}]}
        ]}),
    );
    let a = w.sup.create(w.new_agent(&idle, "talk")).await.unwrap();
    let id = a.id.to_string();
    w.status_becomes(&id, Status::Completed).await;
    w.sup.store().fake_free_space(Some(0));
    let refused = w.sup.send(&id, "more", None).await.unwrap_err();
    assert!(refused.is_disk_full(), "{refused}");
    // Not left pending with no loop: still completed, and messages work
    // again once space is back.
    assert_eq!(w.sup.resolve(&id).unwrap().status, Status::Completed);
    w.sup.store().fake_free_space(None);
    tokio::time::sleep(Duration::from_millis(500)).await;
    w.sup.send(&id, "more", None).await.unwrap();
    let done = w.status_becomes(&id, Status::Completed).await;
    assert_eq!(done.result(), "two");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_cancelled_while_pending_never_runs() {
    let w = world_with(Config {
        max_running_agents: 1,
        ..Config::default()
    });
    let slow = w.script(
        "slow.json",
        json!({"turns": [{"delay_ms": 3000, "content": [{"type": "text", "text": "slow"}]}]}),
    );
    let quick = w.script(
        "quick.json",
        json!({"turns": [{"content": [{"type": "text", "text": "quick"}]}]}),
    );
    let holder = w
        .sup
        .create(w.new_agent(&slow, "hold the slot"))
        .await
        .unwrap();
    w.status_becomes(&holder.id.to_string(), Status::Running)
        .await;
    let b = w.sup.create(w.new_agent(&quick, "wait")).await.unwrap();
    let b_id = b.id.to_string();
    w.sup
        .send(&b_id, "queued while pending", None)
        .await
        .unwrap();
    let cancelled = w.sup.cancel(&b_id).await.unwrap();
    assert_eq!(cancelled.status, Status::Cancelled);
    // Nothing of the run happened: the queued message was not consumed.
    assert_eq!(w.sup.store().transcript(b.id, 0, 100).unwrap().len(), 1);
    assert!(w.sup.store().has_inbox(b.id).unwrap());
    w.sup.cancel(&holder.id.to_string()).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_resumed_after_its_answer_was_written_reports_that_answer() {
    let w = world();
    let one = w.script(
        "one.json",
        json!({"turns": [{"content": [{"type": "text", "text": "the answer"}]}]}),
    );
    let a = w.sup.create(w.new_agent(&one, "answer")).await.unwrap();
    let id = a.id.to_string();
    w.status_becomes(&id, Status::Completed).await;
    // The end is stored a moment before the run lets go of the agent; a
    // resume before that finds it still loaded (seen under CI load).
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while w.sup.registry.get(a.id).is_some_and(|h| h.is_running()) {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the run never ended"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // As a crash leaves it when the answer is in the transcript but the
    // record's end was not written (or its write was deferred and lost).
    let mut record = w.sup.resolve(&id).unwrap();
    record.status = Status::Interrupted;
    record.outcome = None;
    w.sup.store().put_agent_durable(&record).await.unwrap();
    w.sup.resume_after_start(&[a.id]).await.unwrap();
    let done = w.status_becomes(&id, Status::Completed).await;
    assert_eq!(
        done.result(),
        "the answer",
        "not the empty result of the stale record"
    );
}

#[tokio::test]
async fn a_subagent_never_gets_a_looser_mode_even_when_its_parent_is_gone() {
    use crate::domain::PermissionMode;
    let w = world();
    let model = w.script(
        "s.json",
        json!({"turns": [{"content": [{"type": "text", "text": "ok"}]}]}),
    );
    let parent = w
        .sup
        .create(NewAgent {
            permission_mode: Some(PermissionMode::Default),
            ..w.new_agent(&model, "parent")
        })
        .await
        .unwrap();
    w.status_becomes(&parent.id.to_string(), Status::Completed)
        .await;
    let child = w.sup.create(w.new_agent(&model, "child")).await.unwrap();
    w.status_becomes(&child.id.to_string(), Status::Completed)
        .await;
    // Make it the parent's subagent, in the default mode.
    let mut record = w.sup.resolve(&child.id.to_string()).unwrap();
    record.parent = Some(parent.id);
    record.permission_mode = PermissionMode::Default;
    w.sup.store().put_agent_durable(&record).await.unwrap();
    let id = child.id.to_string();

    let looser = w.sup.update(&id, Some(PermissionMode::Bypass), None).await;
    assert!(matches!(looser, Err(AgentdError::Refused(_))), "{looser:?}");
    // Stricter is fine.
    let plan = w
        .sup
        .update(&id, Some(PermissionMode::Plan), None)
        .await
        .unwrap();
    assert_eq!(plan.permission_mode, PermissionMode::Plan);
    // The parent removed: fail closed, no change at all.
    w.sup
        .remove(&parent.id.to_string(), false, false, None)
        .await
        .unwrap();
    let orphaned = w.sup.update(&id, Some(PermissionMode::Bypass), None).await;
    assert!(
        matches!(&orphaned, Err(AgentdError::Refused(m)) if m.contains("parent is gone")),
        "{orphaned:?}"
    );
    assert_eq!(
        w.sup.resolve(&id).unwrap().permission_mode,
        PermissionMode::Plan
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pause_between_two_calls_of_a_round_answers_each_call_once() {
    let w = world();
    let two_calls = w.script(
        "two_calls.json",
        json!({"turns": [
            {"content": [
                {"type": "text", "text": "two things"},
                {"type": "tool_use", "name": "Bash", "input": {"command": "sleep 1"}},
                {"type": "tool_use", "name": "Bash", "input": {"command": "echo second"}}
            ]},
            {"content": [{"type": "text", "text": "done"}]}
        ]}),
    );
    let a = w.sup.create(w.new_agent(&two_calls, "work")).await.unwrap();
    let id = a.id.to_string();
    w.status_becomes(&id, Status::Running).await;
    // While the first call sleeps: the pause lands before the second.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let paused = w.sup.pause(&id).await.unwrap();
    assert_eq!(paused.status, Status::Paused);
    let entries = w.sup.store().transcript(a.id, 0, 100).unwrap();
    let results: serde_json::Value =
        serde_json::from_slice(&entries.last().unwrap().content_json).unwrap();
    let ids: Vec<&str> = results
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|b| b["tool_use_id"].as_str())
        .collect();
    assert_eq!(ids.len(), 2, "one result per call: {results}");
    assert_ne!(ids[0], ids[1], "each call answered once: {results}");
    assert_eq!(
        results[0]["content"], "(no output)",
        "the pause landed after the first call ran: {results}"
    );
}
