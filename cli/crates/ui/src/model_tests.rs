//! The model: incremental Watch updates, tree order, hiding, selection.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use agentd_shared::proto as pb;

use super::*;

const NOW: u64 = 1_800_000_000;

fn ts(secs_ago: u64) -> prost_types::Timestamp {
    prost_types::Timestamp {
        seconds: (NOW - secs_ago) as i64,
        nanos: 0,
    }
}

pub fn agent(id: &str, parent: &str, age: u64, status: pb::AgentStatus) -> pb::Agent {
    pb::Agent {
        id: id.into(),
        short_id: id.chars().take(8).collect(),
        parent_id: parent.into(),
        name: format!("name-{id}"),
        created_at: Some(ts(age)),
        updated_at: Some(ts(age)),
        status: status as i32,
        ..Default::default()
    }
}

fn model(agents: Vec<pb::Agent>) -> Model {
    let mut m = Model::default();
    m.set_now(Some(UNIX_EPOCH + Duration::from_secs(NOW)));
    m.replace_all(agents);
    m
}

fn ids(m: &mut Model) -> Vec<(String, String)> {
    m.lines()
        .iter()
        .map(|l| (l.prefix.clone(), l.id.clone()))
        .collect()
}

fn event(id: &str, e: pb::watch_event::Event) -> pb::WatchEvent {
    pb::WatchEvent {
        agent_id: id.into(),
        event: Some(e),
        at: Some(ts(0)),
        ..Default::default()
    }
}

fn status(s: pb::AgentStatus, turns: u32) -> pb::watch_event::Event {
    pb::watch_event::Event::Status(pb::StatusChange {
        status: s as i32,
        turns,
        ..Default::default()
    })
}

use pb::AgentStatus::{Completed, Running, Waiting};

#[test]
fn children_and_forks_go_under_their_parent_oldest_first() {
    let mut m = model(vec![
        agent("rootb", "", 10, Running),
        agent("roota", "", 50, Running),
        agent("kid2", "roota", 20, Running),
        agent("kid1", "roota", 40, Running),
        agent("grandkid", "kid1", 30, Running),
        agent("lost", "gone", 5, Running),
    ]);
    let want = [
        ("", "roota"),
        ("├─ ", "kid1"),
        ("│  └─ ", "grandkid"),
        ("└─ ", "kid2"),
        ("", "rootb"),
        ("", "lost"),
    ];
    let want: Vec<(String, String)> = want
        .iter()
        .map(|(p, i)| (p.to_string(), i.to_string()))
        .collect();
    assert_eq!(ids(&mut m), want);
}

#[test]
fn watch_events_update_one_agent_without_a_relist() {
    let mut m = model(vec![agent("one", "", 10, Running)]);
    m.lines();
    m.dirty = false;
    m.apply(&event("one", status(Completed, 7)));
    assert!(m.dirty);
    let row = m.row("one").unwrap();
    assert_eq!(row.agent.status, Completed as i32);
    assert_eq!(row.agent.turns, 7);
    m.apply(&event(
        "one",
        pb::watch_event::Event::Plan(pb::PlanUpdate {
            items: vec![pb::PlanItem::default()],
        }),
    ));
    assert_eq!(m.row("one").unwrap().agent.plan.len(), 1);
    // A new agent arrives as `created` and takes its place in the tree.
    m.apply(&event(
        "kid",
        pb::watch_event::Event::Created(agent("kid", "one", 1, Running)),
    ));
    assert_eq!(
        ids(&mut m),
        vec![("".into(), "one".into()), ("└─ ".into(), "kid".into())]
    );
    // An event about an agent never listed changes nothing.
    m.apply(&event("ghost", status(Running, 1)));
    assert!(m.row("ghost").is_none());
}

#[test]
fn ended_agents_older_than_a_day_are_hidden_unless_all() {
    let day = 24 * 3600;
    let mut m = model(vec![
        agent("old-done", "", 3 * day, Completed),
        agent("old-live", "", 3 * day, Running),
        agent("new-done", "", 60, Completed),
    ]);
    let shown = |m: &mut Model| m.lines().iter().map(|l| l.id.clone()).collect::<Vec<_>>();
    assert_eq!(shown(&mut m), vec!["old-live", "new-done"]);
    m.toggle_all();
    assert_eq!(shown(&mut m), vec!["old-done", "old-live", "new-done"]);
}

#[test]
fn the_selection_stays_on_its_agent_as_others_come_and_the_filter_changes() {
    let mut m = model(vec![
        agent("aaa", "", 30, Running),
        agent("bbb", "", 20, Running),
        agent("ccc", "", 10, Running),
    ]);
    m.lines();
    assert_eq!(m.selected_id(), Some("aaa"));
    m.move_selection(1);
    assert_eq!(m.selected_id(), Some("bbb"));
    // An older agent appears above it: the selection stays on bbb.
    m.apply(&event(
        "zzz",
        pb::watch_event::Event::Created(agent("zzz", "", 99, Running)),
    ));
    m.lines();
    assert_eq!(m.selected_id(), Some("bbb"));
    assert_eq!(m.selected_index(), Some(2));
    // Filtered by name: only ccc matches, and the selection lands on it.
    m.set_filter("NAME-CCC");
    assert_eq!(m.lines().len(), 1);
    assert_eq!(m.selected_id(), Some("ccc"));
    // By id prefix too.
    m.set_filter("bb");
    assert_eq!(m.lines().len(), 1);
    assert_eq!(m.selected_id(), Some("bbb"));
    m.set_filter("");
    assert_eq!(m.lines().len(), 4);
    assert_eq!(m.selected_id(), Some("bbb"));
    // Moving stops at the ends.
    m.move_selection(-100);
    assert_eq!(m.selected_id(), Some("zzz"));
    m.move_selection(100);
    assert_eq!(m.selected_id(), Some("ccc"));
}

#[test]
fn marks_for_a_permission_ask_and_a_background_agent_that_finished_unseen() {
    let mut bg = agent("bg", "", 20, Running);
    bg.background = true;
    let mut m = model(vec![agent("sel", "", 30, Running), bg]);
    m.lines();
    assert_eq!(m.selected_id(), Some("sel"));
    m.apply(&event("bg", status(Completed, 3)));
    assert!(m.row("bg").unwrap().finished_unseen);
    // Looking at it clears the mark.
    m.select("bg");
    assert!(!m.row("bg").unwrap().finished_unseen);

    let ask = |resolved| {
        pb::watch_event::Event::PermissionRequest(pb::PermissionRequest {
            request_id: "r1".into(),
            agent_id: "sel".into(),
            resolved,
            ..Default::default()
        })
    };
    m.apply(&event("sel", ask(false)));
    assert!(m.row("sel").unwrap().waits_for_permission());
    m.apply(&event("sel", ask(true)));
    assert!(!m.row("sel").unwrap().waits_for_permission());
    // A listing that says the agent waits for permission marks it too.
    let mut waiting = agent("sel", "", 30, Waiting);
    waiting.waiting_for = "permission to run Bash: make".into();
    m.replace_all(vec![waiting]);
    assert!(m.row("sel").unwrap().waits_for_permission());
    let _ = SystemTime::now();
}

#[test]
fn only_changes_on_screen_or_to_the_selection_ask_for_a_frame() {
    use pb::AgentStatus::Running;
    let agents: Vec<pb::Agent> = (0..100)
        .map(|i| agent(&format!("a{i:03}"), "", 1000 - i, Running))
        .collect();
    let mut m = model(agents);
    m.lines();
    // As the tree widget leaves it: lines 0..10 on screen.
    m.offset.set(0);
    m.shown.set(10);
    m.select("a000");
    m.dirty = false;
    m.apply(&event("a050", status(pb::AgentStatus::Completed, 3)));
    assert!(!m.dirty, "a row off screen draws nothing");
    assert_eq!(m.row("a050").unwrap().agent.turns, 3, "but it is kept");
    m.apply(&event("a005", status(pb::AgentStatus::Completed, 1)));
    assert!(m.dirty, "a row on screen draws");
    m.dirty = false;
    m.select("a050");
    m.dirty = false;
    m.apply(&event("a050", status(Running, 4)));
    assert!(m.dirty, "the selected agent always draws (its output pane)");
}
