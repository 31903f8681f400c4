//! A full disk, and healing from it without a restart. This file keeps the
//! space checks and the store's state; the healer thread is `healer`, the
//! writes kept for later are `deferred`.
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

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::watch;

use super::deferred::Deferred;
pub(crate) use super::deferred::DeferredNote;
use crate::domain::AgentRecord;
use crate::{Store, StoreError};
use agentd_shared::sync::Unpoisoned as _;

/// How often the healer looks at the free space.
pub(crate) const HEAL_INTERVAL: Duration = Duration::from_millis(200);
/// Space the healer waits for at the least before reopening (also when
/// `min_free_bytes` is 0): opening sled writes a little.
pub(crate) const HEAL_FLOOR: u64 = 1024 * 1024;

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
pub(crate) enum State {
    Healthy,
    Full {
        /// sled failed a write and must be reopened.
        poisoned: bool,
    },
}

/// Everything about the store's health that must change together, under
/// one lock: whether writes are allowed, whether a healer runs, and what
/// waits to be written.
pub(crate) struct Control {
    pub(crate) state: State,
    pub(crate) healer_running: bool,
    pub(crate) deferred: Deferred,
}

pub(crate) struct Health {
    pub(crate) dir: PathBuf,
    pub(crate) min_free: u64,
    /// The reserve was released to open the store: until it is made again,
    /// writes also leave its room free (it is for opening, not for agents).
    pub(crate) reserve_released: std::sync::atomic::AtomicBool,
    pub(crate) control: Mutex<Control>,
    /// Published under the control lock.
    pub(crate) writable: watch::Sender<bool>,
    /// Set while anything is deferred, so reads skip the lock otherwise.
    pub(crate) has_deferred: std::sync::atomic::AtomicBool,
    /// Set when a write failed for a reason other than space (sled then
    /// writes nothing more until reopened): why.
    pub(crate) write_failed: Mutex<Option<String>>,
    /// Free space reported instead of the file system's, for tests.
    pub(crate) fake_free: Mutex<Option<u64>>,
    /// Fail the next flush with this errno, for tests.
    #[cfg(any(test, feature = "test-hooks"))]
    pub(crate) fake_flush_failure: Mutex<Option<i32>>,
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.locked()
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1024.0 * 1024.0))
}

impl Health {
    pub(crate) fn new(dir: &Path, options: StoreOptions) -> Health {
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
            #[cfg(any(test, feature = "test-hooks"))]
            fake_flush_failure: Mutex::new(None),
        }
    }

    #[cfg(any(test, feature = "test-hooks"))]
    pub(crate) fn take_fake_flush_failure(&self) -> Option<i32> {
        lock(&self.fake_flush_failure).take()
    }

    pub(crate) fn write_failed(&self, e: &std::io::Error) {
        let mut failed = lock(&self.write_failed);
        if failed.is_none() {
            tracing::error!(error = %e, "a write of the store failed: agentd makes nothing durable until it is restarted");
            *failed = Some(e.to_string().chars().take(200).collect());
        }
    }

    /// Makes the store's reserve (`reserve`) if there is room to spare.
    pub(crate) fn keep_reserve(&self) {
        if super::reserve::keep(&self.dir, self.free_bytes(), self.min_free) {
            self.reserve_released
                .store(false, std::sync::atomic::Ordering::Release);
        }
    }

    /// The reserve was released to open the store: the store starts full
    /// (no write until the healer finds room for the writes and the
    /// reserve both), never writing into the last bytes at once — sled
    /// meeting ENOSPC then kept its flush waiting forever.
    pub(crate) fn reserve_released(&self, store: &Store) {
        self.reserve_released
            .store(true, std::sync::atomic::Ordering::Release);
        let mut control = lock(&self.control);
        self.enter_full(&mut control, store, false);
    }

    /// The free space writes must leave.
    pub(crate) fn needed(&self) -> u64 {
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

    pub(crate) fn free_bytes(&self) -> u64 {
        if let Some(free) = *lock(&self.fake_free) {
            return free;
        }
        match nix::sys::statvfs::statvfs(&self.dir) {
            Ok(s) => s.blocks_available().saturating_mul(s.fragment_size()),
            // Cannot tell: let the write try; sled reports a real failure.
            Err(_) => u64::MAX,
        }
    }

    pub(crate) fn full_error(&self, free: u64) -> StoreError {
        StoreError::DiskFull {
            dir: self.dir.clone(),
            free: self.free_words(free),
        }
    }

    pub(crate) fn free_words(&self, free: u64) -> String {
        format!(
            "{} free, agentd keeps at least {} free",
            mib(free),
            mib(self.min_free)
        )
    }

    /// Ok when a write may go ahead.
    pub(crate) fn check_space(&self, store: &Store) -> Result<(), StoreError> {
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
    pub(crate) fn poisoned(&self, store: &Store) -> StoreError {
        let free = self.free_bytes();
        self.enter_full(&mut lock(&self.control), store, true);
        self.full_error(free)
    }

    /// sled ran out of space flushing a record (and notification) it had
    /// applied: what it holds in memory is dropped by the reopen, so they
    /// are kept to be written again. One step with marking sled poisoned,
    /// so the healer cannot reopen and report healthy in between.
    pub(crate) fn poisoned_deferring(
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

    pub(crate) fn defer(
        &self,
        control: &mut Control,
        record: &AgentRecord,
        note: Option<DeferredNote>,
    ) {
        self.has_deferred
            .store(true, std::sync::atomic::Ordering::Release);
        control.deferred.records.insert(record.id, record.clone());
        control.deferred.notes.extend(note);
    }

    pub(crate) fn enter_full(&self, control: &mut Control, store: &Store, poisoned: bool) {
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
    pub(crate) fn ensure_healer(&self, control: &mut Control, store: &Store) {
        if control.healer_running {
            return;
        }
        let weak = Arc::downgrade(&store.inner);
        match std::thread::Builder::new()
            .name("agentd-store-healer".into())
            .spawn(move || super::healer::heal(weak))
        {
            Ok(_) => control.healer_running = true,
            // The next write or deferral tries again.
            Err(e) => tracing::error!(error = %e, "cannot start the store healer"),
        }
    }
}

impl Store {
    /// False while the disk is full; changes when it is healed.
    pub fn writable(&self) -> watch::Receiver<bool> {
        self.inner.health.writable.subscribe()
    }

    pub fn is_full(&self) -> bool {
        !*self.inner.health.writable.borrow()
    }

    /// Test hook: the next flush fails with `errno` (after the write it
    /// follows was applied in sled's memory). sled itself is not told, so
    /// a reopen still writes what it holds: the case of a write that
    /// reached the disk although its flush failed.
    #[cfg(any(test, feature = "test-hooks"))]
    pub fn fail_next_flush(&self, errno: i32) {
        *lock(&self.inner.health.fake_flush_failure) = Some(errno);
    }

    /// Test hook: report this much free space instead of the real figure.
    #[cfg(any(test, feature = "test-hooks"))]
    pub fn fake_free_space(&self, bytes: Option<u64>) {
        *lock(&self.inner.health.fake_free) = bytes;
    }
}
