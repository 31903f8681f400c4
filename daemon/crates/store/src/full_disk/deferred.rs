//! Writes deferred while the disk is full: agent records (a status change,
//! how an agent ended, with the notification to its parent) kept in memory,
//! shown to readers in place of the stored record, and written first when
//! space is back.

use std::collections::HashMap;

use super::health::lock;
use crate::domain::{AgentId, AgentRecord, InboxItem};
use crate::inbox::{InboxKey, new_key};
use crate::{Store, StoreError};

#[derive(Default)]
pub(crate) struct Deferred {
    pub(crate) records: HashMap<AgentId, AgentRecord>,
    pub(crate) notes: Vec<DeferredNote>,
}

/// A notification to a parent that waits to be written.
#[derive(Clone, Debug)]
pub(crate) struct DeferredNote {
    pub(crate) parent: AgentId,
    /// Its inbox key, fixed the first time it was tried. An attempt whose
    /// flush failed may have reached the disk after all: written again
    /// under the same key it replaces itself instead of arriving twice.
    pub(crate) key: Option<InboxKey>,
    /// The record (id and bytes) its first attempt wrote in the same
    /// transaction. If the disk holds that record after the reopen, the
    /// note reached the disk too, and the parent may have taken it from
    /// its inbox already: it is not written again.
    pub(crate) written_with: Option<(AgentId, Vec<u8>)>,
    pub(crate) item: InboxItem,
}

impl Deferred {
    pub(crate) fn is_empty(&self) -> bool {
        self.records.is_empty() && self.notes.is_empty()
    }
}

/// Writes what is deferred now and takes it off the list; returns how
/// many records and notifications were written.
pub(crate) fn write_deferred(store: &Store) -> Result<usize, sled::Error> {
    let health = &store.inner.health;
    let trees = store
        .trees()
        .map_err(|e| sled::Error::ReportableBug(e.to_string()))?;
    // Each notification gets its key once, whatever happens to the
    // attempts to write it (the keys are made outside the lock: making one
    // can wait for the disk).
    let unkeyed: Vec<AgentId> = lock(&health.control)
        .deferred
        .notes
        .iter()
        .filter(|n| n.key.is_none())
        .map(|n| n.parent)
        .collect();
    let mut made = Vec::with_capacity(unkeyed.len());
    for parent in unkeyed {
        made.push(new_key(&trees, parent)?);
    }
    let (records, notes, taken) = {
        let mut control = lock(&health.control);
        let mut made = made.into_iter();
        let mut notes = Vec::with_capacity(control.deferred.notes.len());
        for note in &mut control.deferred.notes {
            // Notes are only ever appended: those counted above come first.
            let Some(key) = note.key.or_else(|| made.next()) else {
                break;
            };
            note.key = Some(key);
            notes.push(note.clone());
        }
        let records = control
            .deferred
            .records
            .values()
            .cloned()
            .collect::<Vec<_>>();
        let taken = notes.len();
        (records, notes, taken)
    };
    if records.is_empty() && taken == 0 {
        return Ok(0);
    }
    let mut keyed = Vec::with_capacity(notes.len());
    for note in notes {
        if let Some((child, bytes)) = &note.written_with
            && trees.agents.get(child.as_bytes())?.as_deref() == Some(bytes.as_slice())
        {
            continue;
        }
        if let Some(key) = note.key {
            keyed.push((key, note.item));
        }
    }
    store.write_finished(&trees, &records, &keyed)?;
    trees.db.flush()?;
    let mut control = lock(&health.control);
    for r in &records {
        if control.deferred.records.get(&r.id) == Some(r) {
            control.deferred.records.remove(&r.id);
        }
    }
    let taken = taken.min(control.deferred.notes.len());
    control.deferred.notes.drain(..taken);
    Ok(records.len() + keyed.len())
}

impl Store {
    /// Keeps a record that could not be written for lack of space (see the
    /// module docs); the healer writes it once it can.
    pub(crate) fn defer_record(&self, record: &AgentRecord, note: Option<DeferredNote>) {
        let health = &self.inner.health;
        let mut control = lock(&health.control);
        health.defer(&mut control, record, note);
        health.ensure_healer(&mut control, self);
    }

    /// A newer version of `id`'s record was written: a deferred one is void.
    pub(crate) fn forget_deferred(&self, id: AgentId) {
        if self.has_deferred() {
            lock(&self.inner.health.control)
                .deferred
                .records
                .remove(&id);
        }
    }

    /// The deferred version of a record, if one waits to be written.
    pub(crate) fn overlay(&self, record: AgentRecord) -> AgentRecord {
        if !self.has_deferred() {
            return record;
        }
        self.deferred_record(record.id).unwrap_or(record)
    }

    /// Err when `id`'s record waits for disk space (it was written with
    /// `put_agent_or_defer` or `finish_agent` on a full disk): readers are
    /// shown it, but it is not on disk, so the change it records (`what`
    /// happened) must not be acknowledged as done. Found by the torture
    /// run: a pause answered "paused" on a full disk was undone by a crash,
    /// and the agent went on working. Err too once a write failed for
    /// another reason: sled makes nothing durable after that.
    pub fn ensure_on_disk(
        &self,
        id: AgentId,
        what: impl FnOnce() -> String,
    ) -> Result<(), StoreError> {
        if let Some(cause) = lock(&self.inner.health.write_failed).clone() {
            return Err(StoreError::WriteFailed {
                what: what(),
                cause,
            });
        }
        if !self.has_deferred() || self.deferred_record(id).is_none() {
            return Ok(());
        }
        let health = &self.inner.health;
        Err(StoreError::NotOnDisk {
            what: what(),
            dir: health.dir.clone(),
            free: health.free_words(health.free_bytes()),
        })
    }

    /// The version of `id`'s record that waits to be written, if any.
    pub(crate) fn deferred_record(&self, id: AgentId) -> Option<AgentRecord> {
        lock(&self.inner.health.control)
            .deferred
            .records
            .get(&id)
            .cloned()
    }

    pub(crate) fn has_deferred(&self) -> bool {
        self.inner
            .health
            .has_deferred
            .load(std::sync::atomic::Ordering::Acquire)
    }

    pub(crate) fn deferred_status(&self, id: AgentId) -> Option<crate::domain::Status> {
        lock(&self.inner.health.control)
            .deferred
            .records
            .get(&id)
            .map(|r| r.status)
    }

    /// Records and notifications waiting for disk space.
    pub fn deferred_count(&self) -> usize {
        let control = lock(&self.inner.health.control);
        control.deferred.records.len() + control.deferred.notes.len()
    }
}
