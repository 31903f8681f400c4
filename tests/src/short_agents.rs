//! Many short agents run to completion through one daemon: each gets one
//! prompt and the mock's one answer. Used where a test or bench needs what
//! finished agents leave behind (their events, their memory).

#![allow(clippy::unwrap_used)] // Tests: a panic is the failure report.

use std::ops::Range;
use std::path::PathBuf;

use agentd_shared::proto as pb;

/// Runs agents numbered `agents` with `model` in `cwd`, from `clients`
/// connections at once, and checks that each completed.
pub async fn run(socket: PathBuf, cwd: String, model: &str, agents: Range<usize>, clients: usize) {
    let mut tasks = Vec::new();
    for w in 0..clients {
        let socket = socket.clone();
        let cwd = cwd.clone();
        let model = model.to_owned();
        let mine = (agents.start + w..agents.end).step_by(clients);
        tasks.push(tokio::spawn(async move {
            let mut client = agentd_shared::client::agent_client(&socket).await.unwrap();
            for i in mine {
                let a = client
                    .create_agent(pb::CreateAgentRequest {
                        prompt: format!("short agent {i}"),
                        model: model.clone(),
                        cwd: cwd.clone(),
                        background: true,
                        ..Default::default()
                    })
                    .await
                    .unwrap()
                    .into_inner();
                let done = client
                    .wait_agent(pb::WaitAgentRequest { id: a.id })
                    .await
                    .unwrap()
                    .into_inner();
                assert_eq!(
                    done.status,
                    pb::AgentStatus::Completed as i32,
                    "agent {i} completes"
                );
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
}
