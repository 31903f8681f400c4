//! Snapshots of the widgets drawn into ratatui's TestBackend, compared as
//! text lines (trailing blanks trimmed).

use std::time::{Duration, UNIX_EPOCH};

use agentd_shared::proto as pb;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

use crate::bar::{Bar, Link};
use crate::model::Model;
use crate::output::Output;
use crate::prompt::{Ask, Prompt};
use crate::screen::{View, draw};

const NOW: i64 = 1_800_000_000;

fn agent(id: &str, parent: &str, mins_ago: i64, status: pb::AgentStatus) -> pb::Agent {
    let at = prost_types::Timestamp {
        seconds: NOW - mins_ago * 60,
        nanos: 0,
    };
    pb::Agent {
        id: format!("{id}-0000-0000"),
        short_id: id.into(),
        parent_id: if parent.is_empty() {
            String::new()
        } else {
            format!("{parent}-0000-0000")
        },
        created_at: Some(at),
        updated_at: Some(at),
        status: status as i32,
        model: "anthropic:claude-sonnet-4-5".into(),
        ..Default::default()
    }
}

fn plan(done: usize, total: usize) -> Vec<pb::PlanItem> {
    (0..total)
        .map(|i| pb::PlanItem {
            content: format!("Step {}", i + 1),
            active_form: format!("Doing step {}", i + 1),
            status: if i < done {
                pb::PlanStatus::Completed
            } else if i == done {
                pb::PlanStatus::InProgress
            } else {
                pb::PlanStatus::Pending
            } as i32,
        })
        .collect()
}

/// A family: a lead with a subagent (waiting on a permission answer) and
/// a fork, plus a background agent that finished unseen.
fn family() -> Model {
    use pb::AgentStatus::*;
    let mut lead = agent("aaaa0001", "", 90, Running);
    lead.name = "lead".into();
    lead.turns = 12;
    lead.plan = plan(1, 3);
    let mut explore = agent("aaaa0002", "aaaa0001", 30, Waiting);
    explore.description = "Find the flaky test".into();
    explore.subagent_type = "Explore".into();
    explore.waiting_for = "permission to run Bash: make test".into();
    let mut fork = agent("aaaa0003", "aaaa0001", 10, Completed);
    fork.description = "Try the other fix".into();
    fork.subagent_type = "fork".into();
    fork.turns = 3;
    let mut bg = agent("bbbb0001", "", 5, Running);
    bg.name = "docs".into();
    bg.executor = "claude-code".into();
    bg.background = true;
    let mut m = Model::default();
    m.set_now(Some(UNIX_EPOCH + Duration::from_secs(NOW as u64)));
    m.replace_all(vec![lead, explore, fork, bg]);
    m.lines();
    m.apply(&pb::WatchEvent {
        agent_id: "bbbb0001-0000-0000".into(),
        event: Some(pb::watch_event::Event::Status(pb::StatusChange {
            status: Completed as i32,
            turns: 4,
            ..Default::default()
        })),
        ..Default::default()
    });
    let mut costs = std::collections::HashMap::new();
    costs.insert("aaaa0001-0000-0000".to_string(), 0.4567);
    m.set_costs(costs);
    m.lines();
    m
}

fn text(buf: &Buffer) -> Vec<String> {
    let area = buf.area;
    (0..area.height)
        .map(|y| {
            let line: String = (0..area.width)
                .map(|x| buf[(area.x + x, area.y + y)].symbol())
                .collect();
            line.trim_end().to_string()
        })
        .collect()
}

#[test]
fn the_tree_shows_the_family_with_types_statuses_marks_plan_and_cost() {
    let m = family();
    let mut buf = Buffer::empty(Rect::new(0, 0, 96, 6));
    crate::tree::render(&m, buf.area, &mut buf, false);
    assert_eq!(
        text(&buf),
        vec![
            " agents (4)                                                                                    │",
            "  ID          NAME                          TYPE         STATUS       AGE TURNS  PLAN     COST │",
            "  aaaa0001    lead                          agent        running       1h    12   1/3  $0.4567 │",
            "? ├─ aaaa0002 Find the flaky test           Explore      waiting      30m     0              - │",
            "  └─ aaaa0003 Try the other fix             fork         completed    10m     3              - │",
            "● bbbb0001    docs                          claude-code  completed     5m     4              - │",
        ]
    );
}

#[test]
fn a_budget_column_appears_with_a_budget_and_says_how_much_of_it_is_spent() {
    use pb::AgentStatus::*;
    let mut capped = agent("cccc0001", "", 5, Running);
    capped.name = "capped".into();
    capped.budget = Some(pb::AgentBudget {
        usd: 2.0,
        spent_usd: 0.5,
        tokens: 1000,
        spent_tokens: 900,
        ..Default::default()
    });
    let mut unmeasured = agent("cccc0002", "", 5, Paused);
    unmeasured.name = "unpriced".into();
    unmeasured.budget = Some(pb::AgentBudget {
        usd: 1.0,
        unmeasured: "model x has no price".into(),
        ..Default::default()
    });
    let mut free = agent("cccc0003", "", 5, Running);
    free.name = "free".into();
    let mut m = Model::default();
    m.set_now(Some(UNIX_EPOCH + Duration::from_secs(NOW as u64)));
    m.replace_all(vec![capped, unmeasured, free]);
    m.lines();
    let mut buf = Buffer::empty(Rect::new(0, 0, 96, 5));
    crate::tree::render(&m, buf.area, &mut buf, false);
    let lines = text(&buf);
    assert!(lines[1].ends_with("COST BUDGET │"), "{lines:?}");
    // The nearer cap: 90% of the tokens, not 25% of the dollars.
    let row = |name: &str| lines.iter().find(|l| l.contains(name)).unwrap().clone();
    assert!(row("capped").ends_with("-    90% │"), "{lines:?}");
    assert!(row("unpriced").ends_with("-      ? │"), "{lines:?}");
    assert!(row("free").ends_with("-        │"), "{lines:?}");
    // Without any budget the column is not there (the snapshots above).
}

#[test]
fn a_narrow_tree_gives_up_turns_cost_plan_age_and_type_before_the_name() {
    let m = family();
    let draw = |width: u16| {
        let mut buf = Buffer::empty(Rect::new(0, 0, width, 6));
        crate::tree::render(&m, buf.area, &mut buf, false);
        text(&buf)
    };
    // 80 columns: turns go first, and the name has room again.
    assert_eq!(
        draw(80),
        vec![
            " agents (4)                                                                    │",
            "  ID          NAME                TYPE         STATUS       AGE  PLAN     COST │",
            "  aaaa0001    lead                agent        running       1h   1/3  $0.4567 │",
            "? ├─ aaaa0002 Find the flaky test Explore      waiting      30m              - │",
            "  └─ aaaa0003 Try the other fix   fork         completed    10m              - │",
            "● bbbb0001    docs                claude-code  completed     5m              - │",
        ]
    );
    // 62: cost and plan go too.
    let mid = draw(62);
    assert_eq!(
        mid[1], "  ID          NAME             TYPE         STATUS       AGE │",
        "{mid:?}"
    );
    // 45: only id, name and status are left.
    let narrow = draw(45);
    assert_eq!(
        narrow[1], "  ID          NAME              STATUS      │",
        "{narrow:?}"
    );
    assert_eq!(
        narrow[3], "? ├─ aaaa0002 Find the flaky t… waiting     │",
        "{narrow:?}"
    );
}

#[test]
fn a_filter_leaves_the_matching_agents_and_says_so() {
    let mut m = family();
    m.set_filter("flaky");
    m.lines();
    let mut buf = Buffer::empty(Rect::new(0, 0, 96, 3));
    crate::tree::render(&m, buf.area, &mut buf, false);
    let lines = text(&buf);
    assert!(
        lines[0].starts_with(" agents (1) filter: flaky "),
        "{lines:?}"
    );
    assert!(
        lines[2].starts_with(
            "? aaaa0002 Find the flaky test              Explore      waiting      30m"
        ),
        "{lines:?}"
    );
}

fn entry(role: pb::Role, content: serde_json::Value) -> pb::attach_event::Event {
    pb::attach_event::Event::Entry(pb::TranscriptEntry {
        role: role as i32,
        content_json: content.to_string().into_bytes(),
        ..Default::default()
    })
}

/// An agent's output: its words, a folded thought, a tool call and its
/// outcome, a second one still running, and text streaming in.
fn output() -> Output {
    use serde_json::json;
    let mut a = agent("aaaa0001", "", 90, pb::AgentStatus::Running);
    a.name = "lead".into();
    a.plan = plan(1, 3);
    let mut out = Output::for_agent(Some(a));
    out.apply(entry(
        pb::Role::User,
        json!([{"type": "text", "text": "Fix the build"}]),
    ));
    out.apply(entry(
        pb::Role::Assistant,
        json!([
            {"type": "thinking", "thinking": "The build fails in make.\nLet me look."},
            {"type": "text", "text": "Running the build."},
            {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "make"}}
        ]),
    ));
    out.apply(entry(
        pb::Role::User,
        json!([{"type": "tool_result", "tool_use_id": "t1", "is_error": true, "content": "boom"}]),
    ));
    out.apply(pb::attach_event::Event::Tool(pb::ToolActivity {
        tool_use_id: "t2".into(),
        name: "Read".into(),
        summary: "src/lib.rs".into(),
        phase: pb::tool_activity::Phase::Started as i32,
        is_error: false,
    }));
    out.apply(pb::attach_event::Event::Delta(pb::ContentDelta {
        index: 0,
        delta: Some(pb::content_delta::Delta::Text("The error is in".into())),
    }));
    out
}

#[test]
fn the_output_pane_shows_text_a_folded_thought_tool_lines_and_the_plan() {
    let out = output();
    let mut buf = Buffer::empty(Rect::new(0, 0, 70, 14));
    crate::output::render(&out, buf.area, &mut buf, false);
    assert_eq!(
        text(&buf),
        vec![
            "aaaa0001 running · anthropic:claude-sonnet-4-5 · lead",
            "Plan (1/3):",
            "  [x] Step 1",
            "  [>] Doing step 2",
            "  [ ] Step 3",
            "── output ────────────────────────────────────────────────────────────",
            "> Fix the build",
            "▸ thought (37 chars): The build fails in make.",
            "Running the build.",
            "✗ Bash(make)",
            "… Read(src/lib.rs)",
            "The error is in",
            "",
            "",
        ]
    );
}

#[test]
fn the_whole_screen_keeps_its_layout_with_a_long_error_and_a_prompt() {
    let m = family();
    let out = output();
    let mut bar = Bar::default();
    bar.error("line one\nline two ".repeat(40));
    let view = View {
        model: &m,
        output: &out,
        bar: &bar,
        prompt: None,
        help: false,
        color: true,
    };
    let mut tui = Terminal::new(TestBackend::new(160, 20)).unwrap();
    tui.draw(|f| draw(f, &view)).unwrap();
    let lines = text(tui.backend().buffer());
    assert_eq!(lines.len(), 20);
    assert!(
        lines[18].starts_with("error: line one line two line one"),
        "{lines:?}"
    );
    assert!(
        lines[19].starts_with("j/k move · Enter attach"),
        "{lines:?}"
    );
    assert!(lines[2].contains("aaaa0001") && lines[2].contains("lead"));

    let prompt = Prompt::new(Ask::Stop {
        id: "x".into(),
        short: "aaaa0001".into(),
    });
    let lost = Bar {
        link: Link::Reconnecting,
        ..Default::default()
    };
    let view = View {
        model: &m,
        output: &out,
        bar: &lost,
        prompt: Some(&prompt),
        help: false,
        color: true,
    };
    tui.draw(|f| draw(f, &view)).unwrap();
    let lines = text(tui.backend().buffer());
    assert_eq!(lines[18], "stop aaaa0001 and its subagents? [y/n]");
    let view = View {
        prompt: None,
        ..view
    };
    tui.draw(|f| draw(f, &view)).unwrap();
    assert_eq!(text(tui.backend().buffer())[18], "reconnecting to agentd…");
}
