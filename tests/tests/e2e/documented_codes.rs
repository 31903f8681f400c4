//! The status codes the proto's comments promise, for requests a person
//! gets wrong, as the daemon returns them (comments that said
//! INVALID_ARGUMENT or ALREADY_EXISTS where the daemon answered
//! FAILED_PRECONDITION, and a page limit capped without a word).

#![allow(clippy::unwrap_used)] // Tests: a panic is the failure report.

use agentd_e2e::Env;
use agentd_e2e::mock::{MODEL, MockServer, Reply};
use agentd_e2e::script::{script, text, turn};
use agentd_shared::proto as pb;
use tonic::Code;

#[test]
fn update_agent_refuses_a_model_without_a_key_as_a_precondition() {
    let mock = MockServer::start();
    // Anthropic has a key, OpenAI none.
    let env = Env::new();
    env.set_daemon_env("ANTHROPIC_BASE_URL", &mock.url());
    env.set_daemon_env("ANTHROPIC_API_KEY", "sk-ant-test-key");
    let _daemon = env.start_daemon();
    mock.enqueue(Reply::text("done"));
    let id = env.run_background(MODEL, "keyless", "say it");
    env.wait_for_agent(&id, "completed", |a| a["status"] == "completed");
    let update = |model: &str, id: &str| {
        let req = pb::UpdateAgentRequest {
            id: id.to_string(),
            permission_mode: 0,
            model: model.to_string(),
        };
        env.rpc(async |client| client.update_agent(req).await.unwrap_err())
    };
    let keyless = update("openai:gpt-test", &id);
    assert_eq!(keyless.code(), Code::FailedPrecondition, "{keyless:?}");
    assert!(keyless.message().contains("OPENAI_API_KEY"), "{keyless:?}");
    for not_a_model in ["nonsense", "nope:thing"] {
        let s = update(not_a_model, &id);
        assert_eq!(s.code(), Code::InvalidArgument, "{not_a_model}: {s:?}");
    }
    let s = update("anthropic:claude-other", "no-such-agent");
    assert_eq!(s.code(), Code::NotFound, "{s:?}");
    assert_eq!(env.show(&id)["model"], MODEL, "nothing changed");
}

#[test]
fn create_agent_refuses_worktree_isolation_outside_a_checkout_as_a_precondition() {
    let env = Env::new();
    let _daemon = env.start_daemon();
    let model = env.script("x.json", &script(vec![turn(vec![text("ok")])]));
    // The project directory is no git checkout.
    let status = env.rpc(async |client| {
        client
            .create_agent(pb::CreateAgentRequest {
                prompt: "work apart".into(),
                model,
                cwd: env.project().display().to_string(),
                isolation: pb::Isolation::Worktree as i32,
                ..Default::default()
            })
            .await
            .unwrap_err()
    });
    assert_eq!(status.code(), Code::FailedPrecondition, "{status:?}");
    assert!(status.message().contains("git repository"), "{status:?}");
    assert!(env.agents().is_empty(), "nothing is created");
}

#[test]
fn get_transcript_serves_a_limit_over_the_cap_instead_of_refusing_it() {
    let mock = MockServer::start();
    let env = Env::with_mock(&mock);
    let _daemon = env.start_daemon();
    mock.enqueue(Reply::text("done"));
    let id = env.run_background(MODEL, "paged", "say it");
    env.wait_for_agent(&id, "completed", |a| a["status"] == "completed");
    let page = env.rpc(async |client| {
        client
            .get_transcript(pb::GetTranscriptRequest {
                id: id.clone(),
                from_seq: 0,
                limit: 1_000_000,
            })
            .await
            .unwrap()
            .into_inner()
    });
    assert_eq!(page.entries.len(), 2, "the prompt and the answer");
    assert!(page.end);
    assert_eq!(page.next_seq, 2);
}
