//! What an editor is told of a session's context and cost (ACP
//! `usage_update`), through both ACP SDKs: the tokens the last response
//! filled the context with, the model's window as the daemon's config
//! gives it, and the session's cost as `agentctl show` prices it.

#![allow(clippy::unwrap_used)] // Tests: a panic is the failure report.

use agentd_e2e::Env;
use agentd_e2e::mock::{MockServer, Reply};
use serde_json::{Value, json};

use super::of_kind;
use super::sdk::Sdk;

#[test]
fn the_editor_is_shown_the_models_window_the_fill_and_the_cost_typescript() {
    the_editor_is_shown_the_models_window_the_fill_and_the_cost(Sdk::TypeScript);
}

#[test]
fn the_editor_is_shown_the_models_window_the_fill_and_the_cost_python() {
    the_editor_is_shown_the_models_window_the_fill_and_the_cost(Sdk::Python);
}

fn the_editor_is_shown_the_models_window_the_fill_and_the_cost(sdk: Sdk) {
    sdk.setup();
    let mock = MockServer::start();
    let env = Env::with_mock(&mock);
    // A window unlike the built-in 200k of claude-* models, and a price.
    env.write_config(
        "default_model = \"anthropic:claude-test\"\n\
         [models.\"anthropic:claude-test\"]\ncontext_window = 50000\n\
         [prices.\"anthropic:claude-test\"]\ninput = 3.0\noutput = 15.0\n",
    );
    let _daemon = env.start_daemon();
    mock.enqueue_all([
        Reply::tool("", "Write", json!({"file_path": "a.txt", "content": "a\n"})),
        Reply::text("wrote it"),
    ]);
    let dir = env.project().display().to_string();
    let lines = sdk.run(&env, &["files", &dir, "bypass"]);
    let updates = of_kind(&lines, "prompt")[0]["updates"]
        .as_array()
        .unwrap()
        .clone();
    let usage: Vec<&Value> = updates
        .iter()
        .filter(|u| u["sessionUpdate"] == "usage_update")
        .collect();
    assert!(!usage.is_empty(), "{updates:?}");
    let last = usage.last().unwrap();
    assert_eq!(last["size"], 50000, "{last}");

    // The fill is the last response's tokens; the cost is the session's.
    let id = of_kind(&lines, "new")[0]["sessionId"]
        .as_str()
        .unwrap()
        .to_string();
    let log: Value =
        serde_json::from_str(&env.ctl(&["log", "--json", &id]).expect_code(0).stdout).unwrap();
    let response = log
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|e| e["role"] == "assistant")
        .unwrap();
    let u = &response["usage"];
    let filled: u64 = [
        "input_tokens",
        "cache_read_input_tokens",
        "cache_creation_input_tokens",
        "output_tokens",
    ]
    .iter()
    .map(|k| u[*k].as_u64().unwrap())
    .sum();
    assert!(filled > 0, "{response}");
    assert_eq!(last["used"], filled, "{last} vs {response}");
    let shown = env.show(&id);
    let usd = shown["cost"]["usd"].as_f64().unwrap();
    assert!(usd > 0.0, "{shown}");
    assert_eq!(last["cost"]["currency"], "USD", "{last}");
    let amount = last["cost"]["amount"].as_f64().unwrap();
    assert!((amount - usd).abs() < 1e-9, "{last} vs {shown}");
}
