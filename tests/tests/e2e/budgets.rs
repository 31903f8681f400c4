//! Budgets (DESIGN §24) end to end: a cap on what an agent and every
//! descendant spend, against the mock with a model the price table knows.

#![allow(clippy::unwrap_used)] // Tests: a panic is the failure report.

use agentd_e2e::Env;
use agentd_e2e::mock::{MockServer, Reply};
use serde_json::{Value, json};

/// A model with a price in the built-in table (the mock answers any).
const PRICED: &str = "anthropic:claude-sonnet-4-5";

fn spent(env: &Env, id: &str) -> f64 {
    env.show(id)["budget"]["spent_usd"].as_f64().unwrap()
}

fn budget_exhausted(a: &Value) -> bool {
    a["resume_blocked_reason"] == "budget_exhausted"
}

/// Each agent's cost per model request, the most of any.
fn dearest_request(env: &Env, root: &str) -> f64 {
    let usage = env
        .ctl(&["usage", root, "--family", "--json"])
        .expect_code(0)
        .json();
    usage["agents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["requests"].as_u64().unwrap_or(0) > 0)
        .map(|a| a["cost"]["usd"].as_f64().unwrap() / a["requests"].as_f64().unwrap())
        .fold(0.0, f64::max)
}

#[test]
fn a_family_stops_at_its_budget_stays_stopped_across_a_sigkill_and_goes_on_when_it_is_raised() {
    let mock = MockServer::start();
    let env = Env::with_mock(&mock);
    let daemon = env.start_daemon();
    mock.enqueue(Reply::text("ready"));
    let parent = env.start_agent(&["--model", PRICED, "--budget", "100", "PARENT"]);
    env.ctl(&["wait", &parent]).expect_code(0);
    let one = spent(&env, &parent);
    assert!(one > 0.0, "a priced request costs something");
    // About three more requests' worth; every later request runs a tool,
    // so each agent would go on for ever.
    let cap = one * 4.0;
    env.ctl(&["budget", &parent, &format!("{cap}")])
        .expect_code(0);
    mock.set_fallback(Some(Reply::tool(
        "",
        "Bash",
        json!({"command": "echo step"}),
    )));
    let forks: Vec<String> = (0..5)
        .map(|i| {
            env.ctl(&["fork", &parent, &format!("work {i}"), "--background"])
                .expect_code(0)
                .stdout
                .trim()
                .to_string()
        })
        .collect();
    for f in &forks {
        env.wait_for_agent(f, "its pause on the spent budget", |a| {
            a["status"] == "paused" && budget_exhausted(a)
        });
    }
    let shown = env.show(&forks[0]);
    assert!(
        shown["resume_blocked_detail"]
            .as_str()
            .unwrap()
            .contains("budget is spent"),
        "{shown}"
    );
    // What was spent: within the cap plus what was in flight when it was
    // reached — at most one request per agent of the family.
    let total = spent(&env, &parent);
    let bound = cap + 6.0 * dearest_request(&env, &parent);
    assert!(total >= cap, "the cap was reached: {total} < {cap}");
    assert!(total <= bound, "spent {total}, more than {bound}");
    // Every request the mock answered is one an agent recorded: none was
    // sent behind the budget's back.
    let served = mock.requests().len();
    let usage = env
        .ctl(&["usage", &parent, "--family", "--json"])
        .expect_code(0)
        .json();
    assert_eq!(
        usage["requests"].as_u64().unwrap() as usize,
        served,
        "{usage}"
    );
    // A message alone does not get past a spent budget.
    let refused = env.ctl(&["send", &forks[0], "go on"]);
    assert_ne!(refused.code, 0, "{refused:?}");
    assert!(refused.stderr.contains("budget"), "{}", refused.stderr);

    // SIGKILL and a restart change nothing: still paused, nothing sent.
    daemon.kill9();
    let _daemon = env.start_daemon();
    env.ctl(&["list"]).expect_code(0);
    for f in &forks {
        let a = env.show(f);
        assert!(a["status"] == "paused" && budget_exhausted(&a), "{a}");
    }
    assert_eq!(
        mock.requests().len(),
        served,
        "nothing sent after the restart"
    );

    // A fork's own budget does not lift its parent's.
    env.ctl(&["budget", &forks[0], "100"]).expect_code(0);
    assert!(budget_exhausted(&env.show(&forks[0])));
    assert_eq!(mock.requests().len(), served);
    // Raised (by sending the parent a message with a new budget): they go
    // on, and stop again at the new cap.
    let raised = cap * 2.0;
    env.ctl(&["send", &parent, "go on", "--budget", &format!("{raised}")])
        .expect_code(0);
    mock.wait_for_requests(served + 1, std::time::Duration::from_secs(60));
    for f in &forks {
        env.wait_for_agent(f, "its pause on the raised budget", |a| {
            a["status"] == "paused" && budget_exhausted(a) && a["turns"].as_u64() > Some(0)
        });
    }
    let total = spent(&env, &parent);
    assert!(total >= raised, "{total} < {raised}");
    assert!(
        total <= raised + 6.0 * dearest_request(&env, &parent),
        "spent {total} of {raised}"
    );
    // `usage --family` shows it against the family's spend, text and JSON.
    let usage = env
        .ctl(&["usage", &parent, "--family"])
        .expect_code(0)
        .stdout
        .clone();
    assert!(
        usage.contains(&format!("of ${raised:.2} spent")) && usage.contains("and its descendants"),
        "{usage}"
    );
    let usage = env
        .ctl(&["usage", &parent, "--family", "--json"])
        .expect_code(0)
        .json();
    let own = &usage["agents"][0]["budget"];
    assert!(
        (own["usd"].as_f64().unwrap() - raised).abs() < 1e-6,
        "{usage}"
    );
    assert!(
        (own["spent_usd"].as_f64().unwrap() - total).abs() < 1e-6,
        "{usage}"
    );
    // The parent's and the one fork's given its own; the rest have none.
    let with_budget: Vec<&str> = usage["agents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a.get("budget").is_some())
        .map(|a| a["id"].as_str().unwrap())
        .collect();
    assert_eq!(with_budget.len(), 2, "{usage}");
    assert!(
        with_budget.contains(&forks[0].as_str())
            || with_budget
                .iter()
                .any(|id| id.starts_with(forks[0].as_str())),
        "{usage}"
    );
    let shown = env.ctl(&["budget", &parent]).expect_code(0).stdout.clone();
    assert!(
        shown.contains("spent") && shown.contains(&format!("{raised:.2}")),
        "{shown}"
    );
}
