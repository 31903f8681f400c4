//! The MCP servers an editor passes in ACP `session/new` (DESIGN §15, §18),
//! driven by both ACP SDKs (`acp_sdk`), held to the same checks: real
//! servers over stdio and streamable HTTP become the session's tools, the
//! capabilities `initialize` states are the ones agentd has, and servers it
//! cannot use are refused with an error the editor can show.

#![allow(clippy::unwrap_used)] // Tests: a panic is the failure report.

use agentd_e2e::mcp_fixtures::{self, KillOnDrop};
use agentd_e2e::mock::{MockServer, Reply};
use agentd_e2e::{Env, tool_results};
use serde_json::json;

use super::of_kind;
use super::sdk::Sdk;

use crate::mcp::common::call;

#[test]
fn an_editors_stdio_and_http_servers_are_the_sessions_tools_typescript() {
    an_editors_servers_are_the_sessions_tools(Sdk::TypeScript);
}

#[test]
fn an_editors_stdio_and_http_servers_are_the_sessions_tools_python() {
    an_editors_servers_are_the_sessions_tools(Sdk::Python);
}

fn an_editors_servers_are_the_sessions_tools(sdk: Sdk) {
    sdk.setup();
    let fx = mcp_fixtures::setup().unwrap_or_else(|e| panic!("MCP fixtures: {e}"));
    let port = mcp_fixtures::free_port();
    let _http = KillOnDrop(fx.spawn_python_http(port));
    let mock = MockServer::start();
    let env = Env::with_mock(&mock);
    env.write_config("default_model = \"anthropic:claude-test\"\n");
    let _daemon = env.start_daemon();
    mock.enqueue_all([
        call(
            "e1",
            "mcp__fx__echo",
            json!({"text": "from the editor's stdio server"}),
        ),
        call(
            "e2",
            "mcp__web__echo",
            json!({"text": "from the editor's http server"}),
        ),
        Reply::text("Both answered."),
    ]);
    let (command, args) = fx.python_stdio_command();
    let servers = json!([
        {"name": "fx", "command": command, "args": args, "env": [{"name": "FIXTURE_MARK", "value": "1"}]},
        {"type": "http", "name": "web", "url": mcp_fixtures::mcp_url(port), "headers": []},
    ]);
    let cwd = env.project().display().to_string();
    let lines = sdk.run(&env, &["mcp", &cwd, &servers.to_string()]);

    // What the bridge says it can do is what it does: HTTP and stdio, no
    // SSE, nothing else (the Python SDK fills in the capabilities the
    // bridge left out, unstable `acp` among them, as false).
    let init = &of_kind(&lines, "initialize")[0]["init"];
    let caps = init["agentCapabilities"]["mcpCapabilities"]
        .as_object()
        .unwrap();
    let offered: Vec<&str> = caps
        .iter()
        .filter(|(_, on)| on.as_bool().unwrap())
        .map(|(name, _)| name.as_str())
        .collect();
    assert_eq!(offered, ["http"], "{caps:?}");
    assert_eq!(caps["sse"], false, "{caps:?}");

    // The model was offered both servers' tools and got their answers.
    let requests = mock.requests();
    assert_eq!(requests.len(), 3, "{lines:?}");
    let names = requests[0].tool_names();
    for wanted in ["mcp__fx__echo", "mcp__fx__sleep", "mcp__web__echo"] {
        assert!(names.contains(&wanted.to_string()), "{wanted}: {names:?}");
    }
    let (is_error, text) = tool_results(requests[1].messages()).pop().unwrap();
    assert_eq!(
        (is_error, text.as_str()),
        (false, "from the editor's stdio server")
    );
    let (is_error, text) = tool_results(requests[2].messages()).pop().unwrap();
    assert_eq!(
        (is_error, text.as_str()),
        (false, "from the editor's http server")
    );

    // The editor saw the calls complete; the transcript holds the echoes.
    let prompt = of_kind(&lines, "prompt")[0];
    assert_eq!(prompt["stopReason"], "end_turn");
    let completed = prompt["updates"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|u| u["sessionUpdate"] == "tool_call_update" && u["status"] == "completed")
        .count();
    assert_eq!(completed, 2, "{}", prompt["updates"]);
    let id = of_kind(&lines, "new")[0]["sessionId"]
        .as_str()
        .unwrap()
        .to_string();
    let transcript = env.transcript(&id);
    let results: Vec<(bool, String)> = tool_results(&transcript);
    assert_eq!(
        results,
        [
            (false, "from the editor's stdio server".to_string()),
            (false, "from the editor's http server".to_string())
        ]
    );
    let shown = env.show(&id);
    let sources: Vec<(&str, &str, &str)> = shown["mcp_servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["name"].as_str().unwrap(),
                s["transport"].as_str().unwrap(),
                s["source"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        sources,
        [("fx", "stdio", "editor"), ("web", "http", "editor")]
    );

    // Servers agentd cannot use are refused as invalid params, saying why;
    // no session is made for them.
    let refused = of_kind(&lines, "refused");
    assert_eq!(refused.len(), 3, "{lines:?}");
    for (server, wanted) in [
        ("old", "SSE transport is not supported"),
        ("nocommand", "`command`"),
        ("bad name", "use only letters, digits"),
    ] {
        let r = refused.iter().find(|r| r["server"] == server).unwrap();
        assert_eq!(r["code"], -32602, "{r}");
        assert!(r["message"].as_str().unwrap().contains(wanted), "{r}");
    }
    assert_eq!(env.agents().len(), 1);
}
