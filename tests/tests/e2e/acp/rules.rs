//! Permission rules through the ACP bridge (DESIGN §24): the editor's
//! `allow_always` keeps the call's rule in agentd's remembered rules, for
//! every agent; a rule's decision shows on the call it governed.

#![allow(clippy::unwrap_used)] // Tests: a panic is the failure report.

use std::time::Duration;

use agentd_e2e::Env;
use agentd_e2e::acp_stdio::{AcpAgent, RpcError};
use agentd_e2e::mock::{MockServer, Reply};
use serde_json::{Value, json};

const LIMIT: Duration = Duration::from_secs(60);

fn bridge(env: &Env) -> AcpAgent {
    let cmd = env.ctl_command(&["acp"]);
    let mut agent = AcpAgent::spawn(cmd, env.home().join("bridge.stderr")).unwrap();
    agent
        .request(
            "initialize",
            json!({"protocolVersion": 1}),
            LIMIT,
            &mut agentd_e2e::acp_stdio::refuse,
        )
        .unwrap();
    agent
}

fn session(agent: &mut AcpAgent, env: &Env) -> String {
    let made = agent
        .request(
            "session/new",
            json!({"cwd": env.project().display().to_string(), "mcpServers": []}),
            LIMIT,
            &mut agentd_e2e::acp_stdio::refuse,
        )
        .unwrap();
    made["sessionId"].as_str().unwrap().to_string()
}

#[test]
fn allow_always_in_an_editor_keeps_the_calls_rule_for_every_agent() {
    let mock = MockServer::start();
    let env = Env::with_mock(&mock);
    env.write_config("default_model = \"anthropic:claude-test\"\n");
    let _daemon = env.start_daemon();
    mock.enqueue_all([
        Reply::tool("", "Bash", json!({"command": "echo kept"})),
        Reply::text("first done"),
        Reply::tool("", "Bash", json!({"command": "echo kept"})),
        Reply::text("second done"),
    ]);
    let mut agent = bridge(&env);
    let id = session(&mut agent, &env);
    let asked: std::cell::RefCell<Vec<Value>> = std::cell::RefCell::new(Vec::new());
    let mut handler = |method: &str, params: &Value| -> Result<Value, RpcError> {
        if method != "session/request_permission" {
            return Err((-32601, method.to_string()));
        }
        asked.borrow_mut().push(params.clone());
        let always = params["options"]
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o["kind"] == "allow_always")
            .unwrap();
        Ok(json!({"outcome": {"outcome": "selected", "optionId": always["optionId"]}}))
    };
    let done = agent
        .request(
            "session/prompt",
            json!({"sessionId": id, "prompt": [{"type": "text", "text": "run it"}]}),
            LIMIT,
            &mut handler,
        )
        .unwrap();
    assert_eq!(done["stopReason"], "end_turn", "{done}");
    let first_ask = asked.borrow()[0].clone();
    assert_eq!(asked.borrow().len(), 1, "{asked:?}");
    let names: Vec<&str> = first_ask["options"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|o| o["name"].as_str())
        .collect();
    assert!(
        names.contains(&"Always allow, for every agent: Bash(echo kept)"),
        "the option says what it keeps: {names:?}"
    );
    let kept =
        std::fs::read_to_string(env.home().join(".config/agentd/remembered-rules.toml")).unwrap();
    assert!(kept.contains("\"Bash(echo kept)\""), "{kept}");

    // A second session (another agent) runs it without an ask, and the
    // editor is told which rule let it.
    let second = session(&mut agent, &env);
    let done = agent
        .request(
            "session/prompt",
            json!({"sessionId": second, "prompt": [{"type": "text", "text": "again"}]}),
            LIMIT,
            &mut handler,
        )
        .unwrap();
    assert_eq!(done["stopReason"], "end_turn", "{done}");
    assert_eq!(asked.borrow().len(), 1, "no second ask");
    let shown = serde_json::to_string(&agent.updates(&second)).unwrap();
    assert!(
        shown.contains("allowed by Bash(echo kept) in remembered-rules.toml"),
        "{shown}"
    );
}
