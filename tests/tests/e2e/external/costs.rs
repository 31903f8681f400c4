//! What an external agent costs (DESIGN §19): the cumulative session cost
//! its agent reports (ACP `usage_update`), kept durably in its record and
//! summed across processes, shown by `show`, `usage` and the dashboard as
//! the agent's own figure; and its context fill, as it last reported it.

#![allow(clippy::unwrap_used)] // Tests: a panic is the failure report.

use agentd_e2e::acp_agent::script;
use serde_json::{Value, json};

use crate::external::agents::World;

fn cost_step(amount: f64, currency: &str) -> Value {
    json!({"usage": {"used": 1000, "size": 200000,
                     "cost": {"amount": amount, "currency": currency}}})
}

fn fill_step(used: u64, size: u64) -> Value {
    json!({"usage": {"used": used, "size": size}})
}

fn usd(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

#[test]
fn the_cost_an_external_agent_reports_is_kept_across_a_restart_and_shown_as_its_own() {
    let w = World::new("", "");
    let daemon = w.env.start_daemon();
    // Its count grows within the turn; a figure in another currency is
    // not counted.
    let first = script(&json!([
        cost_step(0.25, "USD"),
        {"say": "working"},
        cost_step(0.40, "USD"),
        cost_step(9.0, "EUR"),
    ]));
    let out = w
        .env
        .ctl(&["run", "--agent", "scripted", "--name", "costly", &first]);
    out.expect_code(0);
    let shown = w.env.show("costly");
    assert!((usd(&shown["cost"]["usd"]) - 0.40).abs() < 1e-9, "{shown}");
    assert_eq!(shown["cost_reported"], true, "{shown}");

    // A new process after a SIGKILL counts from zero again: its figures
    // are added, and the replayed history's figure is not counted twice.
    daemon.kill9();
    let _daemon = w.env.start_daemon();
    let second =
        script(&json!([cost_step(0.10, "USD"), fill_step(61000, 400000), {"say": "more"}]));
    w.env.ctl(&["send", "costly", &second]).expect_code(0);
    let done = w.env.wait_for_agent("costly", "the second turn", |a| {
        a["status"] == "completed" && a["result"] == "more"
    });
    assert_eq!(w.received("session/load").len(), 1, "{done}");
    let shown = w.env.show("costly");
    assert!((usd(&shown["cost"]["usd"]) - 0.50).abs() < 1e-9, "{shown}");

    let report = w.env.ctl(&["usage", "--json"]);
    report.expect_code(0);
    let report = report.json();
    let agent = &report["agents"][0];
    assert_eq!(agent["cost_reported"], true, "{report}");
    assert!((usd(&agent["cost"]["usd"]) - 0.50).abs() < 1e-9, "{report}");
    assert!(
        (usd(&report["cost"]["usd"]) - 0.50).abs() < 1e-9,
        "{report}"
    );
    assert_eq!(report["unpriced_models"], json!([]), "{report}");
    // Its context as it last reported it.
    assert_eq!(agent["context_used"], 61000, "{report}");
    assert_eq!(agent["context_window"], 400000, "{report}");
    let table = w.env.ctl(&["usage"]);
    table.expect_code(0);
    assert!(table.stdout.contains("$0.5000*"), "{}", table.stdout);
    assert!(
        table.stdout.contains("as the external agent reported it"),
        "{}",
        table.stdout
    );
    let text = w.env.ctl(&["show", "costly"]);
    assert!(
        text.stdout.contains("$0.5000 (as the agent reported it)"),
        "{}",
        text.stdout
    );
}

#[test]
fn an_external_agent_that_reports_no_cost_has_none_and_is_named_unpriced() {
    let w = World::new("", "");
    let _daemon = w.env.start_daemon();
    w.env
        .ctl(&["run", "--agent", "scripted", "--name", "quiet", "hello"])
        .expect_code(0);
    let shown = w.env.show("quiet");
    assert_eq!(shown["cost"], Value::Null, "{shown}");
    assert_eq!(shown["cost_reported"], false, "{shown}");
    let report = w.env.ctl(&["usage", "--json"]).json();
    assert_eq!(
        report["unpriced_models"],
        json!(["acp:scripted"]),
        "{report}"
    );
    assert_eq!(report["agents"][0]["context_window"], Value::Null);
    assert_eq!(report["agents"][0]["context_used"], Value::Null);
}
