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

use super::inbox::{InboxKey, new_key};
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
    notes: Vec<DeferredNote>,
}

/// A notification to a parent that waits to be written.
#[derive(Clone, Debug)]
pub(super) struct DeferredNote {
    pub(super) parent: AgentId,
    /// Its inbox key, fixed the first time it was tried. An attempt whose
    /// flush failed may have reached the disk after all: written again
    /// under the same key it replaces itself instead of arriving twice.
    pub(super) key: Option<InboxKey>,
    /// The record (id and bytes) its first attempt wrote in the same
    /// transaction. If the disk holds that record after the reopen, the
    /// note reached the disk too, and the parent may have taken it from
    /// its inbox already: it is not written again.
    pub(super) written_with: Option<(AgentId, Vec<u8>)>,
    pub(super) item: InboxItem,
}

impl Deferred {
    fn is_empty(&self) -> bool {
        self.records.is_empty() && self.notes.is_empty()
    }
}

/// Everything about the store's health that must change together, under
/// one lock: whether writes are allowed, whether a healer runs, and what
/// waits to be written.
struct Control {
    state: State,
    healer_running: bool,
    deferred: Deferred,
}

pub(super) struct Health {
    dir: PathBuf,
    min_free: u64,
    /// The reserve was released to open the store: until it is made again,
    /// writes also leave its room free (it is for opening, not for agents).
    reserve_released: std::sync::atomic::AtomicBool,
    control: Mutex<Control>,
    /// Published under the control lock.
    writable: watch::Sender<bool>,
    /// Set while anything is deferred, so reads skip the lock otherwise.
    has_deferred: std::sync::atomic::AtomicBool,
    /// Set when a write failed for a reason other than space (sled then
    /// writes nothing more until reopened): why.
    write_failed: Mutex<Option<String>>,
    /// Free space reported instead of the file system's, for tests.
    fake_free: Mutex<Option<u64>>,
    /// Fail the next flush with this errno, for tests.
    #[cfg(test)]
    fake_flush_failure: Mutex<Option<i32>>,
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
            reserve_released: std::sync::atomic::AtomicBool::new(false),
            control: Mutex::new(Control {
                state: State::Healthy,
                healer_running: false,
                deferred: Deferred::default(),
            }),
            writable: watch::channel(true).0,
            has_deferred: std::sync::atomic::AtomicBool::new(false),
            write_failed: Mutex::new(None),
            fake_free: Mutex::new(None),
            #[cfg(test)]
            fake_flush_failure: Mutex::new(None),
        }
    }

    #[cfg(test)]
    pub(super) fn take_fake_flush_failure(&self) -> Option<i32> {
        lock(&self.fake_flush_failure).take()
    }

    pub(super) fn write_failed(&self, e: &std::io::Error) {
        let mut failed = lock(&self.write_failed);
        if failed.is_none() {
            tracing::error!(error = %e, "a write of the store failed: agentd makes nothing durable until it is restarted");
            *failed = Some(e.to_string().chars().take(200).collect());
        }
    }

    /// Makes the store's reserve (`reserve`) if there is room to spare.
    pub(super) fn keep_reserve(&self) {
        if super::reserve::keep(&self.dir, self.free_bytes(), self.min_free) {
            self.reserve_released
                .store(false, std::sync::atomic::Ordering::Release);
        }
    }

    /// The reserve was released to open the store: the store starts full
    /// (no write until the healer finds room for the writes and the
    /// reserve both), never writing into the last bytes at once — sled
    /// meeting ENOSPC then kept its flush waiting forever.
    pub(super) fn reserve_released(&self, store: &Store) {
        self.reserve_released
            .store(true, std::sync::atomic::Ordering::Release);
        let mut control = lock(&self.control);
        self.enter_full(&mut control, store, false);
    }

    /// The free space writes must leave.
    fn needed(&self) -> u64 {
        let reserve = if self
            .reserve_released
            .load(std::sync::atomic::Ordering::Acquire)
        {
            super::reserve::RESERVE_BYTES
        } else {
            0
        };
        self.min_free.saturating_add(reserve)
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
            free: self.free_words(free),
        }
    }

    fn free_words(&self, free: u64) -> String {
        format!(
            "{} free, agentd keeps at least {} free",
            mib(free),
            mib(self.min_free)
        )
    }

    /// Ok when a write may go ahead.
    pub(super) fn check_space(&self, store: &Store) -> Result<(), StoreError> {
        let free = self.free_bytes();
        let mut control = lock(&self.control);
        if control.state != State::Healthy {
            return Err(self.full_error(free));
        }
        if free < self.needed() {
            self.enter_full(&mut control, store, false);
            return Err(self.full_error(free));
        }
        Ok(())
    }

    /// sled ran out of space in a write: it must be reopened.
    pub(super) fn poisoned(&self, store: &Store) -> StoreError {
        let free = self.free_bytes();
        self.enter_full(&mut lock(&self.control), store, true);
        self.full_error(free)
    }

    /// sled ran out of space flushing a record (and notification) it had
    /// applied: what it holds in memory is dropped by the reopen, so they
    /// are kept to be written again. One step with marking sled poisoned,
    /// so the healer cannot reopen and report healthy in between.
    pub(super) fn poisoned_deferring(
        &self,
        store: &Store,
        record: &AgentRecord,
        note: Option<DeferredNote>,
    ) -> StoreError {
        let free = self.free_bytes();
        let mut control = lock(&self.control);
        self.defer(&mut control, record, note);
        self.enter_full(&mut control, store, true);
        self.full_error(free)
    }

    fn defer(&self, control: &mut Control, record: &AgentRecord, note: Option<DeferredNote>) {
        self.has_deferred
            .store(true, std::sync::atomic::Ordering::Release);
        control.deferred.records.insert(record.id, record.clone());
        control.deferred.notes.extend(note);
    }

    fn enter_full(&self, control: &mut Control, store: &Store, poisoned: bool) {
        let was_poisoned = matches!(control.state, State::Full { poisoned: true });
        if control.state == State::Healthy {
            tracing::error!(dir = %self.dir.display(), free = %mib(self.free_bytes()), poisoned, "the data directory is out of disk space: writes are refused until space is freed");
        }
        control.state = State::Full {
            poisoned: poisoned || was_poisoned,
        };
        self.writable.send_replace(false);
        self.ensure_healer(control, store);
    }

    /// Starts the healer unless one runs: it runs until the store is
    /// healthy and nothing waits to be written.
    fn ensure_healer(&self, control: &mut Control, store: &Store) {
        if control.healer_running {
            return;
        }
        let weak = Arc::downgrade(&store.inner);
        match std::thread::Builder::new()
            .name("agentd-store-healer".into())
            .spawn(move || heal(weak))
        {
            Ok(_) => control.healer_running = true,
            // The next write or deferral tries again.
            Err(e) => tracing::error!(error = %e, "cannot start the store healer"),
        }
    }
}

/// Runs until the store is writable again with nothing deferred (or the
/// store is dropped).
fn heal(weak: Weak<Inner>) {
    let mut reopened = false;
    loop {
        std::thread::sleep(HEAL_INTERVAL);
        let Some(inner) = weak.upgrade() else { return };
        let store = Store { inner };
        let health = &store.inner.health;
        if health.free_bytes() < health.needed().max(HEAL_FLOOR) {
            continue;
        }
        let poisoned = matches!(lock(&health.control).state, State::Full { poisoned: true });
        if poisoned {
            if let Err(e) = reopen(&store) {
                tracing::warn!(error = %e, "could not reopen the store yet");
                continue;
            }
            reopened = true;
        }
        let written = match write_deferred(&store) {
            Ok(n) => n,
            Err(e) => {
                tracing::warn!(error = %e, "writing deferred records failed; waiting for more space");
                if super::error::is_out_of_space(&e) {
                    lock(&health.control).state = State::Full { poisoned: true };
                }
                continue;
            }
        };
        let mut control = lock(&health.control);
        if !control.deferred.is_empty() || control.state == (State::Full { poisoned: true }) {
            // More was deferred meanwhile, or a write failed since the
            // reopen: write that too first, reopening again.
            continue;
        }
        control.state = State::Healthy;
        control.healer_running = false;
        health
            .has_deferred
            .store(false, std::sync::atomic::Ordering::Release);
        health.writable.send_replace(true);
        drop(control);
        health.keep_reserve();
        tracing::info!(
            deferred_records = written,
            reopened,
            "disk space is back: the store accepts writes again"
        );
        return;
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
                // Not poisoned any more, said before anyone can write to
                // the new handle (none can while the slot is empty), so a
                // write failing on it is not forgotten.
                if let State::Full { poisoned } = &mut lock(&store.inner.health.control).state {
                    *poisoned = false;
                }
                *lock(&store.inner.health.write_failed) = None;
                *slot.write().unwrap_or_else(|p| p.into_inner()) = Some(Arc::new(trees));
                // The index first: until it is dropped it may hold what
                // the ledger still hides.
                store.index_dropped();
                store.inner.unconfirmed.clear();
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

/// Writes what is deferred now and takes it off the list; returns how
/// many records and notifications were written.
fn write_deferred(store: &Store) -> Result<usize, sled::Error> {
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
    /// False while the disk is full; changes when it is healed.
    pub fn writable(&self) -> watch::Receiver<bool> {
        self.inner.health.writable.subscribe()
    }

    pub fn is_full(&self) -> bool {
        !*self.inner.health.writable.borrow()
    }

    /// Keeps a record that could not be written for lack of space (see the
    /// module docs); the healer writes it once it can.
    pub(super) fn defer_record(&self, record: &AgentRecord, note: Option<DeferredNote>) {
        let health = &self.inner.health;
        let mut control = lock(&health.control);
        health.defer(&mut control, record, note);
        health.ensure_healer(&mut control, self);
    }

    /// A newer version of `id`'s record was written: a deferred one is void.
    pub(super) fn forget_deferred(&self, id: AgentId) {
        if self.has_deferred() {
            lock(&self.inner.health.control)
                .deferred
                .records
                .remove(&id);
        }
    }

    /// The deferred version of a record, if one waits to be written.
    pub(super) fn overlay(&self, record: AgentRecord) -> AgentRecord {
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
    pub(super) fn deferred_record(&self, id: AgentId) -> Option<AgentRecord> {
        lock(&self.inner.health.control)
            .deferred
            .records
            .get(&id)
            .cloned()
    }

    pub(super) fn has_deferred(&self) -> bool {
        self.inner
            .health
            .has_deferred
            .load(std::sync::atomic::Ordering::Acquire)
    }

    pub(super) fn deferred_status(&self, id: AgentId) -> Option<crate::domain::Status> {
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

    /// Test hook: the next flush fails with `errno` (after the write it
    /// follows was applied in sled's memory). sled itself is not told, so
    /// a reopen still writes what it holds: the case of a write that
    /// reached the disk although its flush failed.
    #[cfg(test)]
    pub(crate) fn fail_next_flush(&self, errno: i32) {
        *lock(&self.inner.health.fake_flush_failure) = Some(errno);
    }

    /// Test hook: report this much free space instead of the real figure.
    #[cfg(test)]
    pub(crate) fn fake_free_space(&self, bytes: Option<u64>) {
        *lock(&self.inner.health.fake_free) = bytes;
    }
}
