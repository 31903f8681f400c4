//! Who may touch agents' worktrees, and when: every settlement, removal and
//! merge of a tree holds one lock (two never race on a tree), and a tree
//! being made for an agent not stored yet is marked, so no sweep or prune
//! takes it for an orphan meanwhile.

use agentd_shared::sync::Unpoisoned as _;
use std::collections::HashSet;
use std::sync::Mutex;

#[derive(Default)]
pub(super) struct TreeKeeping {
    lock: tokio::sync::Mutex<()>,
    making: Mutex<HashSet<String>>,
}

impl TreeKeeping {
    /// Held while a tree is settled, removed or merged into.
    pub(super) async fn lock(&self) -> tokio::sync::MutexGuard<'_, ()> {
        self.lock.lock().await
    }

    /// Marks the tree `name` as being made until the guard is dropped (the
    /// record is stored by then).
    pub(super) fn making(&self, name: String) -> Making<'_> {
        self.making.locked().insert(name.clone());
        Making {
            keeping: self,
            name,
        }
    }

    /// Whether the tree `name` is being made.
    pub(super) fn is_making(&self, name: &str) -> bool {
        self.making.locked().contains(name)
    }
}

/// A tree being made (`TreeKeeping::making`).
pub(super) struct Making<'a> {
    keeping: &'a TreeKeeping,
    name: String,
}

impl Drop for Making<'_> {
    fn drop(&mut self) {
        self.keeping.making.locked().remove(&self.name);
    }
}
