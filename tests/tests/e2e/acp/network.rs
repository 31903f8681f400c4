//! An editor sees the network its agent uses (DESIGN §22), through both
//! ACP SDKs: each connection the proxy decides is a `fetch` tool call —
//! an allowed one completed with its bytes, a refused one failed with the
//! reason and the config line to add — and none is left running.

#![allow(clippy::unwrap_used)] // Tests: a panic is the failure report.

use agentd_e2e::Env;
use agentd_e2e::mock::{MockServer, Reply};
use serde_json::{Value, json};

use super::of_kind;
use super::sdk::Sdk;
use crate::network::{HELLO, Origin};

#[test]
fn each_connection_is_a_fetch_call_that_ends_typescript() {
    each_connection_is_a_fetch_call_that_ends(Sdk::TypeScript);
}

#[test]
fn each_connection_is_a_fetch_call_that_ends_python() {
    each_connection_is_a_fetch_call_that_ends(Sdk::Python);
}

fn each_connection_is_a_fetch_call_that_ends(sdk: Sdk) {
    sdk.setup();
    let (allowed, other) = (Origin::start(), Origin::start());
    let mock = MockServer::start();
    let env = Env::with_mock(&mock);
    env.write_config(&format!(
        "default_model = \"anthropic:claude-test\"\n[network]\nallow = [\"127.0.0.1:{}\"]\n",
        allowed.port
    ));
    let _daemon = env.start_daemon();
    // curl keeps loopback out of the proxy by NO_PROXY; `--noproxy ''`
    // sends it through, as a tool reaching a real host would go.
    let curl = |port: u16| format!("curl -sS -m 20 --noproxy '' http://127.0.0.1:{port}/x; echo");
    mock.enqueue_all([
        Reply::tool("", "Bash", json!({"command": curl(allowed.port)})),
        Reply::tool("", "Bash", json!({"command": curl(other.port)})),
        Reply::text("fetched"),
    ]);
    let dir = env.project().display().to_string();
    let lines = sdk.run(&env, &["files", &dir, "bypass"]);
    let updates = of_kind(&lines, "prompt")[0]["updates"]
        .as_array()
        .unwrap()
        .clone();
    let fetches: Vec<&Value> = updates
        .iter()
        .filter(|u| u["sessionUpdate"] == "tool_call" && u["kind"] == "fetch")
        .collect();
    assert_eq!(fetches.len(), 2, "{updates:?}");
    let ended = |call: &Value| -> Value {
        let id = &call["toolCallId"];
        if call["status"] != "in_progress" {
            return call.clone();
        }
        updates
            .iter()
            .find(|u| {
                u["sessionUpdate"] == "tool_call_update"
                    && u["toolCallId"] == *id
                    && u["status"] != "in_progress"
            })
            .unwrap_or_else(|| panic!("{id} never ended: {updates:?}"))
            .clone()
    };
    let text = |u: &Value| {
        u["content"][0]["content"]["text"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };

    let reached = fetches[0];
    assert_eq!(reached["title"], format!("GET 127.0.0.1:{}", allowed.port));
    assert_eq!(reached["rawInput"]["port"], allowed.port);
    let done = ended(reached);
    assert_eq!(done["status"], "completed", "{done}");
    let received = done["_meta"]["agentd"]["connection"]["bytesReceived"]
        .as_u64()
        .unwrap();
    assert!(received as usize > HELLO.len(), "{done}");
    assert!(
        text(&done).contains("config.toml [network] allow"),
        "{done}"
    );
    assert_eq!(allowed.heads().len(), 1);

    let refused = ended(fetches[1]);
    assert_eq!(refused["status"], "failed", "{refused}");
    assert!(
        text(&refused).contains(&format!("--allow-host 127.0.0.1:{}", other.port)),
        "{refused}"
    );
    assert!(other.heads().is_empty());
    // What the tool saw agrees with what the editor was shown.
    let results: Vec<String> = updates
        .iter()
        .filter(|u| u["sessionUpdate"] == "tool_call_update" && u["kind"].is_null())
        .map(|u| u.to_string())
        .collect();
    assert!(results.iter().any(|r| r.contains(HELLO)), "{results:?}");
}
