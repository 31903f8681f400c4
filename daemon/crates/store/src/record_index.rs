//! The agent records in memory, oldest first, for `list` and `status`:
//! with a thousand agents streaming, decoding every record from sled on
//! each listing cost most of a listing's time (measured: docs/SCALE.md).
//!
//! A read cache the store owns, never a second truth: it is loaded from
//! sled on first use, and every write of a record by the store refreshes
//! the written ids from sled afterwards, under the index's lock.
//! The refresh reads back rather than taking the caller's copy, so two
//! writers of one record leave the index with whatever sled holds last.
//! A write that fails (sled may have applied it in memory anyway) and a
//! reopen drop the whole index; the next reader loads it again.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};

use super::{Store, StoreError, Trees, codec};
use crate::domain::{AgentId, AgentRecord, Status};
use agentd_shared::sync::Unpoisoned as _;

#[derive(Default)]
pub(super) struct RecordIndex(Mutex<Option<Loaded>>);

/// Every readable record, keyed for creation order.
#[derive(Default)]
struct Loaded {
    by_age: BTreeMap<(i64, AgentId), Arc<AgentRecord>>,
    /// Each record's key in `by_age`.
    created: HashMap<AgentId, i64>,
}

impl Loaded {
    fn insert(&mut self, record: AgentRecord) {
        let id = record.id;
        self.remove(id);
        self.created.insert(id, record.created_at_ms);
        self.by_age
            .insert((record.created_at_ms, id), Arc::new(record));
    }

    fn remove(&mut self, id: AgentId) {
        if let Some(created) = self.created.remove(&id) {
            self.by_age.remove(&(created, id));
        }
    }
}

impl RecordIndex {
    fn lock(&self) -> MutexGuard<'_, Option<Loaded>> {
        self.0.locked()
    }
}

impl Store {
    /// The index, loaded from sled if it is not. The guard is held while
    /// loading, so no write's refresh slips in between; the trees are taken
    /// before it, since taking them may wait out a reopen, which waits for
    /// writers that may be waiting for this lock.
    fn loaded_index(&self) -> Result<MutexGuard<'_, Option<Loaded>>, StoreError> {
        {
            let index = self.inner.records.lock();
            if index.is_some() {
                return Ok(index);
            }
        }
        let trees = self.trees()?;
        let mut index = self.inner.records.lock();
        if index.is_none() {
            let mut loaded = Loaded::default();
            for item in trees.agents.iter() {
                let (key, bytes) = item?;
                match codec::decode_agent(&bytes) {
                    Ok(r) => loaded.insert(r),
                    Err(e) => self.note_corrupt("agent record", &key, &e),
                }
            }
            *index = Some(loaded);
        }
        Ok(index)
    }

    /// Every agent record, oldest first (a record waiting for disk space
    /// shows its newer version).
    pub fn agents(&self) -> Result<Vec<Arc<AgentRecord>>, StoreError> {
        let records: Vec<Arc<AgentRecord>> = match &*self.loaded_index()? {
            Some(loaded) => loaded.by_age.values().cloned().collect(),
            None => Vec::new(),
        };
        if !self.has_deferred() {
            return Ok(self.durable_records(records));
        }
        let records = records
            .into_iter()
            .map(|r| match self.deferred_record(r.id) {
                Some(newer) => Arc::new(newer),
                None => r,
            })
            .collect();
        Ok(self.durable_records(records))
    }

    /// How many agents are in each status.
    pub fn count_by_status(&self) -> Result<BTreeMap<Status, u64>, StoreError> {
        let mut counts = BTreeMap::new();
        let deferred = self.has_deferred();
        let all_on_disk = self.inner.unconfirmed.is_empty();
        if let Some(loaded) = &*self.loaded_index()? {
            for record in loaded.by_age.values() {
                if !all_on_disk && self.unconfirmed(record.id) == Some(super::Unconfirmed::Created)
                {
                    continue;
                }
                // A record waiting to be written says it better.
                let status = if deferred {
                    self.deferred_status(record.id).unwrap_or(record.status)
                } else {
                    record.status
                };
                *counts.entry(status).or_insert(0) += 1;
            }
        }
        Ok(counts)
    }

    /// After a write of the records of `ids` that sled accepted: reads
    /// them back into the index (if it is loaded). `trees` is the handle
    /// the write used, so a reopen cannot come in between.
    pub(super) fn index_written(&self, trees: &Trees, ids: impl IntoIterator<Item = AgentId>) {
        let mut index = self.inner.records.lock();
        let Some(loaded) = index.as_mut() else {
            return;
        };
        for id in ids {
            match trees.agents.get(id.as_bytes()) {
                Ok(Some(bytes)) => match codec::decode_agent(&bytes) {
                    Ok(r) => loaded.insert(r),
                    Err(e) => {
                        self.note_corrupt("agent record", id.as_bytes(), &e);
                        loaded.remove(id);
                    }
                },
                Ok(None) => loaded.remove(id),
                Err(_) => {
                    // sled repeats a stored error on reads: load afresh later.
                    *index = None;
                    return;
                }
            }
        }
    }

    /// A write of records failed, or the store was reopened: what sled
    /// serves may differ from the index in ways nobody knows.
    pub(super) fn index_dropped(&self) {
        *self.inner.records.lock() = None;
    }

    #[cfg(test)]
    pub(super) fn index_is_loaded(&self) -> bool {
        self.inner.records.lock().is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Append, StoreOptions, test_entry};

    fn record(n: u8, created_at_ms: i64) -> AgentRecord {
        let id = AgentId::random();
        let mut r = AgentRecord::new(id, id.short_prefix(8), created_at_ms);
        r.name = format!("agent-{n}");
        r.status = Status::Running;
        r
    }

    /// What sled holds, decoded afresh, in the listing's order.
    fn on_sled(store: &Store) -> Vec<AgentRecord> {
        let trees = store.trees().unwrap();
        let mut all: Vec<AgentRecord> = trees
            .agents
            .iter()
            .map(|item| codec::decode_agent(&item.unwrap().1).unwrap())
            .collect();
        all.sort_by_key(|r| (r.created_at_ms, r.id));
        all
    }

    fn listed(store: &Store) -> Vec<AgentRecord> {
        store
            .agents()
            .unwrap()
            .into_iter()
            .map(Arc::unwrap_or_clone)
            .collect()
    }

    #[tokio::test]
    async fn the_listing_follows_every_kind_of_record_write() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), StoreOptions::default()).unwrap();
        let mut a = record(1, 2_000);
        let mut b = record(2, 1_000);
        store.put_agent(&a).unwrap();
        assert_eq!(listed(&store), vec![a.clone()], "loaded from sled");

        store.put_agent(&b).unwrap();
        assert_eq!(listed(&store), vec![b.clone(), a.clone()], "oldest first");

        a.turns = 3;
        let entries = [test_entry(0, "a"), test_entry(1, "b")];
        store
            .append_durable(a.id, Append::with_record(&entries, &a))
            .await
            .unwrap();
        let after_append = listed(&store);
        assert_eq!(after_append[1].turns, 3);
        assert_eq!(after_append[1].transcript_len, 2, "as the store wrote it");

        b.status = Status::Completed;
        b.outcome = Some(crate::domain::Outcome::Completed("done".into()));
        store.finish_agent(&b, None).await.unwrap();
        assert_eq!(listed(&store)[0].status, Status::Completed);

        store.remove_agent(b.id).await.unwrap();
        assert_eq!(listed(&store), on_sled(&store));
        assert_eq!(listed(&store).len(), 1);
        assert_eq!(
            store.count_by_status().unwrap(),
            BTreeMap::from([(Status::Running, 1)])
        );
    }

    #[test]
    fn concurrent_writers_of_one_record_leave_what_sled_holds_last() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), StoreOptions::default()).unwrap();
        let r = record(1, 1_000);
        store.put_agent(&r).unwrap();
        store.agents().unwrap();
        // Rounds of two writers released together: after each, the index
        // must hold the version sled kept, whichever write landed last.
        let start = std::sync::Barrier::new(3);
        let done = std::sync::Barrier::new(3);
        let rounds = 2_000u32;
        std::thread::scope(|s| {
            for writer in 0..2u32 {
                let (store, r, start, done) = (&store, &r, &start, &done);
                s.spawn(move || {
                    for round in 0..rounds {
                        let mut mine = r.clone();
                        mine.turns = round * 2 + writer;
                        start.wait();
                        store.put_agent(&mine).unwrap();
                        done.wait();
                    }
                });
            }
            // Counted, not asserted here: a panic would leave the writers
            // waiting at the barrier.
            let mut stale = 0;
            for _ in 0..rounds {
                start.wait();
                done.wait();
                stale += usize::from(listed(&store) != on_sled(&store));
            }
            assert_eq!(stale, 0, "rounds whose listing was stale");
        });
    }

    #[test]
    fn a_dropped_index_is_loaded_again_from_sled() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), StoreOptions::default()).unwrap();
        let r = record(1, 1_000);
        store.put_agent(&r).unwrap();
        store.agents().unwrap();
        store.index_dropped();
        // A write sled took while nothing was loaded: the reload sees it.
        let mut changed = r.clone();
        changed.turns = 9;
        store
            .trees()
            .unwrap()
            .agents
            .insert(r.id.as_bytes(), codec::encode_agent(&changed))
            .unwrap();
        assert_eq!(listed(&store), vec![changed]);
    }
}
