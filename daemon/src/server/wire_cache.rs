//! Each listed agent's wire form, encoded once per version.
//!
//! A listing used to convert every record to a `pb::Agent` and encode it,
//! each time: allocation and copying that were most of the daemon's work
//! for `list` (perf, 1,000 agents). A record in the store's index is
//! replaced, never changed, on every write, so the `Arc` a listing gets is
//! its version: the bytes made for it are kept with it (holding the `Arc`,
//! so its address cannot be reused) and sent again while that record and
//! what else goes into its wire form ([`Extras`]) stay the same.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use agentd_shared::proto as pb;
use bytes::Bytes;
use prost::Message;

use crate::domain::{AgentId, AgentRecord, Budget, Spent};
use agentd_shared::sync::Unpoisoned as _;

/// What an agent's wire form holds besides its record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Extras {
    /// What a waiting agent waits for.
    pub waiting_for: Option<String>,
    /// Its own budget and what its family spent (or why that cannot be
    /// measured).
    pub budget: Option<(Budget, Result<Spent, String>)>,
}

/// The wire form of `record` with `extras`.
pub fn agent(record: &AgentRecord, extras: &Extras) -> pb::Agent {
    let mut wire = super::convert::agent(record, extras.waiting_for.clone());
    wire.budget = extras.budget.as_ref().map(super::convert::budget);
    wire
}

struct Cached {
    record: Arc<AgentRecord>,
    extras: Extras,
    bytes: Bytes,
}

#[derive(Default)]
pub struct WireCache {
    entries: Mutex<HashMap<AgentId, Cached>>,
}

impl WireCache {
    /// The encoded wire form of each of `records`, in order, made with
    /// `wire` for those whose record or extras changed since the last
    /// listing. `whole`: these are all the agents there are (`list --all`,
    /// not one parent's children), so entries for any other are dropped;
    /// the plain listing leaves out agents that ended long ago, so it
    /// keeps theirs.
    pub fn encode(
        &self,
        records: &[Arc<AgentRecord>],
        extras: impl Fn(&AgentRecord) -> Extras,
        wire: impl Fn(&AgentRecord, &Extras) -> pb::Agent,
        whole: bool,
    ) -> Vec<Bytes> {
        // Outside the lock: it asks the supervisor.
        let extras: Vec<Extras> = records.iter().map(|r| extras(r)).collect();
        let mut entries = self.entries.locked();
        let mut listed = if whole {
            HashMap::with_capacity(records.len())
        } else {
            HashMap::new()
        };
        let mut out = Vec::with_capacity(records.len());
        for (record, extras) in records.iter().zip(extras) {
            let reuse = entries
                .remove(&record.id)
                .filter(|c| Arc::ptr_eq(&c.record, record) && c.extras == extras);
            let cached = reuse.unwrap_or_else(|| Cached {
                bytes: Bytes::from(wire(record, &extras).encode_to_vec()),
                record: record.clone(),
                extras,
            });
            out.push(cached.bytes.clone());
            if whole {
                listed.insert(record.id, cached);
            } else {
                entries.insert(record.id, cached);
            }
        }
        if whole {
            *entries = listed;
        } else if entries.len() > 2 * records.len() + 1024 {
            // Agents removed since the last whole listing: without one, a
            // bound (the cache only saves work; dropping it loses nothing).
            let here: std::collections::HashSet<AgentId> = records.iter().map(|r| r.id).collect();
            entries.retain(|id, _| here.contains(id));
        }
        out
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.entries.lock().unwrap().len()
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;
    use crate::domain::{Status, now_ms};

    fn record(status: Status) -> Arc<AgentRecord> {
        let id = AgentId::random();
        let mut r = AgentRecord::new(id, id.short_prefix(8), now_ms());
        r.status = status;
        r.description = "a task".into();
        Arc::new(r)
    }

    fn plain(_: &AgentRecord) -> Extras {
        Extras {
            waiting_for: None,
            budget: None,
        }
    }

    #[test]
    fn a_record_and_extras_unchanged_are_not_encoded_again_and_changes_are() {
        let cache = WireCache::default();
        let made = Cell::new(0);
        let wire = |r: &AgentRecord, e: &Extras| {
            made.set(made.get() + 1);
            agent(r, e)
        };
        let (a, b) = (record(Status::Running), record(Status::Completed));
        let first = cache.encode(&[a.clone(), b.clone()], plain, wire, true);
        assert_eq!(made.get(), 2);
        for (bytes, r) in first.iter().zip([&a, &b]) {
            assert_eq!(bytes.as_ref(), agent(r, &plain(r)).encode_to_vec());
        }

        let again = cache.encode(&[a.clone(), b.clone()], plain, wire, true);
        assert_eq!(made.get(), 2, "nothing changed: nothing encoded");
        assert_eq!(again, first);
        assert_eq!(again[0].as_ptr(), first[0].as_ptr(), "the same bytes");

        // A write replaces the record: a new version, encoded anew, even
        // if equal in content.
        let mut newer = (*a).clone();
        newer.turns = 5;
        let a2 = Arc::new(newer);
        let third = cache.encode(&[a2.clone(), b.clone()], plain, wire, true);
        assert_eq!(made.get(), 3);
        assert_eq!(pb::Agent::decode(third[0].clone()).unwrap().turns, 5);

        // What is not in the record counts too.
        let waiting = |_: &AgentRecord| Extras {
            waiting_for: Some("disk space".into()),
            budget: None,
        };
        let fourth = cache.encode(std::slice::from_ref(&a2), waiting, wire, false);
        assert_eq!(made.get(), 4);
        let shown = pb::Agent::decode(fourth[0].clone()).unwrap();
        assert_eq!(shown.waiting_for, "disk space");
    }

    #[test]
    fn a_whole_listing_drops_agents_no_longer_there_and_a_partial_one_keeps_them() {
        let cache = WireCache::default();
        let wire = |r: &AgentRecord, e: &Extras| agent(r, e);
        let (a, b, c) = (
            record(Status::Running),
            record(Status::Running),
            record(Status::Running),
        );
        cache.encode(&[a.clone(), b.clone(), c.clone()], plain, wire, true);
        assert_eq!(cache.len(), 3);
        cache.encode(std::slice::from_ref(&a), plain, wire, false);
        assert_eq!(cache.len(), 3, "one parent's children: the rest stay");
        cache.encode(&[a.clone(), c], plain, wire, true);
        assert_eq!(cache.len(), 2, "b was removed");

        // Without whole listings, removed agents are dropped past a bound.
        let many: Vec<_> = (0..1100).map(|_| record(Status::Running)).collect();
        cache.encode(&many, plain, wire, false);
        assert_eq!(cache.len(), 1102);
        cache.encode(std::slice::from_ref(&a), plain, wire, false);
        assert_eq!(cache.len(), 1, "only what this listing holds");
    }
}
