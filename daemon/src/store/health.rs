//! A full disk, and healing from it without a restart.
//!
//! sled, once a write to its log fails, refuses every later write until the
//! database is opened again. So the store does not let sled run the disk
//! full: every write first checks that the data directory's file system has
//! `min_free_bytes` left and is refused with `DiskFull` otherwise. If space
//! runs out anyway (another process filled the disk between the check and
//! the write), sled is marked poisoned.
//!
//! While full, writes are refused at once, reads are served, and a healer
//! thread watches the free space. When it is back, the healer reopens a
//! poisoned database (waiting for in-flight users of the old handles to
//! finish), writes what was deferred, and reports the store writable again;
//! agents waiting for space continue.
//!
//! Deferred writes are agent records (a status change, how an agent ended,
//! with the notification to its parent) that could not be written: they are
//! kept in memory, shown to readers in place of the stored record, and
//! written first when space is back. A restart before that loses nothing
//! acknowledged: those agents resume from their transcripts.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use tokio::sync::watch;

use super::{Inner, Store, StoreError, Trees};
use crate::domain::{AgentId, AgentRecord, InboxItem};

/// How often the healer looks at the free space.
const HEAL_INTERVAL: Duration = Duration::from_millis(200);
/// Space the healer waits for at the least before reopening (also when
/// `min_free_bytes` is 0): opening sled writes a little.
const HEAL_FLOOR: u64 = 1024 * 1024;

#[derive(Clone, Debug)]
pub struct StoreOptions {
    /// Writes are refused when less than this is free on the data
    /// directory's file system (config `store_min_free_mb`).
    pub min_free_bytes: u64,
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            min_free_bytes: 64 * 1024 * 1024,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Healthy,
    Full {
        /// sled failed a write and must be reopened.
        poisoned: bool,
    },
}

#[derive(Default)]
struct Deferred {
    records: HashMap<AgentId, AgentRecord>,
    notes: Vec<(AgentId, InboxItem)>,
}

pub(super) struct Health {
    dir: PathBuf,
    min_free: u64,
    state: Mutex<State>,
    healer_running: Mutex<bool>,
    writable: watch::Sender<bool>,
    deferred: Mutex<Deferred>,
    /// Set while anything is deferred, so reads skip the lock otherwise.
    has_deferred: std::sync::atomic::AtomicBool,
    /// Free space reported instead of the file system's, for tests.
    fake_free: Mutex<Option<u64>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
}

impl Health {
    pub(super) fn new(dir: &Path, options: StoreOptions) -> Health {
        Health {
            dir: dir.to_path_buf(),
            min_free: options.min_free_bytes,
            state: Mutex::new(State::Healthy),
            healer_running: Mutex::new(false),
            writable: watch::channel(true).0,
            deferred: Mutex::new(Deferred::default()),
            has_deferred: std::sync::atomic::AtomicBool::new(false),
            fake_free: Mutex::new(None),
        }
    }

    fn free_bytes(&self) -> u64 {
        if let Some(free) = *lock(&self.fake_free) {
            return free;
        }
        match nix::sys::statvfs::statvfs(&self.dir) {
            Ok(s) => s.blocks_available().saturating_mul(s.fragment_size()),
            // Cannot tell: let the write try; sled reports a real failure.
            Err(_) => u64::MAX,
        }
    }

    fn full_error(&self, free: u64) -> StoreError {
        StoreError::DiskFull {
            dir: self.dir.clone(),
            free: format!(
                "{} free, agentd keeps at least {} free",
                mib(free),
                mib(self.min_free)
            ),
        }
    }

    /// Ok when a write may go ahead.
    pub(super) fn check_space(&self, store: &Store) -> Result<(), StoreError> {
        let state = *lock(&self.state);
        let free = self.free_bytes();
        if state != State::Healthy {
            return Err(self.full_error(free));
        }
        if free < self.min_free {
            self.enter_full(store, false);
            return Err(self.full_error(free));
        }
        Ok(())
    }

    /// sled ran out of space in a write: it must be reopened.
    pub(super) fn poisoned(&self, store: &Store) -> StoreError {
        self.enter_full(store, true);
        self.full_error(self.free_bytes())
    }

    fn enter_full(&self, store: &Store, poisoned: bool) {
        {
            let mut state = lock(&self.state);
            let was_poisoned = matches!(*state, State::Full { poisoned: true });
            if *state == State::Healthy {
                tracing::error!(dir = %self.dir.display(), free = %mib(self.free_bytes()), poisoned, "the data directory is out of disk space: writes are refused until space is freed");
            }
            *state = State::Full {
                poisoned: poisoned || was_poisoned,
            };
        }
        self.writable.send_replace(false);
        let mut running = lock(&self.healer_running);
        if !*running {
            *running = true;
            let weak = Arc::downgrade(&store.inner);
            std::thread::Builder::new()
                .name("agentd-store-healer".into())
                .spawn(move || heal(weak))
                .map(drop)
                .unwrap_or_else(|e| {
                    tracing::error!(error = %e, "cannot start the store healer");
                    *lock(&store.inner.health.healer_running) = false;
                });
        }
    }
}

/// Runs until the store is writable again (or dropped).
fn heal(weak: Weak<Inner>) {
    loop {
        std::thread::sleep(HEAL_INTERVAL);
        let Some(inner) = weak.upgrade() else { return };
        let store = Store { inner };
        let health = &store.inner.health;
        if health.free_bytes() < health.min_free.max(HEAL_FLOOR) {
            continue;
        }
        let poisoned = matches!(*lock(&health.state), State::Full { poisoned: true });
        if poisoned && let Err(e) = reopen(&store) {
            tracing::warn!(error = %e, "could not reopen the store yet");
            continue;
        }
        match write_deferred(&store) {
            Ok(n) => {
                *lock(&health.state) = State::Healthy;
                *lock(&health.healer_running) = false;
                health.writable.send_replace(true);
                tracing::info!(
                    deferred_records = n,
                    reopened = poisoned,
                    "disk space is back: the store accepts writes again"
                );
                return;
            }
            Err(e) => {
                tracing::warn!(error = %e, "writing deferred records failed; waiting for more space");
                if super::error::is_out_of_space(&e) {
                    *lock(&health.state) = State::Full { poisoned: true };
                }
            }
        }
    }
}

/// Opens the database again: sled keeps a failed write's error until then.
fn reopen(store: &Store) -> Result<(), StoreError> {
    let slot = &store.inner.trees;
    let taken = slot.write().unwrap_or_else(|p| p.into_inner()).take();
    if let Some(mut old) = taken {
        // Every operation holds the handles only while it runs.
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            match Arc::try_unwrap(old) {
                Ok(trees) => {
                    drop(trees);
                    break;
                }
                Err(still_used) if Instant::now() > deadline => {
                    *slot.write().unwrap_or_else(|p| p.into_inner()) = Some(still_used);
                    return Err(StoreError::Reopening);
                }
                Err(still_used) => {
                    old = still_used;
                    std::thread::sleep(Duration::from_millis(2));
                }
            }
        }
    }
    // sled's file lock can outlive the last handle by a moment.
    let mut attempt = 0;
    loop {
        match Trees::open(&store.inner.path) {
            Ok(trees) => {
                *slot.write().unwrap_or_else(|p| p.into_inner()) = Some(Arc::new(trees));
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

/// Writes the deferred records and notifications; returns how many.
fn write_deferred(store: &Store) -> Result<usize, sled::Error> {
    let health = &store.inner.health;
    let (records, notes) = {
        let d = lock(&health.deferred);
        (
            d.records.values().cloned().collect::<Vec<_>>(),
            d.notes.clone(),
        )
    };
    if records.is_empty() && notes.is_empty() {
        return Ok(0);
    }
    let trees = store
        .trees()
        .map_err(|e| sled::Error::ReportableBug(e.to_string()))?;
    store.write_finished(&trees, &records, &notes)?;
    trees.db.flush()?;
    let mut d = lock(&health.deferred);
    for r in &records {
        if d.records.get(&r.id) == Some(r) {
            d.records.remove(&r.id);
        }
    }
    let written_notes = notes.len().min(d.notes.len());
    d.notes.drain(..written_notes);
    if d.records.is_empty() && d.notes.is_empty() {
        health
            .has_deferred
            .store(false, std::sync::atomic::Ordering::Release);
    }
    Ok(records.len() + notes.len())
}

impl Store {
    /// False while the disk is full; changes when it is healed.
    pub fn writable(&self) -> watch::Receiver<bool> {
        self.inner.health.writable.subscribe()
    }

    pub fn is_full(&self) -> bool {
        !*self.inner.health.writable.borrow()
    }

    /// Keeps a record that could not be written for lack of space (see the
    /// module docs).
    pub(super) fn defer_record(&self, record: &AgentRecord, note: Option<(AgentId, &InboxItem)>) {
        let mut d = lock(&self.inner.health.deferred);
        self.inner
            .health
            .has_deferred
            .store(true, std::sync::atomic::Ordering::Release);
        d.records.insert(record.id, record.clone());
        if let Some((parent, item)) = note {
            d.notes.push((parent, item.clone()));
        }
    }

    /// The deferred version of a record, if one waits to be written.
    pub(super) fn overlay(&self, record: AgentRecord) -> AgentRecord {
        if !self.has_deferred() {
            return record;
        }
        let d = lock(&self.inner.health.deferred);
        match d.records.get(&record.id) {
            Some(newer) => newer.clone(),
            None => record,
        }
    }

    pub(super) fn has_deferred(&self) -> bool {
        self.inner
            .health
            .has_deferred
            .load(std::sync::atomic::Ordering::Acquire)
    }

    pub(super) fn deferred_status(&self, id: AgentId) -> Option<crate::domain::Status> {
        lock(&self.inner.health.deferred)
            .records
            .get(&id)
            .map(|r| r.status)
    }

    /// Records and notifications waiting for disk space.
    pub fn deferred_count(&self) -> usize {
        let d = lock(&self.inner.health.deferred);
        d.records.len() + d.notes.len()
    }

    /// Test hook: report this much free space instead of the real figure.
    #[cfg(test)]
    pub(crate) fn fake_free_space(&self, bytes: Option<u64>) {
        *lock(&self.inner.health.fake_free) = bytes;
    }
}
