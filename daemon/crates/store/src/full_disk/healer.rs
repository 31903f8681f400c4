//! The healer: a thread that watches the free space while the store is
//! full, reopens a poisoned database, writes what was deferred, and
//! reports the store writable again.

use std::sync::Weak;
use std::time::Duration;

use super::deferred::write_deferred;
use super::health::{HEAL_FLOOR, HEAL_INTERVAL, State, lock};
use crate::{Inner, Store, StoreError};

/// Runs until the store is writable again with nothing deferred (or the
/// store is dropped).
pub(crate) fn heal(weak: Weak<Inner>) {
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
                if crate::error::is_out_of_space(&e) {
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
    // Every operation holds its handle only while it runs. Nothing is
    // flushed: the disk was full, and what sled could not write is what
    // the reopen must drop.
    crate::refresh::reopen(
        store,
        Duration::from_secs(5),
        |_| {},
        || {
            // Not poisoned any more, said before anyone can write to the
            // new handle (none can while the slot is empty), so a write
            // failing on it is not forgotten.
            if let State::Full { poisoned } = &mut lock(&store.inner.health.control).state {
                *poisoned = false;
            }
            *lock(&store.inner.health.write_failed) = None;
        },
    )?;
    // The index first: until it is dropped it may hold what the ledger
    // still hides.
    store.index_dropped();
    store.inner.unconfirmed.clear();
    Ok(())
}
