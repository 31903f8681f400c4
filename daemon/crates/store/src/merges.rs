//! Merges in progress (`agentctl merge`): written, and flushed, before a
//! merge touches the person's checkout, removed once it is complete. A
//! merge a crash cut short is then found at the next start and finished or
//! undone (`worktree::merge_journal`): a merge is all or nothing across a
//! SIGKILL.

use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::PathBuf;

use prost::Message as _;

use super::{Store, StoreError};
use crate::domain::MergeJournal;

/// A journal entry as stored (paths as bytes: a checkout whose path is not
/// UTF-8 must still be found).
#[derive(Clone, PartialEq, prost::Message)]
struct StoredMerge {
    #[prost(bytes = "vec", tag = "1")]
    checkout: Vec<u8>,
    #[prost(string, tag = "2")]
    branch_ref: String,
    #[prost(string, tag = "3")]
    from: String,
    #[prost(string, tag = "4")]
    to: String,
}

impl Store {
    /// Records a merge about to change `journal.checkout`; on disk when
    /// this returns. The key ends it (`end_merge_durable`).
    pub async fn begin_merge_durable(&self, journal: &MergeJournal) -> Result<u64, StoreError> {
        let trees = self.trees_for_write()?;
        let key = trees.db.generate_id().map_err(|e| self.write_error(e))?;
        let stored = StoredMerge {
            checkout: journal.checkout.as_os_str().as_bytes().to_vec(),
            branch_ref: journal.branch_ref.clone(),
            from: journal.from.clone(),
            to: journal.to.clone(),
        };
        trees
            .merges
            .insert(key.to_be_bytes(), stored.encode_to_vec())
            .map_err(|e| self.write_error(e))?;
        self.flush_on(trees).await?;
        Ok(key)
    }

    /// The merge `key` is complete (or undone): forgotten, durably.
    pub async fn end_merge_durable(&self, key: u64) -> Result<(), StoreError> {
        let trees = self.trees_for_write()?;
        trees
            .merges
            .remove(key.to_be_bytes())
            .map_err(|e| self.write_error(e))?;
        self.flush_on(trees).await
    }

    /// The merges a crash cut short, oldest first. An entry that cannot be
    /// decoded is reported, not skipped silently.
    pub fn merges_in_progress(&self) -> Result<Vec<(u64, MergeJournal)>, StoreError> {
        let trees = self.trees()?;
        let mut out = Vec::new();
        for item in trees.merges.iter() {
            let (key, value) = item?;
            let Ok(key) = <[u8; 8]>::try_from(key.as_ref()).map(u64::from_be_bytes) else {
                tracing::error!("a merge journal entry has a malformed key; leaving it");
                continue;
            };
            match StoredMerge::decode(value.as_ref()) {
                Ok(s) => out.push((
                    key,
                    MergeJournal {
                        checkout: PathBuf::from(std::ffi::OsString::from_vec(s.checkout)),
                        branch_ref: s.branch_ref,
                        from: s.from,
                        to: s.to,
                    },
                )),
                Err(e) => {
                    tracing::error!(key, error = %e, "a merge journal entry cannot be read; leaving it")
                }
            }
        }
        Ok(out)
    }
}
