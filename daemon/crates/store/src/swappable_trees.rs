//! Where the open database lives, and who holds it. An operation holds a
//! [`TreesHandle`] only while it runs. A reopen after a full disk takes the
//! trees out, waits until the last handle is dropped (each drop wakes it),
//! and puts new trees in; readers that come meanwhile wait for them. No
//! one polls: both waits are on one condition variable.

use std::ops::Deref;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

use super::Trees;
use agentd_shared::sync::Unpoisoned as _;

/// The open trees (None while a reopen has them out).
pub(super) struct SwappableTrees {
    trees: Mutex<Option<Arc<Trees>>>,
    /// Signalled when trees are put in and when a handle is dropped.
    changed: Condvar,
}

/// The open trees, held for one operation.
pub(crate) struct TreesHandle {
    trees: Option<Arc<Trees>>,
    slot: Arc<SwappableTrees>,
}

/// Trees taken out for a reopen.
pub(super) struct Taken(Arc<Trees>);

impl SwappableTrees {
    pub(super) fn new(trees: Trees) -> Arc<SwappableTrees> {
        Arc::new(SwappableTrees {
            trees: Mutex::new(Some(Arc::new(trees))),
            changed: Condvar::new(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Option<Arc<Trees>>> {
        self.trees.locked()
    }

    /// The open trees, waiting up to `patience` while a reopen has them
    /// out; None if it takes longer.
    pub(super) fn get(self: &Arc<Self>, patience: Duration) -> Option<TreesHandle> {
        let held = self.lock();
        let (held, _) = self
            .changed
            .wait_timeout_while(held, patience, |t| t.is_none())
            .unwrap_or_else(|p| p.into_inner());
        held.clone().map(|trees| TreesHandle {
            trees: Some(trees),
            slot: self.clone(),
        })
    }

    /// Takes the trees out; new readers wait until [`put`](Self::put).
    pub(super) fn take(&self) -> Option<Taken> {
        self.lock().take().map(Taken)
    }

    /// Waits up to `patience` for every handle on `taken` to be dropped,
    /// then hands it over, held by no one else (the caller closes it by
    /// dropping it). Else puts it back and returns None.
    pub(super) fn close(&self, taken: Taken, patience: Duration) -> Option<Trees> {
        let Taken(trees) = taken;
        let held = self.lock();
        let (mut held, _) = self
            .changed
            .wait_timeout_while(held, patience, |_| Arc::strong_count(&trees) > 1)
            .unwrap_or_else(|p| p.into_inner());
        match Arc::try_unwrap(trees) {
            Ok(trees) => {
                drop(held);
                Some(trees)
            }
            Err(still_used) => {
                *held = Some(still_used);
                drop(held);
                self.changed.notify_all();
                None
            }
        }
    }

    /// Puts freshly opened trees in and wakes who waits for them.
    pub(super) fn put(&self, trees: Trees) {
        *self.lock() = Some(Arc::new(trees));
        self.changed.notify_all();
    }
}

impl Deref for TreesHandle {
    type Target = Trees;

    fn deref(&self) -> &Trees {
        self.trees
            .as_ref()
            .expect("a handle holds its trees until dropped")
    }
}

impl Drop for TreesHandle {
    fn drop(&mut self) {
        // The count falls before the lock is taken, and the reopen checks
        // it under the lock: it cannot miss this drop.
        drop(self.trees.take());
        let _held = self.slot.lock();
        self.slot.changed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trees() -> (tempfile::TempDir, Trees) {
        let dir = tempfile::tempdir().unwrap();
        let trees = Trees::open(dir.path()).unwrap();
        (dir, trees)
    }

    #[test]
    fn a_reopen_waits_for_the_last_handle_and_readers_wait_for_the_new_trees() {
        let (_dir, first) = trees();
        let slot = SwappableTrees::new(first);
        let handle = slot.get(Duration::ZERO).unwrap();
        let taken = slot.take().unwrap();
        assert!(
            slot.get(Duration::from_millis(10)).is_none(),
            "nothing to read while the trees are out"
        );
        let closer = {
            let slot = slot.clone();
            std::thread::spawn(move || slot.close(taken, Duration::from_secs(10)))
        };
        std::thread::sleep(Duration::from_millis(50));
        assert!(!closer.is_finished(), "a handle is still held");
        drop(handle);
        assert!(
            closer.join().unwrap().is_some(),
            "closed once the handle went"
        );
        let reader = {
            let slot = slot.clone();
            std::thread::spawn(move || slot.get(Duration::from_secs(10)).is_some())
        };
        let (_dir2, second) = trees();
        slot.put(second);
        assert!(
            reader.join().unwrap(),
            "the waiting reader gets the new trees"
        );
    }

    #[test]
    fn a_handle_held_too_long_puts_the_trees_back() {
        let (_dir, first) = trees();
        let slot = SwappableTrees::new(first);
        let _handle = slot.get(Duration::ZERO).unwrap();
        let taken = slot.take().unwrap();
        assert!(slot.close(taken, Duration::from_millis(20)).is_none());
        assert!(slot.get(Duration::ZERO).is_some(), "back in place");
    }
}
