//! The dashboard's link to the daemon: one task that connects, opens the
//! Watch stream, lists every agent once, then forwards Watch events; when
//! the daemon goes away (a restart, a crash, a watcher too far behind) it
//! says so and starts over with backoff, so the screen recovers by itself.
//! The Watch stream is opened before the listing so no event falls between
//! the two; an event the listing already holds is applied again harmlessly.

use std::time::Duration;

use agentd_shared::proto as pb;
use futures::StreamExt;
use tokio::sync::mpsc;

use crate::autostart::{Client, Target};
use crate::backoff::Pauses;

/// The pauses between reconnection attempts.
const PAUSES: Pauses = Pauses {
    first: Duration::from_millis(200),
    longest: Duration::from_secs(5),
};

/// Events sent up the channel before the loop must take them; past this
/// the task waits, the daemon finds the watcher slow, ends its stream, and
/// the dashboard relists (the API's documented recovery).
pub const QUEUE: usize = 8192;

pub enum LinkMsg {
    /// (Re)connected: a client and every agent as of now.
    Connected(Client, Vec<pb::Agent>),
    Event(Box<pb::WatchEvent>),
    /// The stream ended; reconnecting.
    Lost(String),
}

/// Starts the link; it runs until the receiver is dropped. `first` is the
/// client `agentctl` already made (so startup errors are printed before
/// the screen is taken).
pub fn start(target: Target, first: Client) -> mpsc::Receiver<LinkMsg> {
    let (tx, rx) = mpsc::channel(QUEUE);
    tokio::spawn(run(target, first, tx));
    rx
}

async fn run(target: Target, first: Client, tx: mpsc::Sender<LinkMsg>) {
    let mut client = Some(first);
    // Attempts since the last connection that worked.
    let mut attempts = 0;
    loop {
        let c = match client.take() {
            Some(c) => Some(c),
            None => target.running_client().await.ok().flatten(),
        };
        let lost = match c {
            Some(c) => match session(c, &tx, &mut attempts).await {
                Ok(reason) => reason,
                Err(Closed) => return,
            },
            None => "agentd does not answer".to_string(),
        };
        if tx.send(LinkMsg::Lost(lost)).await.is_err() {
            return;
        }
        tokio::time::sleep(PAUSES.pause(attempts)).await;
        attempts = attempts.saturating_add(1);
    }
}

/// The dashboard is gone.
struct Closed;

/// One connection: watch, list, forward until the stream ends; the reason
/// it ended.
async fn session(
    mut c: Client,
    tx: &mpsc::Sender<LinkMsg>,
    attempts: &mut u32,
) -> Result<String, Closed> {
    let mut events = match c.watch(pb::WatchRequest {}).await {
        Ok(r) => r.into_inner(),
        Err(s) => return Ok(s.message().to_string()),
    };
    let agents = match c
        .list_agents(pb::ListAgentsRequest {
            all: true,
            ..Default::default()
        })
        .await
    {
        Ok(r) => r.into_inner().agents,
        Err(s) => return Ok(s.message().to_string()),
    };
    tx.send(LinkMsg::Connected(c, agents))
        .await
        .map_err(|_| Closed)?;
    *attempts = 0;
    loop {
        match events.next().await {
            Some(Ok(e)) => tx
                .send(LinkMsg::Event(Box::new(e)))
                .await
                .map_err(|_| Closed)?,
            Some(Err(s)) => return Ok(s.message().to_string()),
            None => return Ok("the daemon closed the stream".into()),
        }
    }
}
