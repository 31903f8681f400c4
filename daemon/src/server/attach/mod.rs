//! The attach stream: an agent's persisted transcript from a sequence
//! number, then its live events, with no gap and no duplicate at the seam
//! (see `agent::hub` for why subscribing first makes that hold).
//!
//! One step per function: `Outbound::history` replays what is on disk,
//! `Outbound::in_progress` sends the response still streaming,
//! `Outbound::live` relays events; what the client sends is handled on its
//! own task (`inbound`). Deltas for a client that lags are coalesced
//! (`coalesce`).

mod coalesce;

use std::sync::Arc;

use agentd_shared::proto as pb;
use futures::StreamExt;
use tokio::sync::{broadcast, mpsc};
use tokio_util::sync::CancellationToken;
use tonic::{Status, Streaming};

use super::convert;
use crate::agent::Release;
use crate::agent::events::AgentEvent;
use crate::agent::hub::Subscription;
use crate::domain::{AgentId, PlanItem};
use crate::error::AgentdError;
use crate::supervisor::{AgentHandle, Supervisor};
use coalesce::{coalesce, gather};

/// Entries read from disk per batch while replaying history.
const REPLAY_BATCH: usize = 256;
type Events = mpsc::Sender<Result<pb::AttachEvent, Status>>;

fn event(e: pb::attach_event::Event) -> Result<pb::AttachEvent, Status> {
    Ok(pb::AttachEvent { event: Some(e) })
}

fn notice(text: impl Into<String>, is_error: bool) -> Result<pb::AttachEvent, Status> {
    event(pb::attach_event::Event::Notice(pb::Notice {
        text: text.into(),
        is_error,
    }))
}

/// How long an attach stream may stay open before its `start` arrives.
const START_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// The client went away: stop quietly.
struct Gone;

/// Reads the first request (which must be `start`) and returns it.
pub async fn read_start(
    inbound: &mut Streaming<pb::AttachRequest>,
) -> Result<pb::AttachStart, Status> {
    // A stream that never says which agent holds a task and a connection
    // for nothing: it gets a while, then a clear error.
    let first = tokio::time::timeout(START_TIMEOUT, inbound.message())
        .await
        .map_err(|_| {
            Status::invalid_argument(format!(
                "no `start` within {}s of opening the attach stream",
                START_TIMEOUT.as_secs()
            ))
        })?;
    match first? {
        Some(pb::AttachRequest {
            request: Some(pb::attach_request::Request::Start(start)),
        }) => Ok(start),
        Some(_) => Err(Status::invalid_argument(
            "the first message of an attach stream must be `start`",
        )),
        None => Err(Status::invalid_argument(
            "the attach stream closed before `start`",
        )),
    }
}

/// Serves one attachment until the client detaches or goes away, or the
/// daemon stops; or, once the client has closed its side, until the agent
/// is between turns.
pub async fn serve(
    sup: Arc<Supervisor>,
    agent: AgentId,
    from: StartAt,
    inbound: Streaming<pb::AttachRequest>,
    out: Events,
) {
    let done = CancellationToken::new();
    let input_closed = CancellationToken::new();
    tokio::spawn(handle_inbound(
        sup.clone(),
        agent,
        inbound,
        out.clone(),
        Ends {
            done: done.clone(),
            input_closed: input_closed.clone(),
        },
    ));
    let result = tokio::select! {
        r = outbound(sup.clone(), agent, from, out.clone(), input_closed) => r,
        _ = done.cancelled() => Ok(()),
    };
    done.cancel();
    if let Err(e) = result {
        let _ = out.send(Err(Status::from(e))).await;
    }
}

/// How the client's side ends the attachment.
struct Ends {
    /// Now: `detach`, a broken stream, a second `start`.
    done: CancellationToken,
    /// Once the agent is between turns: the client closed its side (a
    /// half-close means "no more input", as `grpcurl -d` and a request
    /// iterator that runs out send it, not "detach").
    input_closed: CancellationToken,
}

/// What the client sends, answered on the stream: messages, background
/// requests, permission answers; `detach` ends the attachment, a second
/// `start` is an error that ends it too; closing its side ends what it
/// sends, and the stream once the agent is between turns.
async fn handle_inbound(
    sup: Arc<Supervisor>,
    agent: AgentId,
    mut inbound: Streaming<pb::AttachRequest>,
    out: Events,
    ends: Ends,
) {
    use pb::attach_request::Request;
    let done = ends.done;
    loop {
        let req = tokio::select! {
            r = inbound.next() => r,
            _ = done.cancelled() => return,
        };
        let reply = match req {
            None => {
                ends.input_closed.cancel();
                return;
            }
            Some(Err(_))
            | Some(Ok(pb::AttachRequest {
                request: Some(Request::Detach(_)),
            })) => {
                done.cancel();
                return;
            }
            Some(Ok(pb::AttachRequest {
                request: Some(Request::Start(_)),
            })) => {
                let _ = out
                    .send(Err(Status::invalid_argument(
                        "`start` may only be the first message of an attach stream",
                    )))
                    .await;
                done.cancel();
                return;
            }
            Some(Ok(pb::AttachRequest {
                request: Some(Request::Background(_)),
            })) => {
                match sup.background(&agent.to_string()).await {
                    // The Released event is the answer.
                    Ok((_, Release::Released)) => None,
                    Ok((record, _)) => Some(notice(
                        format!("agent {} is already in the background", record.short_id),
                        false,
                    )),
                    Err(e) => Some(notice(e.to_string(), true)),
                }
            }
            Some(Ok(pb::AttachRequest {
                request: Some(Request::Message(text)),
            })) => match sup.send(&agent.to_string(), &text, None).await {
                Ok((_, true)) => Some(notice(
                    "message delivered; the agent was woken for it",
                    false,
                )),
                Ok((_, false)) => Some(notice("message queued for the next turn boundary", false)),
                Err(e) => Some(notice(e.to_string(), true)),
            },
            Some(Ok(pb::AttachRequest {
                request: Some(Request::PermissionAnswer(a)),
            })) => {
                let answered = match convert::answer_from_wire(&a) {
                    Ok(answer) => sup.answer(agent, &a.request_id, answer, a.remember).await,
                    Err(e) => Err(e),
                };
                match answered {
                    Ok(()) => None,
                    Err(e) => Some(notice(e.to_string(), true)),
                }
            }
            Some(Ok(pb::AttachRequest { request: None })) => Some(notice(
                "an attach request with nothing in it was ignored",
                true,
            )),
        };
        if let Some(reply) = reply
            && out.send(reply).await.is_err()
        {
            done.cancel();
            return;
        }
    }
}

/// Everything sent to the client after the agent itself.
async fn outbound(
    sup: Arc<Supervisor>,
    agent: AgentId,
    from: StartAt,
    out: Events,
    input_closed: CancellationToken,
) -> Result<(), AgentdError> {
    let record = sup
        .store()
        .get_agent(agent)?
        .ok_or_else(|| AgentdError::NotFound(format!("agent {agent} was removed")))?;
    let handle = sup.handle(&record)?;
    let len = record.transcript_len;
    let from_seq = from.from_seq;
    let seen = if from.as_seen {
        let entries = sup.store().transcript(agent, 0, usize::MAX)?;
        Some(crate::domain::turns::visible(&entries))
    } else {
        None
    };
    let mut o = Outbound {
        seen,
        sup: sup.clone(),
        agent,
        out,
        cursor: from_seq,
        sent_deltas: 0,
        sent_plan: Arc::new(record.plan.clone()),
        input_closed,
        sent_live: record.status.is_live(),
    };
    let agent_event =
        pb::attach_event::Event::Agent(convert::agent(&record, sup.waiting_for(agent)));
    if o.send(agent_event).await.is_err() {
        return Ok(());
    }
    if from_seq > len {
        // Said, not silently waited on: a client with a stale position
        // learns where the transcript really ends.
        let text = format!(
            "from_seq {from_seq} is past the end of the transcript ({len} entries so far); entries from {from_seq} on will follow as they are written"
        );
        if o.out.send(notice(text, false)).await.is_err() {
            return Ok(());
        }
    }
    match o.run(&handle).await {
        Ok(()) | Err(Step::Gone(Gone)) => Ok(()),
        Err(Step::Failed(e)) => Err(e),
    }
}

enum Step {
    Gone(Gone),
    Failed(AgentdError),
}

impl From<Gone> for Step {
    fn from(g: Gone) -> Step {
        Step::Gone(g)
    }
}

impl From<AgentdError> for Step {
    fn from(e: AgentdError) -> Step {
        Step::Failed(e)
    }
}

impl From<crate::store::StoreError> for Step {
    fn from(e: crate::store::StoreError) -> Step {
        Step::Failed(e.into())
    }
}

/// Where an attachment starts.
pub struct StartAt {
    pub from_seq: u64,
    /// The history without what a rewind took out (`AttachStart.as_seen`).
    pub as_seen: bool,
}

struct Outbound {
    /// With `as_seen`: the entries the agent sees (ascending); the history
    /// skips the rest.
    seen: Option<Vec<u64>>,
    sup: Arc<Supervisor>,
    agent: AgentId,
    out: Events,
    /// The next entry this client needs.
    cursor: u64,
    /// Deltas of the response in progress this client already has: a
    /// client that lags is resubscribed and sent only the rest, so deltas
    /// too arrive exactly once.
    sent_deltas: usize,
    /// The plan this client has (first in the `agent` event).
    sent_plan: Arc<Vec<PlanItem>>,
    /// The client closed its side: the stream ends once the agent is
    /// between turns.
    input_closed: CancellationToken,
    /// The last status this client was sent is a live one.
    sent_live: bool,
}

impl Outbound {
    async fn send(&self, e: pb::attach_event::Event) -> Result<(), Gone> {
        self.out.send(event(e)).await.map_err(|_| Gone)
    }

    /// Subscribes, catches up from disk and sends the live state; after a
    /// lag, subscribes again and catches up again.
    async fn run(&mut self, handle: &AgentHandle) -> Result<(), Step> {
        let mut first = true;
        loop {
            let sub = handle.hub.subscribe();
            self.history(&sub).await?;
            self.in_progress(&sub, first).await?;
            self.plan(&sub).await?;
            if first {
                // Open permission asks of this agent and its descendants.
                for ask in self.sup.open_asks_for(self.agent) {
                    self.send(pb::attach_event::Event::PermissionRequest(
                        convert::permission(&ask, false),
                    ))
                    .await?;
                }
            }
            first = false;
            self.sent_live = sub.status.status.is_live();
            self.send(pb::attach_event::Event::Status(convert::status_change(
                &sub.status,
            )))
            .await?;
            if !self.live(sub.events).await? {
                return Ok(());
            }
        }
    }

    /// Everything persisted before the subscription, from the cursor.
    async fn history(&mut self, sub: &Subscription) -> Result<(), Step> {
        while self.cursor < sub.next_seq {
            let batch = self
                .sup
                .store()
                .transcript(self.agent, self.cursor, REPLAY_BATCH)?;
            if batch.is_empty() {
                break;
            }
            for e in batch.iter().take_while(|e| e.seq < sub.next_seq) {
                self.cursor = e.seq + 1;
                // The response the client was following is persisted.
                self.sent_deltas = 0;
                if self
                    .seen
                    .as_ref()
                    .is_some_and(|v| v.binary_search(&e.seq).is_err())
                {
                    continue;
                }
                self.send(pb::attach_event::Event::Entry(convert::entry(e)))
                    .await?;
            }
        }
        self.cursor = self.cursor.max(sub.next_seq);
        Ok(())
    }

    /// The part of the response in progress this client lacks (and a
    /// pending retry, if the model call waits to be retried).
    async fn in_progress(&mut self, sub: &Subscription, first: bool) -> Result<(), Gone> {
        if sub.partial.len() < self.sent_deltas {
            // The response restarted (a retry) while this client lagged.
            self.sent_deltas = 0;
        }
        if (first || self.sent_deltas == 0)
            && let Some(r) = &sub.retry
        {
            self.send(pb::attach_event::Event::Retry(convert::retry(r)))
                .await?;
        }
        let missing = sub.partial.get(self.sent_deltas..).unwrap_or_default();
        let mut pending = missing.iter().cloned();
        if let Some(mut d) = pending.next() {
            for next in pending {
                if let Err(next) = coalesce(&mut d, next) {
                    self.send(pb::attach_event::Event::Delta(convert::delta(&d)))
                        .await?;
                    d = next;
                }
            }
            self.send(pb::attach_event::Event::Delta(convert::delta(&d)))
                .await?;
        }
        self.sent_deltas = sub.partial.len();
        Ok(())
    }

    /// The plan as of the subscription, if it is not the one this client
    /// has: it changed after the agent was read, or while the client lagged.
    async fn plan(&mut self, sub: &Subscription) -> Result<(), Gone> {
        if sub.plan == self.sent_plan {
            return Ok(());
        }
        self.sent_plan = sub.plan.clone();
        self.send(pb::attach_event::Event::Plan(convert::plan_update(
            &sub.plan,
        )))
        .await
    }

    /// Relays live events. Ok(true): the client lagged and must be caught
    /// up again; Ok(false): the stream is over (the agent is between turns
    /// and the client has closed its side).
    async fn live(&mut self, mut events: broadcast::Receiver<AgentEvent>) -> Result<bool, Step> {
        let shutdown = self.sup.shutdown_token();
        let mut held: Option<Result<AgentEvent, broadcast::error::RecvError>> = None;
        // Once the client has closed its side: how many events published
        // before it are still to be taken. A message it sent just before
        // revived the agent: the turn that starts is followed to its end.
        let mut before_close: Option<usize> = None;
        loop {
            if before_close.is_none() && self.input_closed.is_cancelled() {
                before_close = Some(events.len());
            }
            if before_close == Some(0) && held.is_none() && !self.sent_live {
                return Ok(false);
            }
            // Room in the client's queue first: while a slow client drains
            // it, deltas gather and are then sent coalesced.
            let permit = tokio::select! {
                p = self.out.reserve() => p.map_err(|_| Gone)?,
                _ = shutdown.cancelled() => {
                    return Err(Step::Failed(AgentdError::ShuttingDown("agentd is shutting down".into())));
                }
            };
            let next = match held.take() {
                Some(e) => e,
                None => tokio::select! {
                    e = events.recv() => {
                        taken(&mut before_close, 1);
                        e
                    }
                    _ = shutdown.cancelled() => {
                        return Err(Step::Failed(AgentdError::ShuttingDown("agentd is shutting down".into())));
                    }
                    _ = self.input_closed.cancelled(), if before_close.is_none() => continue,
                },
            };
            let ev = match next {
                Ok(AgentEvent::Entry(e)) => {
                    self.sent_deltas = 0;
                    if e.seq < self.cursor {
                        continue;
                    }
                    self.cursor = e.seq + 1;
                    pb::attach_event::Event::Entry(convert::entry(&e))
                }
                Ok(AgentEvent::Delta(d)) => {
                    let mut took = 0;
                    let (d, rest) = gather(d, &mut events, &mut self.sent_deltas, &mut took);
                    taken(&mut before_close, took);
                    held = rest;
                    pb::attach_event::Event::Delta(convert::delta(&d))
                }
                Ok(AgentEvent::Tool(t)) => pb::attach_event::Event::Tool(convert::tool(&t)),
                Ok(AgentEvent::Status(s)) => {
                    self.sent_live = s.status.is_live();
                    pb::attach_event::Event::Status(convert::status_change(&s))
                }
                Ok(AgentEvent::Retry(r)) => {
                    self.sent_deltas = 0;
                    pb::attach_event::Event::Retry(convert::retry(&r))
                }
                Ok(AgentEvent::Permission { ask, resolved }) => {
                    pb::attach_event::Event::PermissionRequest(convert::permission(&ask, resolved))
                }
                Ok(AgentEvent::Connection { record, asker }) => {
                    pb::attach_event::Event::Connection(convert::network::connection(
                        &record,
                        asker.as_str(),
                        record.ended_at_ms.is_none(),
                    ))
                }
                Ok(AgentEvent::Plan(plan)) => {
                    self.sent_plan = plan.clone();
                    pb::attach_event::Event::Plan(convert::plan_update(&plan))
                }
                Ok(AgentEvent::Released(reason)) => {
                    pb::attach_event::Event::Released(pb::Released {
                        reason: convert::release_reason(reason) as i32,
                    })
                }
                Err(broadcast::error::RecvError::Lagged(n)) => {
                    tracing::debug!(agent = %self.agent, skipped = n, "attach client lagged; resubscribing");
                    return Ok(true);
                }
                Err(broadcast::error::RecvError::Closed) => return Ok(false),
            };
            permit.send(event(ev));
        }
    }
}

/// Counts `n` events taken off the channel against those still to take
/// after the client closed its side.
fn taken(before_close: &mut Option<usize>, n: usize) {
    if let Some(left) = before_close {
        *left = left.saturating_sub(n);
    }
}
