//! The API driven with random sequences of calls and random, malformed
//! fields (ids, prefixes, names, enum values out of range, huge strings,
//! streams opened and dropped), seeded and reproducible: no panic, no hang,
//! only the status codes the API documents, and afterwards the daemon still
//! answers, stops cleanly, and its store opens.
//!
//! `AGENTD_FUZZ_SEED=<n>` repeats a run (`random` explores);
//! `AGENTD_FUZZ_CALLS` makes it longer.

#![allow(clippy::unwrap_used)] // Tests: a panic is the failure report.

use std::time::Duration;

use agentd_e2e::Env;
use agentd_e2e::script::{script, text, tool, turn};
use agentd_shared::proto as pb;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::json;
use tonic::Code;

/// Codes the API documents for bad input and states (never Internal,
/// Unknown or a transport failure).
const DOCUMENTED: [Code; 7] = [
    Code::InvalidArgument,
    Code::NotFound,
    Code::FailedPrecondition,
    Code::AlreadyExists,
    Code::ResourceExhausted,
    Code::Unimplemented,
    Code::OutOfRange,
];

/// What a terminal acts on: escapes (CSI, OSC 52, OSC 8), a lone CR,
/// BEL, DEL, C1 CSI, a bidi override, a tag character.
const CONTROLS: [&str; 9] = [
    "\x1b[2J",
    "\x1b]52;c;cHduZWQ=\x07",
    "\x1b]8;;http://x/\x1b\\",
    "\r",
    "\x07",
    "\x7f",
    "\u{9b}31m",
    "\u{202e}",
    "\u{E0041}",
];

fn random_string(rng: &mut StdRng) -> String {
    match rng.random_range(0..10) {
        // A plausible value with control characters in it.
        9 => {
            let plain = ["agent-name", "anthropic:claude-x", "scripted:s.json", "go"];
            let mut s = plain[rng.random_range(0..plain.len())].to_string();
            for _ in 0..rng.random_range(1..4) {
                let at = rng.random_range(0..=s.len());
                let at = (0..=at).rev().find(|i| s.is_char_boundary(*i)).unwrap_or(0);
                s.insert_str(at, CONTROLS[rng.random_range(0..CONTROLS.len())]);
            }
            s
        }
        0 => String::new(),
        1 => "x".repeat(rng.random_range(1..200_000)),
        2 => (0..rng.random_range(1..9))
            .map(|_| char::from_digit(rng.random_range(0..16), 16).unwrap())
            .collect(),
        3 => uuid::Uuid::now_v7().to_string(),
        4 => "../../etc/passwd\0\u{202e}\u{1F600}".to_string(),
        5 => " \t\n".to_string(),
        6 => "-".repeat(rng.random_range(1..5)),
        7 => (0..rng.random_range(1..64))
            .map(|_| char::from_u32(rng.random_range(1..0x2FFF)).unwrap_or('?'))
            .collect(),
        _ => "agent-name".to_string(),
    }
}

fn random_enum(rng: &mut StdRng) -> i32 {
    match rng.random_range(0..4) {
        0 => rng.random_range(-5..0),
        1 => rng.random_range(5..1000),
        _ => rng.random_range(0..5),
    }
}

#[test]
fn random_calls_with_malformed_fields_get_documented_errors_and_leave_a_sound_store() {
    // A fixed seed by default, so the suite is reproducible;
    // AGENTD_FUZZ_SEED=random explores.
    let seed: u64 = match std::env::var("AGENTD_FUZZ_SEED").ok().as_deref() {
        Some("random") => rand::random(),
        Some(s) => s.parse().expect("AGENTD_FUZZ_SEED: a number or `random`"),
        None => 0x5eed_a9e7d,
    };
    let calls: usize = std::env::var("AGENTD_FUZZ_CALLS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(300);
    eprintln!("AGENTD_FUZZ_SEED={seed} AGENTD_FUZZ_CALLS={calls}");
    let mut rng = StdRng::seed_from_u64(seed);
    let env = Env::new();
    let daemon = env.start_daemon();
    let good = env.script(
        "s.json",
        &script(vec![
            turn(vec![tool("Bash", json!({"command": "sleep 0.2"}))]),
            turn(vec![text("ok")]),
        ]),
    );
    let cwd = env.project().display().to_string();
    let mut known: Vec<String> = Vec::new();

    env.rpc(async |client| {
        for n in 0..calls {
            // Sometimes a real id, sometimes a prefix of one, sometimes junk.
            let id = match (rng.random_range(0..4), known.is_empty()) {
                (0 | 1, false) => known[rng.random_range(0..known.len())].clone(),
                (2, false) => {
                    let k = &known[rng.random_range(0..known.len())];
                    k[..rng.random_range(1..k.len())].to_string()
                }
                _ => random_string(&mut rng),
            };
            let which = rng.random_range(0..14);
            let call = async {
                match which {
                    0 | 1 => {
                        let valid = rng.random_bool(0.6);
                        client
                            .create_agent(pb::CreateAgentRequest {
                                prompt: if valid {
                                    "go".into()
                                } else {
                                    random_string(&mut rng)
                                },
                                model: if valid {
                                    good.clone()
                                } else {
                                    random_string(&mut rng)
                                },
                                cwd: if valid {
                                    cwd.clone()
                                } else {
                                    random_string(&mut rng)
                                },
                                name: if rng.random_bool(0.3) {
                                    random_string(&mut rng)
                                } else {
                                    String::new()
                                },
                                background: true,
                                permission_mode: if valid { 4 } else { random_enum(&mut rng) },
                                isolation: if valid { 0 } else { random_enum(&mut rng) },
                                sandbox: if valid { 3 } else { random_enum(&mut rng) },
                                max_turns: rng.random_range(0..u32::MAX),
                                idle: rng.random_bool(0.1),
                                // An external agent this daemon has none of.
                                executor: if !valid && rng.random_bool(0.2) {
                                    random_string(&mut rng)
                                } else {
                                    String::new()
                                },
                                ..Default::default()
                            })
                            .await
                            .map(|r| {
                                known.push(r.into_inner().id);
                            })
                    }
                    2 => client.get_agent(pb::GetAgentRequest { id }).await.map(drop),
                    3 => client
                        .send_message(pb::SendMessageRequest {
                            id,
                            message: random_string(&mut rng),
                            // Garbage amounts too: refused, never a cap of nothing.
                            budget_usd: [0.0, -1.0, f64::NAN, f64::INFINITY, 1e9, 0.5]
                                [rng.random_range(0..6)],
                            budget_tokens: rng.random_range(0..3),
                        })
                        .await
                        .map(drop),
                    4 => client
                        .pause_agent(pb::PauseAgentRequest { id })
                        .await
                        .map(drop),
                    5 => client
                        .interrupt_agent(pb::InterruptAgentRequest { id })
                        .await
                        .map(drop),
                    6 => client
                        .cancel_agent(pb::CancelAgentRequest { id })
                        .await
                        .map(drop),
                    7 => client
                        .update_agent(pb::UpdateAgentRequest {
                            id,
                            permission_mode: random_enum(&mut rng),
                            model: if rng.random_bool(0.5) {
                                random_string(&mut rng)
                            } else {
                                String::new()
                            },
                        })
                        .await
                        .map(drop),
                    8 => client
                        .fork_agent(pb::ForkAgentRequest {
                            parent_id: id,
                            directive: random_string(&mut rng),
                            fork_turns: random_string(&mut rng),
                            isolation: random_enum(&mut rng),
                            ..Default::default()
                        })
                        .await
                        .map(drop),
                    9 => client
                        .get_transcript(pb::GetTranscriptRequest {
                            id,
                            ..Default::default()
                        })
                        .await
                        .map(drop),
                    10 => client
                        .remove_agent(pb::RemoveAgentRequest {
                            id,
                            force: rng.random_bool(0.5),
                            ..Default::default()
                        })
                        .await
                        .map(drop),
                    11 => client
                        .list_agents(pb::ListAgentsRequest {
                            all: rng.random_bool(0.5),
                            parent_id: if rng.random_bool(0.5) {
                                id
                            } else {
                                String::new()
                            },
                        })
                        .await
                        .map(drop),
                    12 => {
                        // An attach opened, maybe answered, and dropped.
                        let (tx, rx) = tokio::sync::mpsc::channel(4);
                        let start = rng.random_bool(0.8);
                        if start {
                            tx.send(agentd_e2e::attach_start(&id, rng.random_range(0..u64::MAX)))
                                .await
                                .unwrap();
                        }
                        if rng.random_bool(0.5) {
                            let _ = tx
                                .send(pb::AttachRequest {
                                    request: Some(pb::attach_request::Request::PermissionAnswer(
                                        pb::PermissionAnswer {
                                            request_id: random_string(&mut rng),
                                            decision: random_enum(&mut rng),
                                            reason: random_string(&mut rng),
                                            remember: rng.random_bool(0.5),
                                        },
                                    )),
                                })
                                .await;
                        }
                        // Without a start, closed before one could come (a
                        // stream held open without one waits 10 s for it).
                        let held = if start {
                            Some(tx)
                        } else {
                            drop(tx);
                            None
                        };
                        let stream = client
                            .attach(tokio_stream::wrappers::ReceiverStream::new(rx))
                            .await;
                        drop(held);
                        match stream {
                            Ok(s) => {
                                let mut s = s.into_inner();
                                let _ =
                                    tokio::time::timeout(Duration::from_millis(50), s.message())
                                        .await;
                                Ok(())
                            }
                            Err(e) => Err(e),
                        }
                    }
                    _ => client
                        .get_usage(pb::GetUsageRequest {
                            id,
                            family: rng.random_bool(0.5),
                        })
                        .await
                        .map(drop),
                }
            };
            let outcome = tokio::time::timeout(Duration::from_secs(30), call)
                .await
                .unwrap_or_else(|_| panic!("call {n} (kind {which}) hung; seed {seed}"));
            if let Err(status) = outcome {
                assert!(
                    DOCUMENTED.contains(&status.code()),
                    "call {n} (kind {which}): undocumented {:?}: {}; seed {seed}",
                    status.code(),
                    status.message()
                );
                assert!(
                    status.message().len() < 2_000,
                    "call {n}: the error quotes too much ({} bytes); seed {seed}",
                    status.message().len()
                );
                // What an error quotes is made visible: any client may
                // print it on a terminal.
                assert!(
                    !status
                        .message()
                        .chars()
                        .any(|c| c != '\n' && agentd_shared::visible::needs_stand_in(c)),
                    "call {n} (kind {which}): a raw control character in {:?}; seed {seed}",
                    status.message()
                );
            }
        }
        // Approvals of a repository's MCP servers, with malformed names and
        // directories (after the mixed calls, so their sequence is kept).
        for n in 0..40 {
            let names: Vec<String> = (0..rng.random_range(0..3))
                .map(|_| random_string(&mut rng))
                .collect();
            let dir = if rng.random_bool(0.5) {
                cwd.clone()
            } else {
                random_string(&mut rng)
            };
            let all = rng.random_bool(0.3);
            let agent_type = if rng.random_bool(0.3) {
                random_string(&mut rng)
            } else {
                String::new()
            };
            let outcome = if rng.random_bool(0.7) {
                client
                    .approve_mcp_servers(pb::ApproveMcpServersRequest {
                        cwd: dir,
                        names,
                        all,
                        agent_type,
                    })
                    .await
                    .map(drop)
            } else {
                client
                    .revoke_mcp_servers(pb::RevokeMcpServersRequest {
                        cwd: dir,
                        names,
                        all,
                        agent_type,
                    })
                    .await
                    .map(drop)
            };
            if let Err(status) = outcome {
                assert!(
                    DOCUMENTED.contains(&status.code()) && status.message().len() < 2_000,
                    "approval call {n}: {:?}: {} bytes; seed {seed}",
                    status.code(),
                    status.message().len()
                );
                assert!(
                    !status
                        .message()
                        .chars()
                        .any(|c| c != '\n' && agentd_shared::visible::needs_stand_in(c)),
                    "approval call {n}: a raw control character in {:?}; seed {seed}",
                    status.message()
                );
            }
        }
        // Still serving.
        client.get_status(pb::GetStatusRequest {}).await.unwrap();
    });
    assert!(daemon.terminate().success(), "seed {seed}");
    // The store opens, and every agent's record and transcript read.
    let store = agentd::store::Store::open(&env.data_dir(), agentd::store::StoreOptions::default())
        .unwrap_or_else(|e| panic!("the store does not open: {e}; seed {seed}"));
    for id in store.ids_by_status(|_| true).unwrap() {
        let record = store.get_agent(id).unwrap().unwrap();
        let entries = store.transcript(id, 0, usize::MAX).unwrap();
        assert_eq!(entries.len() as u64, record.transcript_len, "seed {seed}");
        // Names and models are refused with a control character, never
        // stored to be shown in every listing.
        for (what, value) in [("name", &record.name), ("model", &record.model)] {
            assert!(
                !agentd_shared::visible::has_control(value),
                "{what} {value:?} was stored; seed {seed}"
            );
        }
    }
    assert_eq!(store.corrupt_count(), 0, "seed {seed}");
}
