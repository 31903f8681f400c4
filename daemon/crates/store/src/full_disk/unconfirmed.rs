//! Writes sled applied in memory but could not make durable: their flush
//! hit a full disk. sled serves them to readers until the store is reopened
//! (which drops them), and a crash loses them, so clients must not see
//! them: what a client has seen is on disk. Found by the torture run:
//! an agent whose creation failed on a full disk was listed and
//! read, and was gone after the restart.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::domain::{AgentId, AgentRecord, TranscriptEntry};

use crate::Store;
use agentd_shared::sync::Unpoisoned as _;

/// What of an agent is not on disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unconfirmed {
    /// The agent itself: its creation failed.
    Created,
    /// Its transcript from this sequence number on.
    From(u64),
}

#[derive(Default)]
pub(crate) struct Ledger(Mutex<HashMap<AgentId, Unconfirmed>>);

impl Ledger {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<AgentId, Unconfirmed>> {
        self.0.locked()
    }

    /// A durable append of `id` failed: its creation, or entries from
    /// `first_seq` on.
    pub(crate) fn failed(&self, id: AgentId, created: bool, first_seq: Option<u64>) {
        let mut map = self.lock();
        let now = match (created, first_seq, map.get(&id)) {
            (true, _, _) | (_, _, Some(Unconfirmed::Created)) => Unconfirmed::Created,
            (false, Some(seq), Some(Unconfirmed::From(before))) => {
                Unconfirmed::From(seq.min(*before))
            }
            (false, Some(seq), None) => Unconfirmed::From(seq),
            // A record alone: its entries are all on disk.
            (false, None, Some(before)) => *before,
            (false, None, None) => return,
        };
        map.insert(id, now);
    }

    /// A durable append of `id` succeeded: everything before is on disk.
    pub(crate) fn confirmed(&self, id: AgentId) {
        let mut map = self.lock();
        if map.get(&id).is_some_and(|u| *u != Unconfirmed::Created) {
            map.remove(&id);
        }
    }

    /// The store was reopened from disk: what was not on disk is gone.
    pub(crate) fn clear(&self) {
        self.lock().clear();
    }

    fn get(&self, id: AgentId) -> Option<Unconfirmed> {
        self.lock().get(&id).copied()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }
}

impl Store {
    /// What of `id` readers must not be shown (not on disk), if anything.
    pub(crate) fn unconfirmed(&self, id: AgentId) -> Option<Unconfirmed> {
        self.inner.unconfirmed.get(id)
    }

    /// A record as far as it is on disk: none if its creation is not, and
    /// its transcript only as long as what of it is.
    pub(crate) fn durable_view(&self, mut record: AgentRecord) -> Option<AgentRecord> {
        match self.unconfirmed(record.id) {
            None => Some(record),
            Some(Unconfirmed::Created) => None,
            Some(Unconfirmed::From(seq)) => {
                record.transcript_len = record.transcript_len.min(seq);
                Some(record)
            }
        }
    }

    /// `durable_view` over listed records; they are returned as they are
    /// while nothing is unconfirmed (the common case: no copies).
    pub(crate) fn durable_records(&self, records: Vec<Arc<AgentRecord>>) -> Vec<Arc<AgentRecord>> {
        if self.inner.unconfirmed.is_empty() {
            return records;
        }
        records
            .into_iter()
            .filter_map(|r| match self.unconfirmed(r.id) {
                None => Some(r),
                Some(_) => self.durable_view((*r).clone()).map(Arc::new),
            })
            .collect()
    }

    /// `transcript_len` as far as it is on disk.
    pub(crate) fn durable_len(&self, id: AgentId, len: u64) -> u64 {
        match self.unconfirmed(id) {
            Some(Unconfirmed::Created) => 0,
            Some(Unconfirmed::From(seq)) => len.min(seq),
            None => len,
        }
    }

    /// Drops from `entries` (read from sled) those not on disk.
    pub(crate) fn only_durable(
        &self,
        id: AgentId,
        mut entries: Vec<TranscriptEntry>,
    ) -> Vec<TranscriptEntry> {
        let end = self.durable_len(id, u64::MAX);
        entries.retain(|e| e.seq < end);
        entries
    }
}
