//! One agent's event hub: the seam between what is on disk and what is live.
//! The events themselves are `events`'; this is how they are delivered.
//!
//! Attach must deliver every transcript entry from a sequence number on with
//! no gap and no duplicate, plus the response still streaming. The turn loop
//! persists an entry first and publishes it second; subscribing takes the
//! same (short, never held across I/O) lock as publishing, so a subscriber
//! learns exactly which entries it must read from disk (`< next_seq`) and
//! receives every later one live.

use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::{broadcast, watch};

use super::events::{AgentEvent, Lifecycle, LifecycleKind, RetryNotice, StatusSnapshot, ToolEvent};
use super::permission::PermissionAsk;
use crate::domain::{AgentId, PlanItem, ReleaseReason, TranscriptEntry, now_ms};
pub use crate::model::ModelEvent;
use crate::model::StreamDelta;
use agentd_shared::sync::Unpoisoned as _;

/// Live events buffered per subscriber before it is considered lagging
/// (a lagging attacher re-reads entries from disk; deltas are coalesced).
/// Kept small: every agent with a hub pays for the whole ring.
const EVENT_BUFFER: usize = 256;

struct HubState {
    next_seq: u64,
    /// Deltas of the response in progress, replayed to new subscribers.
    partial: Vec<StreamDelta>,
    /// Set while the model call waits to be retried, so that a client
    /// attaching during a long backoff learns why nothing streams.
    retry: Option<RetryNotice>,
    /// The plan as last published (or as the record had it): a client
    /// caught up after falling behind learns a change it missed.
    plan: Arc<Vec<PlanItem>>,
}

pub struct Hub {
    agent: AgentId,
    short_id: crate::domain::ShortId,
    state: Mutex<HubState>,
    events: broadcast::Sender<AgentEvent>,
    status: watch::Sender<StatusSnapshot>,
    /// The daemon-wide stream of lifecycle events (`Watch`).
    lifecycle: broadcast::Sender<Lifecycle>,
}

/// What a new subscriber starts from.
pub struct Subscription {
    pub events: broadcast::Receiver<AgentEvent>,
    /// Entries below this are on disk and will not be published again.
    pub next_seq: u64,
    pub partial: Vec<StreamDelta>,
    pub retry: Option<RetryNotice>,
    pub status: StatusSnapshot,
    /// The plan now; later changes arrive as `AgentEvent::Plan`.
    pub plan: Arc<Vec<PlanItem>>,
}

impl Hub {
    pub fn new(
        agent: AgentId,
        short_id: crate::domain::ShortId,
        next_seq: u64,
        status: StatusSnapshot,
        plan: Vec<PlanItem>,
        lifecycle: broadcast::Sender<Lifecycle>,
    ) -> Hub {
        Hub {
            agent,
            short_id,
            lifecycle,
            state: Mutex::new(HubState {
                next_seq,
                partial: Vec::new(),
                retry: None,
                plan: Arc::new(plan),
            }),
            events: broadcast::channel(EVENT_BUFFER).0,
            status: watch::channel(status).0,
        }
    }

    fn lock(&self) -> MutexGuard<'_, HubState> {
        // A poisoned lock only means a publisher panicked mid-push; the state
        // (a counter and a buffer) is still usable.
        self.state.locked()
    }

    pub fn subscribe(&self) -> Subscription {
        let state = self.lock();
        Subscription {
            events: self.events.subscribe(),
            next_seq: state.next_seq,
            partial: state.partial.clone(),
            retry: state.retry.clone(),
            status: self.status.borrow().clone(),
            plan: state.plan.clone(),
        }
    }

    /// Publishes an entry that is already durable.
    pub fn publish_entry(&self, entry: Arc<TranscriptEntry>) {
        let mut state = self.lock();
        state.next_seq = entry.seq + 1;
        state.partial.clear();
        state.retry = None;
        let _ = self.events.send(AgentEvent::Entry(entry));
    }

    pub fn publish_delta(&self, delta: StreamDelta) {
        let mut state = self.lock();
        state.retry = None;
        state.partial.push(delta.clone());
        let _ = self.events.send(AgentEvent::Delta(delta));
    }

    /// Forgets the response in progress (it failed and will not be persisted).
    pub fn discard_partial(&self) {
        let mut state = self.lock();
        state.partial.clear();
        state.retry = None;
    }

    /// Publishes what a model call reports: deltas, or a retry that voids
    /// the partial response.
    pub fn publish_model_event(&self, event: ModelEvent) {
        match event {
            ModelEvent::Delta(d) => self.publish_delta(d),
            ModelEvent::Retrying {
                attempt,
                delay,
                reason,
            } => {
                let notice = RetryNotice {
                    attempt,
                    delay_ms: delay.as_millis() as u64,
                    reason,
                };
                let mut state = self.lock();
                state.partial.clear();
                state.retry = Some(notice.clone());
                let _ = self.events.send(AgentEvent::Retry(notice));
            }
        }
    }

    pub fn publish_tool(&self, event: ToolEvent) {
        let _state = self.lock();
        let _ = self.events.send(AgentEvent::Tool(event));
    }

    pub fn publish_status(&self, snapshot: StatusSnapshot) {
        let _state = self.lock();
        self.status.send_replace(snapshot.clone());
        let _ = self.lifecycle.send(Lifecycle {
            agent: self.agent,
            short_id: self.short_id.clone(),
            at_ms: now_ms(),
            kind: LifecycleKind::Status(snapshot.clone()),
        });
        let _ = self.events.send(AgentEvent::Status(snapshot));
    }

    /// Publishes a plan that is already durable, to attachers and to the
    /// daemon-wide stream (`Watch`).
    pub fn publish_plan(&self, plan: Vec<PlanItem>) {
        let plan = Arc::new(plan);
        let mut state = self.lock();
        state.plan = plan.clone();
        let _ = self.lifecycle.send(Lifecycle {
            agent: self.agent,
            short_id: self.short_id.clone(),
            at_ms: now_ms(),
            kind: LifecycleKind::Plan(plan.clone()),
        });
        let _ = self.events.send(AgentEvent::Plan(plan));
    }

    pub fn publish_permission(&self, ask: PermissionAsk, resolved: bool) {
        let _state = self.lock();
        let _ = self.events.send(AgentEvent::Permission { ask, resolved });
    }

    pub fn publish_connection(
        &self,
        record: Arc<crate::domain::ConnectionRecord>,
        asker: crate::domain::ShortId,
    ) {
        let _state = self.lock();
        let _ = self.events.send(AgentEvent::Connection { record, asker });
    }

    pub fn publish_released(&self, reason: ReleaseReason) {
        let _state = self.lock();
        let _ = self.events.send(AgentEvent::Released(reason));
    }

    pub fn status(&self) -> StatusSnapshot {
        self.status.borrow().clone()
    }

    pub fn watch_status(&self) -> watch::Receiver<StatusSnapshot> {
        self.status.subscribe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::Status;

    fn snapshot(status: Status) -> StatusSnapshot {
        StatusSnapshot {
            status,
            outcome: None,
            turns: 0,
            waiting_for: None,
        }
    }

    fn entry(seq: u64) -> Arc<TranscriptEntry> {
        Arc::new(TranscriptEntry {
            seq,
            role: crate::domain::Role::User,
            content_json: Vec::new(),
            created_at_ms: 0,
            usage: None,
            stop_reason: None,
            cache_point: None,
            compact: None,
            file_changes: Vec::new(),
            rule_decisions: Vec::new(),
        })
    }

    #[test]
    fn subscriber_sees_entries_after_its_snapshot_exactly_once() {
        let hub = Hub::new(
            AgentId::from_uuid(uuid::Uuid::nil()),
            crate::domain::ShortId::default(),
            0,
            snapshot(Status::Running),
            Vec::new(),
            broadcast::channel(4).0,
        );
        hub.publish_entry(entry(0));
        hub.publish_delta(StreamDelta::Text {
            index: 0,
            text: "par".into(),
        });
        let mut sub = hub.subscribe();
        assert_eq!(sub.next_seq, 1);
        assert_eq!(sub.partial.len(), 1);
        hub.publish_entry(entry(1));
        match sub.events.try_recv().unwrap() {
            AgentEvent::Entry(e) => assert_eq!(e.seq, 1),
            other => panic!("unexpected {other:?}"),
        }
        assert!(sub.events.try_recv().is_err());
        // The partial response was persisted as entry 1: new subscribers
        // must not see it twice.
        assert!(hub.subscribe().partial.is_empty());
    }

    #[test]
    fn a_plan_change_reaches_subscribers_and_new_ones_start_from_it() {
        let (lifecycle, mut watcher) = broadcast::channel(4);
        let item = |content: &str| PlanItem {
            content: content.into(),
            status: crate::domain::PlanStatus::Pending,
            active_form: format!("{content}ing"),
        };
        let hub = Hub::new(
            AgentId::from_uuid(uuid::Uuid::nil()),
            crate::domain::ShortId::default(),
            0,
            snapshot(Status::Running),
            vec![item("old")],
            lifecycle,
        );
        let mut sub = hub.subscribe();
        assert_eq!(*sub.plan, vec![item("old")], "the record's plan to start");
        hub.publish_plan(vec![item("new")]);
        match sub.events.try_recv().unwrap() {
            AgentEvent::Plan(p) => assert_eq!(*p, vec![item("new")]),
            other => panic!("unexpected {other:?}"),
        }
        match watcher.try_recv().unwrap().kind {
            LifecycleKind::Plan(p) => assert_eq!(*p, vec![item("new")]),
            other => panic!("unexpected {other:?}"),
        }
        assert_eq!(*hub.subscribe().plan, vec![item("new")]);
    }

    #[test]
    fn a_pending_retry_is_shown_to_new_subscribers_until_streaming_resumes() {
        let hub = Hub::new(
            AgentId::from_uuid(uuid::Uuid::nil()),
            crate::domain::ShortId::default(),
            0,
            snapshot(Status::Running),
            Vec::new(),
            broadcast::channel(4).0,
        );
        hub.publish_delta(StreamDelta::Text {
            index: 0,
            text: "void".into(),
        });
        hub.publish_model_event(ModelEvent::Retrying {
            attempt: 1,
            delay: std::time::Duration::from_secs(3),
            reason: "overloaded".into(),
        });
        let sub = hub.subscribe();
        assert!(sub.partial.is_empty(), "the failed attempt's text is void");
        assert_eq!(sub.retry.as_ref().map(|r| r.delay_ms), Some(3000));
        hub.publish_delta(StreamDelta::Text {
            index: 0,
            text: "fresh".into(),
        });
        let sub = hub.subscribe();
        assert!(sub.retry.is_none());
        assert_eq!(sub.partial.len(), 1);
    }
}
