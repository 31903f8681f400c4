//! Bad input gets a clear error with the right status code, stores nothing,
//! and the daemon keeps serving.

#![allow(clippy::unwrap_used)] // Tests: a panic is the failure report.

use agentd_e2e::Env;
use agentd_e2e::script::{script, text, turn};
use agentd_shared::proto as pb;
use futures::StreamExt;
use tonic::Code;

fn create(env: &Env, prompt: String, model: &str) -> tonic::Status {
    env.rpc(async |client| {
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
    let agent = env.rpc(async |client| {
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
fn worktree_and_usage_methods_refuse_bad_requests() {
    let env = Env::new();
    let _daemon = env.start_daemon();
    env.rpc(async |client| {
        let listed = client
            .list_worktrees(pb::ListWorktreesRequest::default())
            .await
            .unwrap()
            .into_inner();
        assert!(listed.worktrees.is_empty());
        let s = client
            .diff_agent(pb::DiffAgentRequest {
                id: "nobody".into(),
                stat: false,
            })
            .await
            .unwrap_err();
        assert_eq!(s.code(), Code::NotFound);
        let s = client
            .merge_agent(pb::MergeAgentRequest {
                id: String::new(),
                squash: false,
            })
            .await
            .unwrap_err();
        assert_eq!(s.code(), Code::InvalidArgument);
        let s = client
            .create_agent(pb::CreateAgentRequest {
                prompt: "x".into(),
                model: "scripted:/nonexistent".into(),
                cwd: "/".into(),
                base: "main".into(),
                ..Default::default()
            })
            .await
            .unwrap_err();
        assert_eq!(s.code(), Code::InvalidArgument);
        assert!(
            s.message().contains("only to worktree isolation"),
            "{}",
            s.message()
        );
        let s = client
            .get_usage(pb::GetUsageRequest {
                id: String::new(),
                family: true,
            })
            .await
            .unwrap_err();
        assert_eq!(s.code(), Code::InvalidArgument);
        let s = client
            .get_usage(pb::GetUsageRequest {
                id: "nobody".into(),
                family: false,
            })
            .await
            .unwrap_err();
        assert_eq!(s.code(), Code::NotFound);
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

        // v1alpha too: Python's grpcio-reflection speaks only that one.
        use tonic_reflection::pb::v1alpha as alpha;
        let mut reflection = alpha::server_reflection_client::ServerReflectionClient::new(
            agentd_shared::client::connect(&env.socket()).await.unwrap(),
        );
        let req = alpha::ServerReflectionRequest {
            host: String::new(),
            message_request: Some(
                alpha::server_reflection_request::MessageRequest::FileContainingSymbol(
                    "agentd.v1.AgentService".into(),
                ),
            ),
        };
        let mut stream = reflection
            .server_reflection_info(futures::stream::iter([req]))
            .await
            .expect("reflection v1alpha is served")
            .into_inner();
        let resp = stream.message().await.unwrap().unwrap();
        let Some(alpha::server_reflection_response::MessageResponse::FileDescriptorResponse(files)) =
            resp.message_response
        else {
            panic!("unexpected v1alpha reflection answer: {resp:?}");
        };
        assert!(!files.file_descriptor_proto.is_empty());
    });
}

#[test]
fn unknown_enum_values_are_refused_never_read_as_a_default() {
    let env = Env::new();
    let _daemon = env.start_daemon();
    let good = env.script("ok.json", &script(vec![turn(vec![text("ok")])]));
    let cwd = env.project().display().to_string();
    env.rpc(async |client| {
        // 99 used to be stored as bypass: Bash ran without asking.
        for (mode, isolation, what) in [
            (99, 0, "permission_mode 99"),
            (-3, 0, "permission_mode -3"),
            (0, 7, "isolation 7"),
        ] {
            let s = client
                .create_agent(pb::CreateAgentRequest {
                    prompt: "echo hi".into(),
                    model: good.clone(),
                    cwd: cwd.clone(),
                    permission_mode: mode,
                    isolation,
                    ..Default::default()
                })
                .await
                .unwrap_err();
            assert_eq!(s.code(), Code::InvalidArgument, "{what}: {}", s.message());
            assert!(s.message().contains(what), "{}", s.message());
        }
        let listed = client
            .list_agents(pb::ListAgentsRequest {
                all: true,
                ..Default::default()
            })
            .await
            .unwrap()
            .into_inner();
        assert!(listed.agents.is_empty(), "nothing was stored");
    });
}

#[test]
fn a_huge_or_malformed_id_is_an_invalid_argument_with_a_short_message() {
    let env = Env::new();
    let _daemon = env.start_daemon();
    let id = "z".repeat(100_000);
    let short_enough = |s: &tonic::Status, what: &str| {
        assert!(
            s.message().len() < 400,
            "{what}: the message quotes {} bytes",
            s.message().len()
        );
    };
    env.rpc(async |client| {
        let statuses = vec![
            (
                "get",
                client
                    .get_agent(pb::GetAgentRequest { id: id.clone() })
                    .await
                    .unwrap_err(),
            ),
            (
                "wait",
                client
                    .wait_agent(pb::WaitAgentRequest { id: id.clone() })
                    .await
                    .unwrap_err(),
            ),
            (
                "send",
                client
                    .send_message(pb::SendMessageRequest {
                        id: id.clone(),
                        message: "hi".into(),
                        ..Default::default()
                    })
                    .await
                    .unwrap_err(),
            ),
            (
                "background",
                client
                    .background(pb::BackgroundRequest { id: id.clone() })
                    .await
                    .unwrap_err(),
            ),
            (
                "pause",
                client
                    .pause_agent(pb::PauseAgentRequest { id: id.clone() })
                    .await
                    .unwrap_err(),
            ),
            (
                "cancel",
                client
                    .cancel_agent(pb::CancelAgentRequest { id: id.clone() })
                    .await
                    .unwrap_err(),
            ),
            (
                "remove",
                client
                    .remove_agent(pb::RemoveAgentRequest {
                        id: id.clone(),
                        force: true,
                        discard_worktree: true,
                        cwd: String::new(),
                    })
                    .await
                    .unwrap_err(),
            ),
            (
                "transcript",
                client
                    .get_transcript(pb::GetTranscriptRequest {
                        id: id.clone(),
                        ..Default::default()
                    })
                    .await
                    .unwrap_err(),
            ),
            (
                "list",
                client
                    .list_agents(pb::ListAgentsRequest {
                        parent_id: id.clone(),
                        all: true,
                    })
                    .await
                    .unwrap_err(),
            ),
            (
                "attach",
                client
                    .attach(futures::stream::iter([agentd_e2e::attach_start(&id, 0)]))
                    .await
                    .unwrap_err(),
            ),
        ];
        for (what, s) in statuses {
            assert_eq!(
                s.code(),
                Code::InvalidArgument,
                "{what}: {:?} {}",
                s.code(),
                &s.message()[..s.message().len().min(200)]
            );
            short_enough(&s, what);
        }
        let long_name = client
            .create_agent(pb::CreateAgentRequest {
                prompt: "hi".into(),
                model: "scripted:x".into(),
                name: "n".repeat(100_000),
                cwd: "/".into(),
                ..Default::default()
            })
            .await
            .unwrap_err();
        assert_eq!(long_name.code(), Code::InvalidArgument);
        short_enough(&long_name, "name");
        let long_model = client
            .create_agent(pb::CreateAgentRequest {
                prompt: "hi".into(),
                model: format!("bogus:{}", "m".repeat(100_000)),
                cwd: "/".into(),
                ..Default::default()
            })
            .await
            .unwrap_err();
        assert_eq!(long_model.code(), Code::InvalidArgument);
        short_enough(&long_model, "model");
        let long_script = client
            .create_agent(pb::CreateAgentRequest {
                prompt: "hi".into(),
                model: format!("scripted:{}", "s".repeat(100_000)),
                cwd: "/".into(),
                ..Default::default()
            })
            .await
            .unwrap_err();
        assert_eq!(long_script.code(), Code::FailedPrecondition);
        short_enough(&long_script, "script path");
    });
}

#[test]
fn reading_past_the_end_reports_the_real_end_and_attach_says_so() {
    let env = Env::new();
    let _daemon = env.start_daemon();
    let model = env.script("ok.json", &script(vec![turn(vec![text("ok")])]));
    env.ctl(&["run", "--model", &model, "--name", "short-one", "hi"])
        .expect_code(0);
    env.rpc(async |client| {
        let page = client
            .get_transcript(pb::GetTranscriptRequest {
                id: "short-one".into(),
                from_seq: 1_000_000,
                limit: 0,
            })
            .await
            .unwrap()
            .into_inner();
        assert!(page.entries.is_empty());
        assert_eq!(page.next_seq, 2, "the real end, not the position asked for");
        assert!(page.end);

        let mut events = client
            .attach(futures::stream::iter([agentd_e2e::attach_start(
                "short-one",
                1_000_000,
            )]))
            .await
            .unwrap()
            .into_inner();
        let mut notice = None;
        while let Some(ev) = events.message().await.unwrap() {
            match ev.event {
                Some(pb::attach_event::Event::Notice(n)) => notice = Some(n.text),
                Some(pb::attach_event::Event::Status(_)) => break,
                _ => {}
            }
        }
        let notice = notice.expect("the attach says where the transcript ends");
        assert!(
            notice.contains("past the end") && notice.contains("2 entries"),
            "{notice}"
        );

        // `start` twice on one stream is a client error.
        let twice = futures::stream::iter([
            agentd_e2e::attach_start("short-one", 0),
            agentd_e2e::attach_start("short-one", 0),
        ])
        .chain(futures::stream::pending());
        let mut events = client.attach(twice).await.unwrap().into_inner();
        let status = loop {
            match events.message().await {
                Ok(Some(_)) => continue,
                Ok(None) => panic!("the stream ended without an error"),
                Err(s) => break s,
            }
        };
        assert_eq!(status.code(), Code::InvalidArgument, "{}", status.message());
        assert!(status.message().contains("start"), "{}", status.message());
    });
}

#[test]
fn an_attach_stream_that_never_says_which_agent_is_closed_with_a_clear_error() {
    let env = Env::new();
    let _daemon = env.start_daemon();
    env.rpc(async |client| {
        // Opened, held, and never a `start`.
        let (tx, rx) = tokio::sync::mpsc::channel::<pb::AttachRequest>(1);
        let started = std::time::Instant::now();
        let answer = tokio::time::timeout(
            std::time::Duration::from_secs(30),
            client.attach(tokio_stream::wrappers::ReceiverStream::new(rx)),
        )
        .await
        .expect("the daemon answers a stream that never starts");
        let status = answer.map(drop).unwrap_err();
        assert_eq!(status.code(), Code::InvalidArgument);
        assert!(
            status.message().contains("no `start`"),
            "{}",
            status.message()
        );
        assert!(started.elapsed() >= std::time::Duration::from_secs(9));
        drop(tx);
    });
}
