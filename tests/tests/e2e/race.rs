//! The foreground-to-background race (DESIGN §4), as a property: release a
//! foreground child's waiter at random instants — before it starts, while a
//! response streams, while a tool runs, between turns, after it ended — and
//! every child's transcript still equals an undisturbed run's, the mock
//! sees each request exactly once, and each parent hears of its child
//! exactly once: as the tool result, or as "async launched" plus one
//! notification.
//!
//! `AGENTD_RACE_CASES` sets the number of switch points (default 500). The
//! switch points come from a seed, printed first (a failing run's output
//! shows it): `AGENTD_RACE_SEED=<seed>` replays the same schedule, and
//! `AGENTD_RACE_ONLY=<case>` replays one case of it (with the reference).

#![allow(clippy::unwrap_used)] // Tests: a panic is the failure report.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use agentd_e2e::Env;
use agentd_e2e::mock::{Block, MockMessage, MockServer, Reply, n_messages, prompt_of};
use agentd_shared::proto as pb;
use rand::{Rng, SeedableRng};
use serde_json::json;

/// How a delivered notification begins, as it appears in stored JSON.
const NOTE: &str = "<task-notification>\\n<task-id>";

/// A child's transcript without timestamps and with its case number
/// normalized, for comparing runs.
fn shape(entries: &[pb::TranscriptEntry], case: usize) -> Vec<(i32, String)> {
    entries
        .iter()
        .map(|e| {
            let text = String::from_utf8_lossy(&e.content_json)
                .replace(&format!("CHILD-{case:04}"), "CHILD-N");
            (e.role, text)
        })
        .collect()
}

#[test]
fn backgrounding_at_random_points_never_disturbs_the_child() {
    let cases: usize = std::env::var("AGENTD_RACE_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(500);
    let seed: u64 = std::env::var("AGENTD_RACE_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(rand::random);
    let only: Option<usize> = std::env::var("AGENTD_RACE_ONLY")
        .ok()
        .and_then(|v| v.parse().ok());
    println!(
        "race seed {seed}: replay with AGENTD_RACE_SEED={seed} (one case: AGENTD_RACE_ONLY=<case>)"
    );
    // Each case's switch point, from the seed: the same schedule on replay.
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let cases = only.map_or(cases, |c| c.max(cases));
    let switch_after: Vec<Duration> = (0..=cases)
        .map(|_| Duration::from_micros(rng.random_range(0..80_000)))
        .collect();
    let run: Vec<usize> = match only {
        Some(case) => vec![0, case],
        None => (0..=cases).collect(),
    };
    let mock = MockServer::start();
    let env = Env::with_mock(&mock);
    env.write_config("max_running_agents = 64\n[retry]\nmax_attempts = 2\ninitial_backoff_ms = 10\nmax_backoff_ms = 20\n");
    std::fs::write(env.project().join("data.txt"), "forty-two\n").unwrap();
    let _daemon = env.start_daemon();

    let slow = Duration::from_millis(2);
    mock.when(
        |r| prompt_of(r).starts_with("CHILD") && n_messages(r) == 1,
        Reply::Message(
            MockMessage::text("Reading the data file first.")
                .slow(slow)
                .with(Block::tool(
                    "toolu_read",
                    "Read",
                    json!({"file_path": "data.txt"}),
                )),
        ),
    );
    mock.when(
        |r| prompt_of(r).starts_with("CHILD") && n_messages(r) == 3,
        Reply::Message(
            MockMessage::text("Now checking the shell.")
                .slow(slow)
                .with(Block::bash("toolu_bash", "sleep 0.01; echo checked")),
        ),
    );
    mock.when(
        |r| prompt_of(r).starts_with("CHILD") && n_messages(r) == 5,
        Reply::Message(MockMessage::text("The data says forty-two.").slow(slow)),
    );
    for &case in &run {
        let parent_prompt = format!("PARENT-{case:04}");
        mock.when(
            move |r| n_messages(r) == 1 && prompt_of(r) == parent_prompt,
            Reply::Message(MockMessage::text("Delegating.").with(Block::agent(
                "toolu_agent",
                json!({
                    "description": "read the data",
                    "prompt": format!("CHILD-{case:04}: read data.txt and report"),
                    "name": format!("kid-{case:04}"),
                }),
            ))),
        );
    }
    mock.when(
        |r| prompt_of(r).starts_with("PARENT"),
        Reply::Message(MockMessage::text("noted")),
    );

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let socket = env.socket();
    let cwd = env.project().display().to_string();
    let started = Instant::now();
    let mut client = rt
        .block_on(agentd_shared::client::agent_client(&socket))
        .unwrap();
    let launched: Vec<(usize, String)> = rt.block_on(async {
        let mut tasks = Vec::new();
        for &case in &run {
            let mut client = client.clone();
            let cwd = cwd.clone();
            let switch_after = switch_after[case];
            tasks.push(tokio::spawn(async move {
                let parent = client
                    .create_agent(pb::CreateAgentRequest {
                        prompt: format!("PARENT-{case:04}"),
                        model: "anthropic:claude-test".into(),
                        cwd,
                        background: true,
                        ..Default::default()
                    })
                    .await
                    .unwrap()
                    .into_inner();
                // Case 0 runs undisturbed: the reference.
                if case > 0 {
                    // The switch point: anywhere in the child's life.
                    tokio::time::sleep(switch_after).await;
                    let child = format!("kid-{case:04}");
                    loop {
                        match client
                            .background(pb::BackgroundRequest { id: child.clone() })
                            .await
                        {
                            Ok(_) => break,
                            // Ended already: the switch came after the end.
                            Err(s) if s.code() == tonic::Code::FailedPrecondition => break,
                            // Not created yet: the switch waits for it.
                            Err(s) if s.code() == tonic::Code::NotFound => {
                                tokio::time::sleep(Duration::from_millis(1)).await
                            }
                            Err(s) => panic!("background failed: {s}"),
                        }
                    }
                }
                (case, parent.id)
            }));
        }
        let mut out = Vec::new();
        for t in tasks {
            out.push(t.await.unwrap());
        }
        out
    });

    // Wait until every parent heard back in one of the two ways.
    let transcript = |client: &mut pb::agent_service_client::AgentServiceClient<_>, id: &str| {
        let id = id.to_string();
        let mut client = client.clone();
        rt.block_on(async move {
            client
                .get_transcript(pb::GetTranscriptRequest {
                    id,
                    from_seq: 0,
                    limit: 5000,
                })
                .await
                .unwrap()
                .into_inner()
                .entries
        })
    };
    let text_of = |entries: &[pb::TranscriptEntry]| -> String {
        entries
            .iter()
            .map(|e| String::from_utf8_lossy(&e.content_json).into_owned())
            .collect::<Vec<_>>()
            .join("\n")
    };
    let deadline = Instant::now()
        + Duration::from_secs(
            std::env::var("AGENTD_RACE_TIMEOUT")
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(240),
        );
    loop {
        let agents = rt
            .block_on(client.list_agents(pb::ListAgentsRequest {
                all: true,
                ..Default::default()
            }))
            .unwrap()
            .into_inner()
            .agents;
        let settled = agents.len() == 2 * run.len()
            && agents
                .iter()
                .all(|a| a.status == pb::AgentStatus::Completed as i32)
            && launched.iter().all(|(_, pid)| {
                let t = text_of(&transcript(&mut client, pid));
                !t.contains("Async launched") || t.contains(NOTE)
            });
        if settled {
            break;
        }
        if Instant::now() > deadline {
            let stuck: Vec<String> = agents
                .iter()
                .filter(|a| a.status != pb::AgentStatus::Completed as i32)
                .map(|a| {
                    format!(
                        "{} {} status {} turns {}",
                        a.name, a.short_id, a.status, a.turns
                    )
                })
                .collect();
            panic!(
                "the agents did not settle in time ({} agents, {} not completed): {:?}",
                agents.len(),
                stuck.len(),
                &stuck[..stuck.len().min(10)]
            );
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let elapsed = started.elapsed();

    let agents = rt
        .block_on(client.list_agents(pb::ListAgentsRequest {
            all: true,
            ..Default::default()
        }))
        .unwrap()
        .into_inner()
        .agents;
    let by_name: HashMap<String, pb::Agent> =
        agents.iter().map(|a| (a.name.clone(), a.clone())).collect();
    let reference = shape(&transcript(&mut client, &by_name["kid-0000"].id), 0);
    assert_eq!(
        reference.len(),
        6,
        "the undisturbed child: prompt, 2 tool rounds, answer"
    );
    let requests = mock.requests();
    let mut per_prompt: HashMap<String, usize> = HashMap::new();
    for r in &requests {
        *per_prompt.entry(prompt_of(r)).or_default() += 1;
    }
    let (mut released, mut waited) = (0, 0);
    for (case, parent_id) in &launched {
        let child = &by_name[&format!("kid-{case:04}")];
        assert_eq!(child.parent_id, *parent_id);
        // 1. The child's transcript is the undisturbed one.
        assert_eq!(
            shape(&transcript(&mut client, &child.id), *case),
            reference,
            "case {case} (seed {seed})"
        );
        // 2. Every child request reached the model exactly once.
        let child_prompt = format!("CHILD-{case:04}: read data.txt and report");
        assert_eq!(
            per_prompt.get(&child_prompt),
            Some(&3),
            "case {case}: child requests"
        );
        // 3. The parent heard of the child exactly once, one way or the other.
        let parent_text = text_of(&transcript(&mut client, parent_id));
        let notes = parent_text.matches(NOTE).count();
        if parent_text.contains("Async launched") {
            assert_eq!(notes, 1, "case {case}: released, so notified once");
            assert!(parent_text.contains(&format!("<task-id>{}</task-id>", child.id)));
            released += 1;
        } else {
            assert_eq!(notes, 0, "case {case}: waited, so no notification");
            assert!(
                parent_text.contains("The data says forty-two."),
                "case {case}"
            );
            waited += 1;
        }
        // The parent asked twice (the notification rode with the tool
        // result) or three times (it was woken for it); never the same
        // request twice.
        let parent_prompt = format!("PARENT-{case:04}");
        let bodies: Vec<&Vec<u8>> = requests
            .iter()
            .filter(|r| prompt_of(r) == parent_prompt)
            .map(|r| &r.body)
            .collect();
        let allowed = if parent_text.contains("Async launched") {
            2..=3
        } else {
            2..=2
        };
        assert!(
            allowed.contains(&bodies.len()),
            "case {case}: {} parent requests",
            bodies.len()
        );
        assert!(
            bodies.windows(2).all(|w| w[0] != w[1]),
            "case {case}: a parent request was re-sent"
        );
    }
    println!(
        "{} switch points (seed {seed}): {released} released mid-run, {waited} after the child ended; {} requests in {:.1}s",
        run.len() - 1,
        requests.len(),
        elapsed.as_secs_f64()
    );
    if only.is_none() {
        assert!(
            released > cases / 10,
            "too few switches landed while the child ran ({released}; seed {seed})"
        );
    }
}
