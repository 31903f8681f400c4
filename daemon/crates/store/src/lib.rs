//! The store owns every byte on disk: agent records, transcripts, the
//! frozen prompt context of each agent, inboxes and the indexes that find
//! agents by name, parent and short id, in one sled database.
//!
//! Layout (versioned like containerd's metadata store):
//! - `v1/agents`: agent id (16 bytes) → record (`codec`)
//! - `v1/transcripts`: agent id ++ big-endian seq → entry; a prefix scan on
//!   the id yields the transcript in order (`transcript`)
//! - `v1/prompts`: agent id → frozen prompt context
//! - `v1/inbox`: agent id ++ arrival id → undelivered item (`inbox`)
//! - `v1/names`: name ++ 0x00 ++ agent id → (): agents by name (`agents`)
//! - `v1/children`: parent id ++ child id → (): agents by parent
//! - `v1/short_ids`: short id → agent id, every short id ever issued
//! - `v1/worktree_repos`: common git directory → (): every repository
//!   agentd has made a worktree in, for `worktrees` and the startup sweep
//!   (`repos`)
//! - `v1/merges`: key → a merge in progress, written before a merge touches
//!   the person's checkout and removed after (`merges`)
//! - `v1/mcp_approvals`: repository root ++ 0x00 ++ server name → the
//!   fingerprint of the `.mcp.json` server the person approved there
//!   (`approvals`)
//! - `v1/rule_approvals`: repository root ++ 0x00 ++ settings file and rule
//!   → the fingerprint of the allow rule the person approved there
//!   (`approvals`)
//! - `v1/budgets`: agent id → the cap on what it and its descendants
//!   spend (`budgets`)
//! - `v1/family_limits`: agent id → the limits its agent type set on its
//!   family (`family_limits`)
//! - `v1/call_decisions`: agent id ++ tool_use_id → what a PreToolUse hook
//!   decided of a call not yet answered (`call_decisions`)
//! - `meta`: `schema_version` → u32 big-endian (`migrate`)
//!
//! Durability (DESIGN §3): "acknowledged means durable". Every method named
//! `*_durable` returns only after sled has fsynced the write; every
//! transcript write goes through [`Store::append_durable`].
//!
//! A full disk (`health`) fails only the writes that need space, with
//! [`StoreError::DiskFull`]; reads go on, and once space is back the store
//! heals itself without a restart.
//!
//! Corrupt bytes are handled one way everywhere: the item is skipped, a line
//! is logged the first time, and it is counted ([`Store::corrupt_count`],
//! shown by `agentctl status`).

use agentd_domain as domain;

mod agents;
mod approvals;
mod budgets;
mod call_decisions;
mod codec;
mod error;
mod family_limits;
mod full_disk;
mod inbox;
pub mod memory;
mod merges;
mod migrate;
mod network;
mod record_index;
mod refresh;
mod repos;
mod swappable_trees;
mod transcript;

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub use approvals::{Approval, Approved};
pub use call_decisions::CallDecision;
pub use error::StoreError;
use full_disk::{health, reserve, unconfirmed};
pub use health::StoreOptions;
pub use inbox::InboxKey;
pub(crate) use swappable_trees::TreesHandle;
pub use transcript::Append;
pub use unconfirmed::Unconfirmed;

use crate::domain::AgentId;
use agentd_shared::sync::Unpoisoned as _;

/// A user entry holding one text block, for the store's tests.
#[cfg(test)]
pub(crate) fn test_entry(seq: u64, text: &str) -> crate::domain::TranscriptEntry {
    crate::domain::TranscriptEntry {
        seq,
        role: crate::domain::Role::User,
        content_json: format!(r#"[{{"type":"text","text":"{text}"}}]"#).into_bytes(),
        created_at_ms: crate::domain::now_ms(),
        usage: None,
        stop_reason: None,
        cache_point: None,
        compact: None,
        file_changes: Vec::new(),
        rule_decisions: Vec::new(),
    }
}

/// The on-disk schema this build reads and writes.
pub const SCHEMA_VERSION: u32 = 2;

/// Handle to the database. Cheap to clone.
#[derive(Clone)]
pub struct Store {
    inner: Arc<Inner>,
}

struct Inner {
    path: PathBuf,
    /// A random id made when the store was created (`meta/store_id`).
    instance_id: String,
    /// None only while the database is being reopened after a disk-full
    /// error (`health`).
    trees: Arc<swappable_trees::SwappableTrees>,
    health: health::Health,
    /// Keys of corrupt items seen so far (logged once each).
    corrupt: Mutex<HashSet<Vec<u8>>>,
    /// Writes sled holds in memory that a full disk kept off it.
    unconfirmed: unconfirmed::Ledger,
    /// The agent records in memory, for listing (`record_index`).
    records: record_index::RecordIndex,
    /// Writes since the database was last opened (`refresh`).
    writes_since_open: std::sync::atomic::AtomicU64,
}

/// The open database and its trees.
pub(crate) struct Trees {
    db: sled::Db,
    agents: sled::Tree,
    transcripts: sled::Tree,
    prompts: sled::Tree,
    inbox: sled::Tree,
    names: sled::Tree,
    children: sled::Tree,
    short_ids: sled::Tree,
    worktree_repos: sled::Tree,
    merges: sled::Tree,
    mcp_approvals: sled::Tree,
    rule_approvals: sled::Tree,
    /// Each agent's proxy connections (`network`).
    connections: sled::Tree,
    /// Hosts answered "always" (`network`).
    network_allow: sled::Tree,
    /// Agents' budgets (`budgets`).
    budgets: sled::Tree,
    /// Limits agent types set on families (`family_limits`).
    family_limits: sled::Tree,
    /// PreToolUse hooks' decisions of calls not yet answered.
    call_decisions: sled::Tree,
}

/// Removes the snapshot files sled did not finish writing
/// (`snap.<lsn>.generating`: written, synced, then renamed, so an unrenamed
/// one is incomplete), which sled 0.34 would otherwise read as the newest
/// snapshot and refuse to open the store as corrupt. A disk that filled up
/// while sled wrote one leaves it. Only while nobody holds the store: the
/// lock sled takes is tried first.
fn remove_unfinished_snapshots(path: &Path) {
    let Ok(entries) = std::fs::read_dir(path) else {
        return;
    };
    let unfinished: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("snap.") && n.ends_with(".generating"))
        })
        .collect();
    if unfinished.is_empty() {
        return;
    }
    let Ok(db) = std::fs::File::open(path.join("db")) else {
        return;
    };
    let Ok(lock) = nix::fcntl::Flock::lock(db, nix::fcntl::FlockArg::LockExclusiveNonblock) else {
        return;
    };
    for file in unfinished {
        match std::fs::remove_file(&file) {
            Ok(()) => {
                tracing::warn!(file = %file.display(), "removed a snapshot sled did not finish writing")
            }
            Err(e) => {
                tracing::warn!(file = %file.display(), error = %e, "cannot remove an unfinished snapshot")
            }
        }
    }
    drop(lock);
}

/// How long a flush may take before it counts as failed (`flush_sled`).
const FLUSH_WITHIN: Duration = Duration::from_secs(15);

/// What sled is asked to keep of the store in memory (its default is
/// 1 GiB). sled 0.34 does not hold to it for pages it wrote: an idle
/// daemon reopens the store to give those back (`refresh`).
const CACHE_BYTES: u64 = 32 * 1024 * 1024;

/// How long opening waits for the store's lock to be released.
const LOCK_WAIT: Duration = Duration::from_secs(3);

impl Trees {
    fn open(path: &Path) -> Result<Trees, StoreError> {
        // No background flusher: every write that must be durable flushes
        // itself, and a flusher hitting a full disk would poison the
        // database behind everyone's back.
        let config = sled::Config::new()
            .path(path)
            .flush_every_ms(None)
            .cache_capacity(CACHE_BYTES);
        remove_unfinished_snapshots(path);
        // The store's lock is a flock: a child a killed daemon had just
        // forked holds it until it execs (milliseconds). Another daemon
        // holding it for real is refused after the wait.
        let mut waited = Duration::ZERO;
        let db = loop {
            match config.open() {
                Err(e) if error::is_lock_held(&e) && waited < LOCK_WAIT => {
                    std::thread::sleep(Duration::from_millis(50));
                    waited += Duration::from_millis(50);
                }
                Err(e) if error::is_out_of_space(&e) => {
                    // sled leaves the snapshot it could not finish: gone
                    // before the next attempt.
                    remove_unfinished_snapshots(path);
                    return Err(StoreError::OpenDiskFull {
                        path: path.to_path_buf(),
                    });
                }
                opened => {
                    break opened.map_err(|source| StoreError::Open {
                        path: path.to_path_buf(),
                        source,
                    })?;
                }
            }
        };
        migrate::upgrade(&db, path)?;
        Ok(Trees {
            agents: db.open_tree("v1/agents")?,
            transcripts: db.open_tree("v1/transcripts")?,
            prompts: db.open_tree("v1/prompts")?,
            inbox: db.open_tree("v1/inbox")?,
            names: db.open_tree("v1/names")?,
            children: db.open_tree("v1/children")?,
            short_ids: db.open_tree("v1/short_ids")?,
            worktree_repos: db.open_tree("v1/worktree_repos")?,
            merges: db.open_tree("v1/merges")?,
            mcp_approvals: db.open_tree("v1/mcp_approvals")?,
            rule_approvals: db.open_tree("v1/rule_approvals")?,
            connections: db.open_tree("v1/connections")?,
            network_allow: db.open_tree("v1/network_allow")?,
            budgets: db.open_tree("v1/budgets")?,
            family_limits: db.open_tree("v1/family_limits")?,
            call_decisions: db.open_tree("v1/call_decisions")?,
            db,
        })
    }
}

impl Store {
    /// Opens (or creates) the store in `dir`, upgrading an older schema.
    /// Fails if another process holds it or if it was written by a newer one.
    pub fn open(dir: &Path, options: StoreOptions) -> Result<Store, StoreError> {
        let path = dir.join("store");
        let mut released = false;
        let trees = match Trees::open(&path) {
            Err(StoreError::OpenDiskFull { .. }) if reserve::release(dir) => {
                tracing::warn!(
                    reserve_mib = reserve::RESERVE_BYTES >> 20,
                    "the disk is full: released the store's reserve to open it; writes wait for space"
                );
                released = true;
                Trees::open(&path)?
            }
            opened => opened?,
        };
        let instance_id = migrate::instance_id(&trees.db)?;
        let health = health::Health::new(dir, options);
        health.keep_reserve();
        let store = Store {
            inner: Arc::new(Inner {
                health,
                instance_id,
                path,
                trees: swappable_trees::SwappableTrees::new(trees),
                corrupt: Mutex::new(HashSet::new()),
                unconfirmed: unconfirmed::Ledger::default(),
                records: record_index::RecordIndex::default(),
                writes_since_open: std::sync::atomic::AtomicU64::new(0),
            }),
        };
        if released {
            store.inner.health.reserve_released(&store);
        }
        Ok(store)
    }

    /// The open trees, for reading. Waits out a reopen (it takes
    /// milliseconds) rather than failing a read.
    fn trees(&self) -> Result<TreesHandle, StoreError> {
        self.inner
            .trees
            .get(Duration::from_secs(2))
            .ok_or(StoreError::Reopening)
    }

    /// The open trees, for a write that needs `space`: refused up front
    /// when the disk is (nearly) full, so sled is not pushed into its
    /// failed state.
    fn trees_for_write(&self) -> Result<TreesHandle, StoreError> {
        self.inner.health.check_space(self)?;
        self.count_write();
        self.trees()
    }

    /// Maps a sled error from a write: running out of space is `DiskFull`
    /// (and starts the healing), anything else is I/O.
    fn write_error(&self, e: sled::Error) -> StoreError {
        if error::is_out_of_space(&e) {
            self.inner.health.poisoned(self)
        } else {
            if let sled::Error::Io(io) = &e {
                self.inner.health.write_failed(io);
            }
            StoreError::Io(e)
        }
    }

    /// Forces everything written so far to disk (fsync).
    pub async fn flush(&self) -> Result<(), StoreError> {
        let trees = self.trees()?;
        self.flush_on(trees).await
    }

    /// Flushes the handle a write was made on. Not a fresh one: a reopen
    /// in between would have dropped the write (if sled could not flush
    /// it), and the new handle's flush would report it on disk.
    async fn flush_on(&self, trees: TreesHandle) -> Result<(), StoreError> {
        self.flush_sled(trees)
            .await?
            .map_err(|e| self.write_error(e))
    }

    /// Flushes, returning sled's own error for the caller to map.
    async fn flush_sled(&self, trees: TreesHandle) -> Result<sled::Result<()>, StoreError> {
        #[cfg(any(test, feature = "test-hooks"))]
        if let Some(errno) = self.inner.health.take_fake_flush_failure() {
            return Ok(Err(sled::Error::Io(std::io::Error::from_raw_os_error(
                errno,
            ))));
        }
        // sled's flush can wait forever for a buffer whose write failed
        // (ENOSPC): past the bound it counts as a failed write, and the
        // healer reopens the store.
        let flushing = tokio::task::spawn_blocking(move || trees.db.flush());
        match tokio::time::timeout(FLUSH_WITHIN, flushing).await {
            Ok(flushed) => Ok(flushed?.map(drop)),
            Err(_) => {
                tracing::error!(
                    ?FLUSH_WITHIN,
                    "a flush of the store did not finish in time; counting it as failed"
                );
                Ok(Err(sled::Error::Io(std::io::Error::from_raw_os_error(
                    libc::ENOSPC,
                ))))
            }
        }
    }

    /// Records a corrupt item: logged the first time it is seen, counted.
    fn note_corrupt(&self, what: &str, key: &[u8], why: &dyn std::fmt::Display) {
        let new = self.inner.corrupt.locked().insert(key.to_vec());
        if new {
            tracing::error!(
                what,
                key = %hex(key),
                error = %why,
                "skipping a corrupt item in the store (counted in `agentctl status`)"
            );
        }
    }

    /// Corrupt items skipped since the daemon started.
    pub fn corrupt_count(&self) -> u64 {
        self.inner.corrupt.locked().len() as u64
    }

    /// Where the database lives.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// This store's own id, the same across restarts: marks the processes
    /// its tools start (`process::reap`).
    pub fn instance_id(&self) -> &str {
        &self.inner.instance_id
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Key of an agent's item in a tree keyed by agent id ++ suffix.
fn prefixed(id: AgentId, suffix: &[u8]) -> Vec<u8> {
    let mut key = Vec::with_capacity(16 + suffix.len());
    key.extend_from_slice(id.as_bytes());
    key.extend_from_slice(suffix);
    key
}

/// Opens a store a test closed a moment ago: sled's writer threads can
/// hold the file lock a little after the last handle is dropped.
#[cfg(test)]
pub(crate) fn reopen_for_tests(dir: &Path) -> Store {
    let mut last = None;
    for _ in 0..200 {
        match Store::open(dir, StoreOptions::default()) {
            Ok(s) => return s,
            Err(e) => last = Some(e),
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("cannot reopen the store: {last:?}");
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A disk that fills up while sled writes a snapshot at open leaves
    /// `snap.<lsn>.generating`, which sled then takes for the newest
    /// snapshot and calls corrupt: the store never opened again (found by
    /// the torture run).
    #[test]
    fn an_unfinished_snapshot_does_not_brick_the_store() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), StoreOptions::default()).unwrap();
        drop(store);
        let unfinished = dir.path().join("store/snap.00000000000FFFFF.generating");
        std::fs::write(&unfinished, b"").unwrap();
        let reopened = reopen_for_tests(dir.path());
        drop(reopened);
        assert!(!unfinished.exists());
    }

    #[test]
    fn a_lock_released_a_moment_later_is_waited_for() {
        let dir = tempfile::tempdir().unwrap();
        // The holder: what a killed daemon's half-started child looks like
        // to the next daemon (the lock is taken, and goes within moments).
        let held = Store::open(dir.path(), StoreOptions::default()).unwrap();
        let release = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            drop(held);
        });
        let store = Store::open(dir.path(), StoreOptions::default());
        release.join().unwrap();
        assert!(store.is_ok(), "{:?}", store.err());
    }

    #[test]
    fn a_lock_held_for_good_is_refused_after_the_wait() {
        let dir = tempfile::tempdir().unwrap();
        let _held = Store::open(dir.path(), StoreOptions::default()).unwrap();
        let started = std::time::Instant::now();
        let err = Store::open(dir.path(), StoreOptions::default())
            .err()
            .unwrap();
        assert!(started.elapsed() >= LOCK_WAIT, "{:?}", started.elapsed());
        assert!(err.to_string().contains("could not acquire lock"), "{err}");
    }

    #[test]
    fn newer_schema_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        {
            let db = sled::open(dir.path().join("store")).unwrap();
            db.open_tree("meta")
                .unwrap()
                .insert(migrate::SCHEMA_KEY, &99u32.to_be_bytes())
                .unwrap();
            db.flush().unwrap();
        }
        // (sled's threads may hold the lock a moment after the drop above.)
        let mut result = Store::open(dir.path(), StoreOptions::default());
        for _ in 0..200 {
            if matches!(&result, Err(StoreError::TooNew { .. })) {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
            result = Store::open(dir.path(), StoreOptions::default());
        }
        let err = result.err().unwrap();
        assert!(matches!(err, StoreError::TooNew { found: 99, .. }), "{err}");
    }
}
