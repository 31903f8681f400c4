//! Room the store keeps for itself (DESIGN §5: the daemon starts on a full
//! disk). Opening sled writes — it recovers its log and writes a snapshot —
//! so on a disk with no byte free the store could not open at all, and the
//! daemon could not even serve reads. A file of `RESERVE_BYTES` in the data
//! directory is that room: released to open the store when nothing else is
//! free, made again once the store is healthy with room to spare.

use std::path::{Path, PathBuf};

/// The room kept: enough for sled to open a store of hundreds of MB.
pub const RESERVE_BYTES: u64 = 16 * 1024 * 1024;

fn path(dir: &Path) -> PathBuf {
    dir.join("reserve")
}

/// Frees the reserve, if there is one; true if it was there.
pub fn release(dir: &Path) -> bool {
    std::fs::remove_file(path(dir)).is_ok()
}

/// Makes the reserve (its blocks allocated, not sparse) unless it exists,
/// when `free` bytes are free and at least `min_free` stay free after it.
/// True when the reserve is there afterwards.
pub fn keep(dir: &Path, free: u64, min_free: u64) -> bool {
    let file = path(dir);
    if file.exists() {
        return true;
    }
    if free < min_free.saturating_add(RESERVE_BYTES) {
        return false;
    }
    let made = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&file)
        .and_then(|f| {
            nix::fcntl::posix_fallocate(&f, 0, RESERVE_BYTES as i64).map_err(std::io::Error::from)
        });
    match made {
        Ok(()) => true,
        Err(e) => {
            tracing::debug!(error = %e, "cannot make the store's reserve");
            let _ = std::fs::remove_file(&file);
            false
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_reserve_is_made_only_with_room_to_spare_and_released_once() {
        let dir = tempfile::tempdir().unwrap();
        assert!(!keep(dir.path(), RESERVE_BYTES, 1));
        assert!(!path(dir.path()).exists(), "no room to spare");
        assert!(keep(dir.path(), u64::MAX, 1));
        let meta = std::fs::metadata(path(dir.path())).unwrap();
        assert_eq!(meta.len(), RESERVE_BYTES);
        assert!(
            std::os::unix::fs::MetadataExt::blocks(&meta) * 512 >= RESERVE_BYTES,
            "allocated, not sparse"
        );
        assert!(release(dir.path()));
        assert!(!release(dir.path()));
    }
}
