//! MCP servers passed with `CreateAgentRequest.mcp_servers` (DESIGN §18,
//! the gRPC form of an editor's `mcpServers`): offered after config.toml's,
//! replacing a config server of the same name, inherited by a subagent;
//! malformed ones refused at the edge with INVALID_ARGUMENT, nothing stored.

#![allow(clippy::unwrap_used)] // Tests: a panic is the failure report.

use agentd_e2e::mcp_fixtures::{self, KillOnDrop};
use agentd_e2e::mock::{MODEL, MockServer, Reply};
use agentd_e2e::{Env, tool_results};
use agentd_shared::proto as pb;
use pb::mcp_server_definition::Transport;
use serde_json::json;
use tonic::Code;

use super::common::{call, fixtures};

fn stdio(name: &str, (command, args): (String, Vec<String>)) -> pb::McpServerDefinition {
    pb::McpServerDefinition {
        name: name.into(),
        transport: Some(Transport::Stdio(pb::McpStdioServer {
            command,
            args,
            ..Default::default()
        })),
    }
}

fn http(name: &str, url: &str) -> pb::McpServerDefinition {
    pb::McpServerDefinition {
        name: name.into(),
        transport: Some(Transport::Http(pb::McpHttpServer {
            url: url.into(),
            headers: Default::default(),
        })),
    }
}

fn create(env: &Env, servers: Vec<pb::McpServerDefinition>) -> Result<pb::Agent, tonic::Status> {
    env.rpc(async |client| {
        client
            .create_agent(pb::CreateAgentRequest {
                prompt: "use the servers".into(),
                model: MODEL.into(),
                cwd: env.project().display().to_string(),
                background: true,
                mcp_servers: servers,
                ..Default::default()
            })
            .await
            .map(tonic::Response::into_inner)
    })
}

#[test]
fn requested_servers_are_offered_replace_config_servers_of_their_name_and_reach_subagents() {
    let fx = fixtures();
    let port = mcp_fixtures::free_port();
    let _http = KillOnDrop(fx.spawn_python_http(port));
    let mock = MockServer::start();
    let env = Env::with_mock(&mock);
    // config.toml's `fx` cannot start; the request's `fx` replaces it.
    env.write_config(
        "[mcp_servers.fx]\ncommand = \"/nonexistent/agentd-mcp-server\"\n\n\
         [mcp_servers.kept]\nurl = \"http://127.0.0.1:9/mcp\"\nstartup_timeout_secs = 2\n",
    );
    let _daemon = env.start_daemon();
    mock.enqueue_all([
        call("e1", "mcp__fx__echo", json!({"text": "requested stdio"})),
        call("e2", "mcp__web__echo", json!({"text": "requested http"})),
        call(
            "a1",
            "Agent",
            json!({"description": "child", "prompt": "look at your tools", "subagent_type": "general-purpose"}),
        ),
        Reply::text("child done"),
        Reply::text("all done"),
    ]);
    let agent = create(
        &env,
        vec![
            stdio("fx", fx.python_stdio_command()),
            http("web", &mcp_fixtures::mcp_url(port)),
        ],
    )
    .unwrap();
    let done = env.wait_for_agent(&agent.id, "completed", |a| a["status"] == "completed");
    assert_eq!(done["result"], "all done");

    let requests = mock.requests();
    assert_eq!(requests.len(), 5);
    let names = requests[0].tool_names();
    let at = |n: &str| names.iter().position(|x| x == n);
    // config's first (`kept`, which did not start, offers nothing), then
    // the request's, in its order.
    let (fx_echo, web_echo) = (at("mcp__fx__echo").unwrap(), at("mcp__web__echo").unwrap());
    assert!(fx_echo < web_echo, "{names:?}");
    let (is_error, text) = tool_results(requests[1].messages()).pop().unwrap();
    assert_eq!((is_error, text.as_str()), (false, "requested stdio"));
    let (is_error, text) = tool_results(requests[2].messages()).pop().unwrap();
    assert_eq!((is_error, text.as_str()), (false, "requested http"));
    // The subagent's first request (the fourth) offers the parent's
    // requested servers too.
    let child = requests[3].tool_names();
    assert!(child.contains(&"mcp__fx__echo".to_string()), "{child:?}");
    assert!(child.contains(&"mcp__web__echo".to_string()), "{child:?}");

    let shown = env.show(&agent.id);
    let servers: Vec<(String, String)> = shown["mcp_servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["name"].as_str().unwrap().to_string(),
                s["source"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let pair = |n: &str, s: &str| (n.to_string(), s.to_string());
    assert_eq!(
        servers,
        [
            pair("kept", "config"),
            pair("fx", "editor"),
            pair("web", "editor")
        ],
        "{shown}"
    );
    let text = env.ctl(&["show", &agent.id]).expect_code(0).stdout.clone();
    assert!(text.contains("fx (stdio, editor)"), "{text}");
    let children = env.ctl(&["list", "--json"]).expect_code(0).json();
    let child = children
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["parent_id"] == agent.id.as_str())
        .expect("the subagent is listed");
    let child = env.show(child["id"].as_str().unwrap());
    assert_eq!(child["mcp_servers"][1]["source"], "editor", "{child}");
}

#[test]
fn malformed_requested_servers_are_invalid_argument_and_store_nothing() {
    let env = Env::new();
    let _daemon = env.start_daemon();
    let no_transport = pb::McpServerDefinition {
        name: "bare".into(),
        transport: None,
    };
    let long_name = "n".repeat(100_000);
    let cases: Vec<(Vec<pb::McpServerDefinition>, &str)> = vec![
        (vec![no_transport], "no transport"),
        (
            vec![stdio("bad name", ("x".into(), vec![]))],
            "use only letters, digits",
        ),
        (vec![stdio(&long_name, ("x".into(), vec![]))], "1 to 64"),
        (
            vec![stdio("fx", (" ".into(), vec![]))],
            "`command` is empty",
        ),
        (vec![http("web", "file:///etc/passwd")], "http://"),
        (
            vec![
                stdio("fx", ("x".into(), vec![])),
                http("fx", "http://h/mcp"),
            ],
            "unique",
        ),
    ];
    for (servers, wanted) in cases {
        let status = create(&env, servers).expect_err("refused");
        assert_eq!(status.code(), Code::InvalidArgument, "{status:?}");
        assert!(status.message().contains(wanted), "{wanted}: {status:?}");
        assert!(
            status.message().len() < 400,
            "quotes a short prefix: {} bytes",
            status.message().len()
        );
    }
    let listed = env.ctl(&["list", "--all", "--json"]).expect_code(0).json();
    assert_eq!(listed.as_array().unwrap().len(), 0, "{listed}");
}
