//! Bad input gets a clear error with the right status code, stores nothing,
//! and the daemon keeps serving.

#![allow(clippy::unwrap_used)] // Tests: a panic is the failure report.

use agentd_e2e::Env;
use agentd_e2e::script::{script, text, turn};
use agentd_shared::proto as pb;
use tonic::Code;

fn create(env: &Env, prompt: String, model: &str) -> tonic::Status {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut client = agentd_shared::client::agent_client(&env.socket())
            .await
            .unwrap();
        client
            .create_agent(pb::CreateAgentRequest {
                prompt,
                model: model.to_string(),
                cwd: env.project().display().to_string(),
                ..Default::default()
            })
            .await
            .expect_err("request must be refused")
    })
}

#[test]
fn bad_requests_get_the_right_codes_and_store_nothing() {
    let env = Env::new();
    let _daemon = env.start_daemon();
    let good = env.script("ok.json", &script(vec![turn(vec![text("ok")])]));
    std::fs::write(
        env.root.path().join("broken.json"),
        "{\"turns\": [ {\"content\": ",
    )
    .unwrap();
    std::fs::write(
        env.root.path().join("wrong.yaml"),
        "turns:\n  - content:\n      - {type: nonsense}\n",
    )
    .unwrap();
    let broken = format!("scripted:{}", env.root.path().join("broken.json").display());
    let wrong = format!("scripted:{}", env.root.path().join("wrong.yaml").display());
    let missing = format!(
        "scripted:{}",
        env.root.path().join("missing.json").display()
    );

    let cases: Vec<(String, String, Code, &str)> = vec![
        (
            String::new(),
            good.clone(),
            Code::InvalidArgument,
            "prompt is empty",
        ),
        (
            "   \n".into(),
            good.clone(),
            Code::InvalidArgument,
            "prompt is empty",
        ),
        (
            "x".repeat(1024 * 1024 + 1),
            good.clone(),
            Code::InvalidArgument,
            "limit is 1048576 bytes",
        ),
        (
            "hi".into(),
            "bogus:thing".into(),
            Code::InvalidArgument,
            "unknown model scheme 'bogus'",
        ),
        (
            "hi".into(),
            "noscheme".into(),
            Code::InvalidArgument,
            "has no scheme",
        ),
        (
            "hi".into(),
            missing,
            Code::FailedPrecondition,
            "cannot read model script",
        ),
        (
            "hi".into(),
            broken,
            Code::InvalidArgument,
            "malformed model script",
        ),
        (
            "hi".into(),
            wrong,
            Code::InvalidArgument,
            "malformed model script",
        ),
    ];
    for (prompt, model, code, needle) in cases {
        let status = create(&env, prompt, &model);
        assert_eq!(status.code(), code, "{model}: {}", status.message());
        assert!(
            status.message().contains(needle),
            "{model}: {}",
            status.message()
        );
        env.ctl(&["status"]).expect_code(0);
    }
    assert_eq!(
        env.ctl(&["list", "--all", "--json"]).json(),
        serde_json::json!([])
    );
    // A prompt of exactly 1 MiB is fine.
    env.ctl(&["status"]).expect_code(0);
}

#[test]
fn bad_input_through_the_cli_exits_1_with_the_message() {
    let env = Env::new();
    let _daemon = env.start_daemon();
    let out = env.ctl(&["run", "--model", "bogus:x", "hi"]);
    out.expect_code(1);
    assert!(
        out.stderr
            .contains("invalid argument: unknown model scheme"),
        "{}",
        out.stderr
    );
    let missing = env.ctl(&["run", "--model", "scripted:does-not-exist.json", "hi"]);
    missing.expect_code(1);
    assert!(
        missing
            .stderr
            .contains("failed precondition: cannot read model script"),
        "{}",
        missing.stderr
    );
    let usage = env.ctl(&["run"]);
    usage.expect_code(2);
    let cwd = env.ctl(&[
        "run",
        "--model",
        "scripted:x.json",
        "--cwd",
        "/no/such/dir",
        "hi",
    ]);
    cwd.expect_code(1);
    assert!(cwd.stderr.contains("/no/such/dir"), "{}", cwd.stderr);
}

#[test]
fn a_prompt_of_exactly_one_mebibyte_is_accepted() {
    let env = Env::new();
    let _daemon = env.start_daemon();
    let model = env.script("ok.json", &script(vec![turn(vec![text("ok")])]));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let agent = rt.block_on(async {
        let mut client = agentd_shared::client::agent_client(&env.socket())
            .await
            .unwrap();
        client
            .create_agent(pb::CreateAgentRequest {
                prompt: "y".repeat(1024 * 1024),
                model,
                cwd: env.project().display().to_string(),
                ..Default::default()
            })
            .await
            .unwrap()
            .into_inner()
    });
    env.ctl(&["wait", &agent.id]).expect_code(0);
}

#[test]
fn methods_of_later_versions_answer_unimplemented() {
    let env = Env::new();
    let _daemon = env.start_daemon();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut client = agentd_shared::client::agent_client(&env.socket())
            .await
            .unwrap();
        let s = client
            .fork_agent(pb::ForkAgentRequest::default())
            .await
            .unwrap_err();
        assert_eq!(s.code(), Code::Unimplemented);
        assert!(s.message().contains("not implemented"), "{}", s.message());
        let s = client
            .list_worktrees(pb::ListWorktreesRequest::default())
            .await
            .unwrap_err();
        assert_eq!(s.code(), Code::Unimplemented);
        let s = client
            .get_usage(pb::GetUsageRequest::default())
            .await
            .unwrap_err();
        assert_eq!(s.code(), Code::Unimplemented);
    });
}

#[test]
fn health_and_reflection_are_served() {
    let env = Env::new();
    let _daemon = env.start_daemon();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let channel = agentd_shared::client::connect(&env.socket()).await.unwrap();
        let mut health = tonic_health::pb::health_client::HealthClient::new(channel.clone());
        let resp = health
            .check(tonic_health::pb::HealthCheckRequest {
                service: "agentd.v1.AgentService".into(),
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(
            resp.status,
            tonic_health::pb::health_check_response::ServingStatus::Serving as i32
        );

        use tonic_reflection::pb::v1 as refl;
        let mut reflection = refl::server_reflection_client::ServerReflectionClient::new(channel);
        let req = refl::ServerReflectionRequest {
            host: String::new(),
            message_request: Some(
                refl::server_reflection_request::MessageRequest::ListServices(String::new()),
            ),
        };
        let mut stream = reflection
            .server_reflection_info(futures::stream::iter([req]))
            .await
            .unwrap()
            .into_inner();
        let resp = stream.message().await.unwrap().unwrap();
        let Some(refl::server_reflection_response::MessageResponse::ListServicesResponse(list)) =
            resp.message_response
        else {
            panic!("unexpected reflection answer");
        };
        let names: Vec<String> = list.service.into_iter().map(|s| s.name).collect();
        assert!(
            names.contains(&"agentd.v1.AgentService".to_string()),
            "{names:?}"
        );
    });
}
