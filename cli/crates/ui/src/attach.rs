//! The Attach stream of the agent the output pane shows: opened when the
//! selection settles on an agent, dropped (which detaches) when it moves.
//! Its request side stays with the dashboard: permission answers go up it.

use agentd_shared::proto as pb;
use futures::StreamExt;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::autostart::Client;

/// History entries shown when the pane opens on an agent.
const RECENT: u64 = 50;

pub enum AttachMsg {
    Event(Box<pb::attach_event::Event>),
    Ended(String),
}

/// One open attachment; dropping it detaches.
pub struct Attachment {
    pub id: String,
    requests: mpsc::Sender<pb::AttachRequest>,
    task: JoinHandle<()>,
}

impl Drop for Attachment {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Attachment {
    /// Attaches to `agent` from its recent history; events go to `tx`
    /// tagged with `generation`.
    pub fn open(
        client: &Client,
        agent: &pb::Agent,
        generation: u64,
        tx: mpsc::Sender<(u64, AttachMsg)>,
    ) -> Attachment {
        let from = agent.transcript_len.saturating_sub(RECENT);
        let (requests, stream) = agentd_shared::attach::requests(&agent.id, from, 8);
        let mut client = client.clone();
        let task = tokio::spawn(async move {
            let mut events = match client.attach(stream).await {
                Ok(r) => r.into_inner(),
                Err(s) => {
                    let _ = tx
                        .send((generation, AttachMsg::Ended(s.message().into())))
                        .await;
                    return;
                }
            };
            loop {
                let msg = match events.next().await {
                    Some(Ok(pb::AttachEvent { event: Some(e) })) => AttachMsg::Event(Box::new(e)),
                    Some(Ok(_)) => continue,
                    Some(Err(s)) => AttachMsg::Ended(s.message().into()),
                    None => AttachMsg::Ended("the stream ended".into()),
                };
                let ended = matches!(msg, AttachMsg::Ended(_));
                if tx.send((generation, msg)).await.is_err() || ended {
                    return;
                }
            }
        });
        Attachment {
            id: agent.id.clone(),
            requests,
            task,
        }
    }

    /// Sends an answer to a permission ask up the stream.
    pub fn answer(&self, answer: pb::PermissionAnswer) -> bool {
        self.requests
            .try_send(agentd_shared::attach::request(
                pb::attach_request::Request::PermissionAnswer(answer),
            ))
            .is_ok()
    }
}
