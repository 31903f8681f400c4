//! A gRPC client attached to one agent, as a test drives it: its events
//! arrive on `events`, permission answers go up.

#![allow(clippy::unwrap_used)] // Tests: a panic is the failure report.

use std::time::Duration;

use agentd_shared::proto as pb;
use pb::permission_answer::Decision;
use tokio::sync::mpsc;

use crate::Env;

/// An attached gRPC client: its events arrive on `events`, answers go up.
pub struct Attached {
    pub tx: mpsc::Sender<pb::AttachRequest>,
    pub events: mpsc::UnboundedReceiver<pb::attach_event::Event>,
}

impl Attached {
    pub async fn open(env: &Env, id: &str) -> Attached {
        let mut client = agentd_shared::client::agent_client(&env.socket())
            .await
            .unwrap();
        let (tx, mut stream) = agentd_shared::attach::open(&mut client, id, 0, 8)
            .await
            .unwrap();
        let (etx, events) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            while let Ok(Some(ev)) = stream.message().await {
                if let Some(e) = ev.event
                    && etx.send(e).is_err()
                {
                    return;
                }
            }
        });
        Attached { tx, events }
    }

    /// The next open permission ask.
    pub async fn next_ask(&mut self) -> pb::PermissionRequest {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        loop {
            let ev = tokio::time::timeout_at(deadline, self.events.recv())
                .await
                .expect("an ask arrives")
                .unwrap();
            if let pb::attach_event::Event::PermissionRequest(p) = ev
                && !p.resolved
            {
                return p;
            }
        }
    }

    /// Waits until the ask is closed (answered by anyone).
    pub async fn resolved(&mut self, ask: &pb::PermissionRequest) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        loop {
            let ev = tokio::time::timeout_at(deadline, self.events.recv())
                .await
                .expect("the ask closes")
                .unwrap();
            if let pb::attach_event::Event::PermissionRequest(p) = ev
                && p.resolved
                && p.request_id == ask.request_id
            {
                return;
            }
        }
    }

    pub async fn next_notice(&mut self) -> pb::Notice {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        loop {
            let ev = tokio::time::timeout_at(deadline, self.events.recv())
                .await
                .expect("a notice arrives")
                .unwrap();
            if let pb::attach_event::Event::Notice(n) = ev {
                return n;
            }
        }
    }

    pub async fn answer(&self, ask: &pb::PermissionRequest, decision: Decision, reason: &str) {
        self.send_answer(pb::PermissionAnswer {
            request_id: ask.request_id.clone(),
            decision: decision as i32,
            reason: reason.into(),
            remember: false,
        })
        .await;
    }

    /// "Always", with the ask's rules kept for every agent.
    pub async fn answer_remembered(&self, ask: &pb::PermissionRequest, decision: Decision) {
        self.send_answer(pb::PermissionAnswer {
            request_id: ask.request_id.clone(),
            decision: decision as i32,
            reason: String::new(),
            remember: true,
        })
        .await;
    }

    async fn send_answer(&self, answer: pb::PermissionAnswer) {
        self.tx
            .send(pb::AttachRequest {
                request: Some(pb::attach_request::Request::PermissionAnswer(answer)),
            })
            .await
            .unwrap();
    }
}
