//! The index between the repository and a quarantine. The agent stages in
//! its own copy; when its branch is taken into the repository, its index
//! is too (parsed from a private copy, its blobs verified and moved first),
//! so the tree's `git status` outside the sandbox shows what the agent's
//! did — unless someone changed the real index since the agent was handed
//! it, whose staging then stays.

use std::os::fd::OwnedFd;
use std::path::Path;

use git2::{Index, ObjectType, Repository};
use sha2::Digest as _;

use super::files;
use super::layout::MAX_COPY_BYTES;
use super::objects::{self, Copied};
use crate::WorktreeError;

/// A digest of what `index` holds (paths, modes, ids, stages), not of
/// the stat data `git status` refreshes.
pub(super) fn digest(index: &Index) -> String {
    let mut h = sha2::Sha256::new();
    for e in index.iter() {
        h.update(&e.path);
        h.update([0]);
        h.update(e.mode.to_le_bytes());
        h.update(e.id.as_bytes());
        h.update((e.flags & 0x3000).to_le_bytes());
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// The digest of the index file at `path` (an empty index when missing).
pub(super) fn digest_at(path: &Path) -> Result<String, WorktreeError> {
    let index = Index::open(path).map_err(|e| crate::git_error("cannot read the index", e))?;
    Ok(digest(&index))
}

/// Makes the quarantine's index the real one at `real`; false when the
/// quarantine has none.
pub(super) fn adopt(
    repo: &Repository,
    from: &Copied,
    qgit: &OwnedFd,
    real: &Path,
) -> Result<bool, WorktreeError> {
    let io =
        |e: std::io::Error| WorktreeError::refused(format!("cannot read the agent's index: {e}"));
    let Some(bytes) = files::read(qgit, "index", MAX_COPY_BYTES).map_err(io)? else {
        return Ok(false);
    };
    let copy = from.scratch("index");
    std::fs::write(&copy, bytes).map_err(io)?;
    let theirs =
        Index::open(&copy).map_err(|e| crate::git_error("cannot parse the agent's index", e))?;
    let blobs: Vec<_> = theirs
        .iter()
        .filter(|e| e.mode != 0o160000)
        .map(|e| (e.id, Some(ObjectType::Blob)))
        .collect();
    objects::migrate(repo, from, &blobs)?;
    let mut ours = Index::open(real).map_err(|e| crate::git_error("cannot open the index", e))?;
    ours.clear()
        .map_err(|e| crate::git_error("cannot clear the index", e))?;
    for entry in theirs.iter() {
        ours.add(&entry)
            .map_err(|e| crate::git_error("cannot add to the index", e))?;
    }
    ours.write()
        .map_err(|e| crate::git_error("cannot write the index", e))?;
    Ok(true)
}
