//! What it cost (`GetUsage`, `agentctl usage`, `show`): tokens, requests
//! and USD per agent and per family, priced from the config, against the
//! usage the mock model reported for every request it served.

#![allow(clippy::unwrap_used)] // Tests: a panic is the failure report.

use std::time::Duration;

use agentd_e2e::all_text;
use agentd_e2e::forking::{fork_call, is_fork_of, is_request_of_fork};
use agentd_e2e::mock::{MODEL, MockMessage, MockServer, RecordedRequest, Reply};
use agentd_e2e::parent::{self, NOTE};
use agentd_e2e::{Env, wait_until};
use serde_json::Value;

/// USD per million tokens for the mock's model (cache prices by rule).
const PRICES: &str = "[prices.\"anthropic:claude-test\"]\ninput = 3.0\noutput = 15.0\n";

/// Tokens of a request as the mock reported them: input, output, cache
/// read, cache write.
fn reported(r: &RecordedRequest) -> [u64; 4] {
    let c = r.cache.as_ref().unwrap();
    [c.input, r.output_tokens.unwrap(), c.read, c.creation]
}

fn cost(t: [u64; 4]) -> (f64, f64) {
    let per = |n: u64, rate: f64| n as f64 * rate / 1e6;
    (
        per(t[0], 3.0) + per(t[1], 15.0) + per(t[2], 0.3) + per(t[3], 3.75),
        per(t[0] + t[2] + t[3], 3.0) + per(t[1], 15.0),
    )
}

fn sum(reqs: &[&RecordedRequest]) -> [u64; 4] {
    reqs.iter().fold([0; 4], |mut acc, r| {
        for (a, v) in acc.iter_mut().zip(reported(r)) {
            *a += v;
        }
        acc
    })
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

fn tokens_of(v: &Value) -> [u64; 4] {
    [
        v["input_tokens"].as_u64().unwrap(),
        v["output_tokens"].as_u64().unwrap(),
        v["cache_read_input_tokens"].as_u64().unwrap(),
        v["cache_creation_input_tokens"].as_u64().unwrap(),
    ]
}

#[test]
fn usage_is_reported_per_agent_and_per_family_with_its_cost() {
    let mock = MockServer::start();
    mock.set_min_cacheable_tokens(64);
    let env = Env::with_mock(&mock);
    env.write_config(PRICES);
    let _daemon = env.start_daemon();
    for d in ["COST-A", "COST-B"] {
        mock.when(
            move |r| is_fork_of(r, d),
            Reply::text(format!("Scope: {d}\nResult: a longer report to count")),
        );
    }
    parent::answers(
        &mock,
        MockMessage::text("Forking twice.")
            .with(fork_call("COST-A"))
            .with(fork_call("COST-B")),
        Reply::text("ok"),
    );
    let parent = env.run_background(MODEL, "payer", "PARENT go");
    wait_until(
        "both forks report and the parent answers",
        Duration::from_secs(30),
        || {
            let t = all_text(&env.transcript(&parent));
            t.matches(NOTE).count() == 2 && env.show("payer")["status"] == "completed"
        },
    );
    let reqs = mock.requests();
    let parent_reqs: Vec<&RecordedRequest> = reqs
        .iter()
        .filter(|r| !is_request_of_fork(r, "COST-"))
        .collect();
    let all: Vec<&RecordedRequest> = reqs.iter().collect();

    // The parent alone.
    let own = env.ctl(&["usage", "payer", "--json"]).expect_code(0).json();
    assert_eq!(own["agents"].as_array().unwrap().len(), 1);
    assert_eq!(own["requests"], parent_reqs.len());
    assert_eq!(tokens_of(&own["total"]), sum(&parent_reqs));
    let (usd, without) = cost(sum(&parent_reqs));
    assert!(close(own["cost"]["usd"].as_f64().unwrap(), usd), "{own}");
    assert!(close(
        own["cost"]["without_cache_usd"].as_f64().unwrap(),
        without
    ));

    // The family: the parent and both forks, every request the mock served.
    let family = env
        .ctl(&["usage", "payer", "--family", "--json"])
        .expect_code(0)
        .json();
    let rows = family["agents"].as_array().unwrap();
    assert_eq!(rows.len(), 3);
    assert_eq!(rows[0]["id"], parent.as_str());
    assert!(
        rows[1..]
            .iter()
            .all(|r| r["subagent_type"] == "fork" && r["parent_id"] == parent.as_str())
    );
    assert_eq!(family["requests"], all.len());
    assert_eq!(tokens_of(&family["total"]), sum(&all));
    let (usd, without) = cost(sum(&all));
    assert!(close(family["cost"]["usd"].as_f64().unwrap(), usd));
    assert!(close(
        family["cost"]["without_cache_usd"].as_f64().unwrap(),
        without
    ));
    assert!(usd < without, "the cache saved something");
    assert_eq!(family["unpriced_models"].as_array().unwrap().len(), 0);

    // Every agent: the same here; `show` carries the family's totals.
    let everyone = env.ctl(&["usage", "--json"]).expect_code(0).json();
    assert_eq!(everyone["total"], family["total"]);
    let shown = env.show("payer");
    assert_eq!(shown["family"]["agents"], 3);
    assert_eq!(shown["family"]["usage"], family["total"]);
    assert_eq!(shown["cost"], own["cost"]);
    let text = env.ctl(&["show", "payer"]).expect_code(0).stdout.clone();
    assert!(
        text.contains("family:") && text.contains("3 agents"),
        "{text}"
    );
    let table = env
        .ctl(&["usage", "payer", "--family"])
        .expect_code(0)
        .stdout
        .clone();
    assert!(
        table.contains("total: 3 agents") && table.contains("saved"),
        "{table}"
    );

    // Errors: an unknown agent; --family without one.
    env.ctl(&["usage", "nobody-here"]).expect_code(1);
    env.ctl(&["usage", "--family"]).expect_code(2);
}

#[test]
fn models_without_a_price_are_counted_and_named() {
    let mock = MockServer::start();
    let env = Env::with_mock(&mock);
    let _daemon = env.start_daemon();
    mock.enqueue(Reply::text("hello"));
    env.ctl(&["run", "--model", MODEL, "--name", "free", "say hi"])
        .expect_code(0);
    let report = env.ctl(&["usage", "free", "--json"]).expect_code(0).json();
    assert_eq!(report["unpriced_models"][0], MODEL);
    assert!(report["agents"][0]["cost"].is_null());
    assert_eq!(report["cost"]["usd"], 0.0);
    assert!(tokens_of(&report["total"]).iter().sum::<u64>() > 0);
    let text = env.ctl(&["usage", "free"]).expect_code(0).stdout.clone();
    assert!(text.contains("not priced: anthropic:claude-test"), "{text}");
}
