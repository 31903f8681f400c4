//! Concurrent `CompactAgent` calls on one agent share one compaction: the
//! first call leads (hands the request to the agent's run and waits for
//! its boundary); every call that comes while it waits, asking the same
//! (the same instructions, or none), is answered with the leader's result.
//! A call with other instructions waits for the leader, then asks for its
//! own. A leader that goes away unanswered (its client left) lets the next
//! waiting call lead.

use std::sync::Mutex;

use tokio::sync::watch;

use crate::domain::CompactBoundary;
use agentd_shared::sync::Unpoisoned as _;

/// What a compaction came to, as every call that shared it is told.
pub(super) type Shared = Result<CompactBoundary, String>;

/// The compaction one agent's calls share, if one is under way. Owned by
/// the agent's handle.
#[derive(Default)]
pub(super) struct CompactOnce {
    current: Mutex<Option<InFlight>>,
}

struct InFlight {
    instructions: Option<String>,
    done: watch::Receiver<Option<Shared>>,
}

/// What a call is to do.
pub(super) enum Turn<'a> {
    /// Make the compaction and tell the others through [`Leader::finish`].
    Lead(Leader<'a>),
    /// Wait for the one under way.
    Join {
        done: watch::Receiver<Option<Shared>>,
        same: bool,
    },
}

/// The call that makes the compaction. Dropped without [`Leader::finish`]
/// (its client went away), it clears the slot: a waiting call leads next.
pub(super) struct Leader<'a> {
    once: &'a CompactOnce,
    done: Option<watch::Sender<Option<Shared>>>,
}

impl CompactOnce {
    /// Leads a new compaction or joins the one under way.
    pub(super) fn turn(&self, instructions: &Option<String>) -> Turn<'_> {
        let mut current = self.lock();
        if let Some(flight) = current.as_ref()
            && flight.done.has_changed().is_ok()
            && flight.done.borrow().is_none()
        {
            return Turn::Join {
                done: flight.done.clone(),
                same: flight.instructions == *instructions,
            };
        }
        let (send, done) = watch::channel(None);
        *current = Some(InFlight {
            instructions: instructions.clone(),
            done,
        });
        Turn::Lead(Leader {
            once: self,
            done: Some(send),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<InFlight>> {
        self.current.locked()
    }
}

impl Leader<'_> {
    /// Tells every call that joined how it went.
    pub(super) fn finish(mut self, result: Shared) {
        if let Some(send) = self.done.take() {
            self.clear(&send);
            let _ = send.send(Some(result));
        }
    }

    fn clear(&self, send: &watch::Sender<Option<Shared>>) {
        let mut current = self.once.lock();
        if current
            .as_ref()
            .is_some_and(|flight| flight.done.same_channel(&send.subscribe()))
        {
            *current = None;
        }
    }
}

impl Drop for Leader<'_> {
    fn drop(&mut self) {
        if let Some(send) = self.done.take() {
            self.clear(&send);
        }
    }
}

/// Waits for the compaction a call joined: None when its leader went away
/// unanswered.
pub(super) async fn wait(mut done: watch::Receiver<Option<Shared>>) -> Option<Shared> {
    let seen = done.wait_for(Option::is_some).await.ok()?;
    seen.clone()
}
