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
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    let store = Store::open(&data, StoreOptions::default()).unwrap();
    let config = Config::default();
    let models = config.model_settings().unwrap();
    let sup = Supervisor::new(
        store,
        config,
        models,
        DaemonInfo {
            socket: dir.path().join("s.sock"),
            data_dir: data,
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

    fn new_agent(&self, model: &str, prompt: &str) -> NewAgent {
        NewAgent {
            prompt: prompt.into(),
            model: model.into(),
            cwd: self.dir.path().display().to_string(),
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
    assert_eq!(refused.code(), tonic::Code::ResourceExhausted, "{refused}");
    assert!(matches!(refused, AgentdError::Store(_)));
    assert_eq!(w.sup.list(true, None).unwrap().len(), 2);

    // Space is back: the same supervisor finishes the agent and takes work.
    w.sup.store().fake_free_space(None);
    let finished = w.status_becomes(&a_id, Status::Completed).await;
    assert_eq!(finished.result, "finished");
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
    assert!(failed.error.contains("unreadable"), "{}", failed.error);
    assert!(w.sup.store().corrupt_count() >= 1, "counted");
}
