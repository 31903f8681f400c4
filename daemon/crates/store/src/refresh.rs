//! Reopening the database: after a full disk (the healer), and when the
//! daemon is idle, to give back what sled cached.
//!
//! sled 0.34 keeps in memory the pages of every tree node it has read or
//! written since it was opened; its `cache_capacity` did not bound that in
//! measurement (8 MiB, 32 MiB and 100 KB left the same resident size, as did
//! a smaller access batch in its LRU). A daemon that had run 20,000 short
//! agents held 3.15 times the memory of a fresh daemon on the same store,
//! nearly all of it sled's pages of the finished agents' transcripts. So
//! when nothing runs and nobody holds an agent, and the store has taken many
//! writes since it was opened, housekeeping reopens it: the old database is
//! flushed and closed (its pages freed, then trimmed, `memory`), and a new
//! one is opened from disk, as a restart would, without one.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::health::{State, lock};
use super::{Store, StoreError, Trees};

/// Writes since the database was opened before an idle reopen is worth
/// its cost (reading sled's snapshot again: tens of milliseconds for
/// tens of thousands of agents). A short agent makes a handful.
pub(super) const WRITES_BEFORE_REFRESH: u64 = 2_000;

/// How long an idle reopen waits for operations in flight to finish
/// before it gives up until the next time (an operation holds its handle
/// for microseconds to milliseconds; an idle daemon has none).
const IDLE_PATIENCE: Duration = Duration::from_millis(200);

/// Takes the trees out, waits up to `patience` for every handle on them
/// to be dropped, hands them to `closing` (which may flush them) and
/// opens the database again; `before_put` runs once the new trees are
/// open and before anyone can use them. Err(Reopening) if a handle was
/// held too long (the old trees are back in place then).
pub(super) fn reopen(
    store: &Store,
    patience: Duration,
    closing: impl FnOnce(&Trees),
    before_put: impl FnOnce(),
) -> Result<(), StoreError> {
    let slot = &store.inner.trees;
    // None: an earlier reopen closed them and could not open them again.
    if let Some(taken) = slot.take() {
        let Some(old) = slot.close(taken, patience) else {
            return Err(StoreError::Reopening);
        };
        closing(&old);
        drop(old);
    }
    store.inner.writes_since_open.store(0, Ordering::Relaxed);
    // sled's file lock can outlive the last handle by a moment.
    let mut attempt = 0;
    loop {
        match Trees::open(&store.inner.path) {
            Ok(trees) => {
                before_put();
                slot.put(trees);
                return Ok(());
            }
            Err(e) if attempt < 100 => {
                attempt += 1;
                tracing::debug!(error = %e, "reopening the store");
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => return Err(e),
        }
    }
}

impl Store {
    /// Counts a write for [`refresh_if_worth_it`](Self::refresh_if_worth_it).
    pub(super) fn count_write(&self) {
        self.inner.writes_since_open.fetch_add(1, Ordering::Relaxed);
    }

    /// Reopens the database if it took [`WRITES_BEFORE_REFRESH`] writes
    /// since it was opened and the store is healthy. The caller knows the
    /// daemon is idle (no agent runs or is held); an operation that comes
    /// meanwhile waits for the new trees (reads wait up to two seconds).
    /// Blocks: call it from a blocking thread. True if it reopened.
    pub fn refresh_if_worth_it(&self) -> bool {
        if self.inner.writes_since_open.load(Ordering::Relaxed) < WRITES_BEFORE_REFRESH {
            return false;
        }
        self.refresh()
    }

    /// Reopens the healthy database to drop sled's cache. False (and
    /// nothing changed) if the disk is full, something waits to be
    /// written, or an operation held the trees past the patience.
    pub(crate) fn refresh(&self) -> bool {
        {
            let control = lock(&self.inner.health.control);
            if control.state != State::Healthy || !control.deferred.is_empty() {
                return false;
            }
        }
        let started = Instant::now();
        let mut flushed = true;
        let reopened = reopen(
            self,
            IDLE_PATIENCE,
            |old| {
                // Every write a client saw was flushed by its writer; this
                // flushes the rest (records written without waiting).
                if let Err(e) = old.db.flush() {
                    tracing::warn!(error = %e, "flushing the store before reopening it failed");
                    flushed = false;
                }
            },
            || {},
        );
        match reopened {
            Ok(()) => {
                if !flushed || !self.inner.unconfirmed.is_empty() {
                    // What sled held and could not write is gone with the
                    // old trees: so are the index's copies of it.
                    self.inner.unconfirmed.clear();
                }
                // The record index goes too, as a restart would leave it:
                // the next listing loads it again from the new trees (what
                // a fresh daemon's first listing costs). Kept, it was a
                // tenth of an idle daemon's memory at 20,000 agents.
                self.index_dropped();
                crate::memory::note_freed();
                tracing::info!(
                    took_ms = started.elapsed().as_millis() as u64,
                    "reopened the idle store to give back sled's cache"
                );
                true
            }
            Err(StoreError::Reopening) => false,
            Err(e) => {
                // The old trees are closed and new ones would not open:
                // the healer tries again until it can, and writes are
                // refused meanwhile rather than lost.
                tracing::error!(error = %e, "cannot reopen the store after closing it");
                let _ = self.inner.health.poisoned(self);
                false
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{AgentId, AgentRecord, Status, now_ms};
    use crate::{Append, StoreOptions, reopen_for_tests, test_entry};

    fn record(status: Status) -> AgentRecord {
        let id = AgentId::random();
        let mut r = AgentRecord::new(id, id.short_prefix(8), now_ms());
        r.status = status;
        r
    }

    #[tokio::test]
    async fn an_idle_reopen_comes_after_enough_writes_and_keeps_every_one() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), StoreOptions::default()).unwrap();
        let durable = record(Status::Completed);
        store
            .append_durable(
                durable.id,
                Append::with_record(&[test_entry(0, "kept")], &durable),
            )
            .await
            .unwrap();
        assert!(!store.refresh_if_worth_it(), "one write is not worth it");
        // Records written without a flush: the reopen must flush them.
        let mut quick = Vec::new();
        while store.inner.writes_since_open.load(Ordering::Relaxed) < WRITES_BEFORE_REFRESH {
            let r = record(Status::Paused);
            store.put_agent(&r).unwrap();
            quick.push(r.id);
        }
        let before = store.agents().unwrap().len();
        assert!(store.index_is_loaded(), "a listing loads the index");
        assert!(store.refresh_if_worth_it(), "reopened after the writes");
        assert!(
            !store.index_is_loaded(),
            "the idle reopen gives back the record index too"
        );
        assert_eq!(store.agents().unwrap().len(), before, "and it loads again");
        assert!(
            !store.refresh_if_worth_it(),
            "the count starts again with the new database"
        );
        // Reads and writes go on against the new trees.
        assert_eq!(store.transcript(durable.id, 0, 10).unwrap().len(), 1);
        let after = record(Status::Completed);
        store
            .append_durable(
                after.id,
                Append::with_record(&[test_entry(0, "after")], &after),
            )
            .await
            .unwrap();
        drop(store);
        let store = reopen_for_tests(dir.path());
        for id in quick.iter().chain([&durable.id, &after.id]) {
            assert!(store.get_agent(*id).unwrap().is_some(), "{id} kept");
        }
        assert_eq!(store.transcript(after.id, 0, 10).unwrap().len(), 1);
    }

    #[test]
    fn an_operation_in_flight_keeps_the_trees_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), StoreOptions::default()).unwrap();
        let r = record(Status::Paused);
        store.put_agent(&r).unwrap();
        let held = store.trees().unwrap();
        assert!(!store.refresh(), "a held handle is waited for, then left");
        drop(held);
        assert!(store.get_agent(r.id).unwrap().is_some());
        assert!(store.refresh(), "nothing held: reopened");
        assert!(store.get_agent(r.id).unwrap().is_some());
    }

    #[test]
    fn a_full_store_is_left_to_the_healer() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), StoreOptions::default()).unwrap();
        store.fake_free_space(Some(0));
        assert!(store.put_agent(&record(Status::Paused)).is_err());
        assert!(!store.refresh(), "not while the disk is full");
        store.fake_free_space(None);
    }
}
