//! The attach stream: an agent's persisted transcript from a sequence
//! number, then its live events, with no gap and no duplicate at the seam
//! (see `supervisor::hub` for why subscribing first makes that hold).

use std::sync::Arc;

use agentd_shared::proto as pb;
use futures::StreamExt;
use tokio::sync::{broadcast, mpsc};
use tonic::{Status, Streaming};

use super::convert;
use crate::error::AgentdError;
use crate::model::StreamDelta;
use crate::supervisor::Supervisor;
use crate::supervisor::hub::AgentEvent;

/// Entries read from disk per batch while replaying history.
const REPLAY_BATCH: usize = 256;
/// Largest text sent as one coalesced delta.
const MAX_COALESCED: usize = 16 * 1024;

fn delta_len(d: &StreamDelta) -> usize {
    match d {
        StreamDelta::Text { text: s, .. }
        | StreamDelta::Thinking { thinking: s, .. }
        | StreamDelta::InputJson { json: s, .. } => s.len(),
        StreamDelta::ToolUseStart { .. } => usize::MAX,
    }
}

/// Appends `next` to `d` when both continue the same block the same way;
/// otherwise gives `next` back.
fn coalesce(d: &mut StreamDelta, next: StreamDelta) -> Result<(), StreamDelta> {
    match (d, next) {
        (
            StreamDelta::Text { index, text },
            StreamDelta::Text {
                index: i,
                text: more,
            },
        )
        | (
            StreamDelta::Thinking {
                index,
                thinking: text,
            },
            StreamDelta::Thinking {
                index: i,
                thinking: more,
            },
        )
        | (
            StreamDelta::InputJson { index, json: text },
            StreamDelta::InputJson {
                index: i,
                json: more,
            },
        ) if *index == i => {
            text.push_str(&more);
            Ok(())
        }
        (_, next) => Err(next),
    }
}

type Events = mpsc::Sender<Result<pb::AttachEvent, Status>>;

fn event(e: pb::attach_event::Event) -> Result<pb::AttachEvent, Status> {
    Ok(pb::AttachEvent { event: Some(e) })
}

/// Reads the first request (which must be `start`) and returns the agent and
/// starting sequence number.
pub async fn read_start(
    inbound: &mut Streaming<pb::AttachRequest>,
) -> Result<(String, u64), Status> {
    match inbound.message().await? {
        Some(pb::AttachRequest {
            request: Some(pb::attach_request::Request::Start(start)),
        }) => Ok((start.id, start.from_seq)),
        Some(_) => Err(Status::invalid_argument(
            "the first message of an attach stream must be `start`",
        )),
        None => Err(Status::invalid_argument(
            "the attach stream closed before `start`",
        )),
    }
}

/// Serves one attachment until the client goes away or the daemon stops.
pub async fn serve(
    sup: Arc<Supervisor>,
    id: String,
    from_seq: u64,
    mut inbound: Streaming<pb::AttachRequest>,
    out: Events,
) {
    let result = async {
        let record = sup.resolve(&id)?;
        let handle = sup.handle(&record)?;
        let agent_id = record.uuid();
        let len = sup.store().transcript_len(agent_id)?;
        if out
            .send(event(pb::attach_event::Event::Agent(convert::agent(&record, len))))
            .await
            .is_err()
        {
            return Ok(());
        }
        let shutdown = sup.shutdown_token();
        let mut cursor = from_seq;
        let mut first = true;
        // Deltas of the response in progress this client already has: a
        // client that lags is resubscribed and sent only the rest, so deltas
        // too arrive exactly once.
        let mut sent_deltas = 0usize;
        'resubscribe: loop {
            let sub = handle.hub.subscribe();
            let mut events = sub.events;
            // History: everything persisted before the subscription.
            while cursor < sub.next_seq {
                let batch = sup
                    .store()
                    .transcript(agent_id, cursor, REPLAY_BATCH)?;
                if batch.is_empty() {
                    break;
                }
                for e in batch.iter().take_while(|e| e.seq < sub.next_seq) {
                    cursor = e.seq + 1;
                    // The response the client was following is persisted.
                    sent_deltas = 0;
                    if out
                        .send(event(pb::attach_event::Event::Entry(convert::entry(e))))
                        .await
                        .is_err()
                    {
                        return Ok(());
                    }
                }
            }
            cursor = cursor.max(sub.next_seq);
            // The response in progress (the part this client lacks), then
            // the current status.
            if sub.partial.len() < sent_deltas {
                // The response restarted (a retry) while this client lagged.
                sent_deltas = 0;
            }
            if (first || sent_deltas == 0)
                && let Some(r) = &sub.retry
                && out
                    .send(event(pb::attach_event::Event::Retry(convert::retry(r))))
                    .await
                    .is_err()
            {
                return Ok(());
            }
            let first_subscription = first;
            first = false;
            let missing = sub.partial.get(sent_deltas..).unwrap_or_default();
            let mut pending = missing.iter().cloned();
            if let Some(mut d) = pending.next() {
                for next in pending {
                    if let Err(next) = coalesce(&mut d, next) {
                        let e = pb::attach_event::Event::Delta(convert::delta(&d));
                        if out.send(event(e)).await.is_err() {
                            return Ok(());
                        }
                        d = next;
                    }
                }
                if out.send(event(pb::attach_event::Event::Delta(convert::delta(&d)))).await.is_err() {
                    return Ok(());
                }
            }
            sent_deltas = sub.partial.len();
            // Open permission asks of this agent and its descendants.
            if first_subscription {
                for ask in sup.open_asks_for(agent_id) {
                    let e = pb::attach_event::Event::PermissionRequest(convert::permission(&ask, false));
                    if out.send(event(e)).await.is_err() {
                        return Ok(());
                    }
                }
            }
            if out
                .send(event(pb::attach_event::Event::Status(convert::status_change(&sub.status))))
                .await
                .is_err()
            {
                return Ok(());
            }
            let mut held: Option<Result<AgentEvent, broadcast::error::RecvError>> = None;
            loop {
                // Room in the client's queue first: while a slow client
                // drains it, deltas gather and are then sent coalesced.
                let permit = tokio::select! {
                    p = out.reserve() => match p {
                        Ok(p) => p,
                        Err(_) => return Ok(()),
                    },
                    _ = shutdown.cancelled() => {
                        return Err(AgentdError::Unavailable("agentd is shutting down".into()));
                    }
                };
                let next = if let Some(e) = held.take() { e } else { tokio::select! {
                    e = events.recv() => e,
                    req = inbound.next() => {
                        use pb::attach_request::Request;
                        let notice = match req {
                            // The client half-closed or detached: stop.
                            None | Some(Err(_)) => return Ok(()),
                            Some(Ok(pb::AttachRequest { request: Some(Request::Detach(true)) })) => return Ok(()),
                            Some(Ok(pb::AttachRequest { request: Some(Request::Background(true)) })) => {
                                match sup.background(&agent_id.to_string()).await {
                                    Ok(_) => None,
                                    Err(e) => Some((e.to_string(), true)),
                                }
                            }
                            Some(Ok(pb::AttachRequest { request: Some(Request::Message(text)) })) => {
                                match sup.send(&agent_id.to_string(), &text, None).await {
                                    Ok((_, true)) => Some(("message delivered; the agent was woken for it".to_string(), false)),
                                    Ok((_, false)) => Some(("message queued for the next turn boundary".to_string(), false)),
                                    Err(e) => Some((e.to_string(), true)),
                                }
                            }
                            Some(Ok(pb::AttachRequest { request: Some(Request::PermissionAnswer(a)) })) => {
                                use pb::permission_answer::Decision;
                                use crate::supervisor::permissions::Answer;
                                let answer = match Decision::try_from(a.decision).unwrap_or_default() {
                                    Decision::AllowOnce => Some(Answer::AllowOnce),
                                    Decision::AllowAlways => Some(Answer::AllowAlways),
                                    Decision::Deny => Some(Answer::Deny(a.reason.clone())),
                                    Decision::Unspecified => None,
                                };
                                match answer {
                                    None => Some(("a permission answer needs a decision".to_string(), true)),
                                    Some(answer) => match sup.answer(agent_id, &a.request_id, answer) {
                                        Ok(()) => None,
                                        Err(e) => Some((e.to_string(), true)),
                                    },
                                }
                            }
                            Some(Ok(_)) => Some(("unexpected attach request".to_string(), true)),
                        };
                        if let Some((text, is_error)) = notice {
                            let n = pb::attach_event::Event::Notice(pb::Notice { text, is_error });
                            if out.send(event(n)).await.is_err() {
                                return Ok(());
                            }
                        }
                        continue;
                    }
                    _ = shutdown.cancelled() => {
                        return Err(AgentdError::Unavailable("agentd is shutting down".into()));
                    }
                }};
                let ev = match next {
                    Ok(AgentEvent::Entry(e)) => {
                        sent_deltas = 0;
                        if e.seq < cursor {
                            continue;
                        }
                        cursor = e.seq + 1;
                        pb::attach_event::Event::Entry(convert::entry(&e))
                    }
                    Ok(AgentEvent::Delta(mut d)) => {
                        sent_deltas += 1;
                        // Deltas already waiting are sent as one: a slow
                        // client gets the same text in fewer messages.
                        while delta_len(&d) < MAX_COALESCED {
                            match events.try_recv() {
                                Ok(AgentEvent::Delta(next)) => {
                                    sent_deltas += 1;
                                    if let Err(next) = coalesce(&mut d, next) {
                                        sent_deltas -= 1;
                                        held = Some(Ok(AgentEvent::Delta(next)));
                                        break;
                                    }
                                }
                                Err(broadcast::error::TryRecvError::Empty) => break,
                                Err(broadcast::error::TryRecvError::Lagged(n)) => {
                                    held = Some(Err(broadcast::error::RecvError::Lagged(n)));
                                    break;
                                }
                                Err(broadcast::error::TryRecvError::Closed) => {
                                    held = Some(Err(broadcast::error::RecvError::Closed));
                                    break;
                                }
                                Ok(other) => {
                                    held = Some(Ok(other));
                                    break;
                                }
                            }
                        }
                        pb::attach_event::Event::Delta(convert::delta(&d))
                    }
                    Ok(AgentEvent::Tool(t)) => pb::attach_event::Event::Tool(convert::tool(&t)),
                    Ok(AgentEvent::Status(s)) => {
                        pb::attach_event::Event::Status(convert::status_change(&s))
                    }
                    Ok(AgentEvent::Retry(r)) => {
                        sent_deltas = 0;
                        pb::attach_event::Event::Retry(convert::retry(&r))
                    }
                    Ok(AgentEvent::Permission { ask, resolved }) => {
                        pb::attach_event::Event::PermissionRequest(convert::permission(&ask, resolved))
                    }
                    Ok(AgentEvent::Released(reason)) => {
                        pb::attach_event::Event::Released(pb::Released { reason })
                    }
                    Err(broadcast::error::RecvError::Lagged(n)) => {
                        tracing::debug!(agent = %agent_id, skipped = n, "attach client lagged; resubscribing");
                        continue 'resubscribe;
                    }
                    Err(broadcast::error::RecvError::Closed) => return Ok(()),
                };
                permit.send(event(ev));
            }
        }
    }
    .await;
    if let Err(e) = result {
        let _ = out.send(Err(Status::from(e))).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_deltas_continuing_the_same_block_coalesce() {
        let text = |index, t: &str| StreamDelta::Text {
            index,
            text: t.into(),
        };
        let mut d = text(0, "Hel");
        assert!(coalesce(&mut d, text(0, "lo")).is_ok());
        assert_eq!(d, text(0, "Hello"));
        assert_eq!(coalesce(&mut d, text(1, "x")), Err(text(1, "x")));
        let json = StreamDelta::InputJson {
            index: 0,
            json: "{".into(),
        };
        assert_eq!(coalesce(&mut d, json.clone()), Err(json));
        let start = StreamDelta::ToolUseStart {
            index: 2,
            name: "Bash".into(),
        };
        let mut s = start.clone();
        assert!(coalesce(&mut s, start.clone()).is_err());
        assert_eq!(
            delta_len(&start),
            usize::MAX,
            "a tool start is never merged into"
        );
    }
}
