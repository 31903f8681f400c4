//! Trees of one repository are made and forgotten one at a time.
//!
//! Before adding a tree, libgit2 reads every tree the repository records,
//! and one another thread has only half made (or half pruned) fails that
//! read, which libgit2 1.9 reports as "reference … is already checked
//! out". The torture run hit it with two agents' trees made at once.
//! Other processes (git itself) are not held off; the daemon's own
//! threads are.

use agentd_shared::sync::Unpoisoned as _;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, Mutex, MutexGuard};

/// One lock per repository, by its common git directory.
static REPOSITORIES: LazyLock<Mutex<HashMap<PathBuf, Arc<Mutex<()>>>>> =
    LazyLock::new(Mutex::default);

/// Held while a tree of the repository whose common directory is
/// `common` is added or pruned.
pub(super) struct RepositoryTurn {
    lock: Arc<Mutex<()>>,
}

impl RepositoryTurn {
    pub(super) fn of(common: &Path) -> RepositoryTurn {
        let mut all = REPOSITORIES.locked();
        let lock = all.entry(common.to_path_buf()).or_default().clone();
        RepositoryTurn { lock }
    }

    pub(super) fn take(&self) -> MutexGuard<'_, ()> {
        self.lock.locked()
    }
}
