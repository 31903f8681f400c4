//! What can go wrong with the store, in words a person can act on.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot open the agentd store at {path}: {source}")]
    Open {
        path: PathBuf,
        #[source]
        source: sled::Error,
    },
    /// Opening needs to write (sled writes a snapshot), and the disk is
    /// full. Nothing is lost: the store opens once space is freed.
    #[error(
        "cannot open the agentd store at {path}: its disk is full; free some space and start agentd again (nothing is lost)"
    )]
    OpenDiskFull { path: PathBuf },
    #[error(
        "the store at {path} has schema version {found}, newer than this agentd understands ({supported}); upgrade agentd"
    )]
    TooNew {
        path: PathBuf,
        found: u32,
        supported: u32,
    },
    /// The data directory's file system is (nearly) full. Writes are
    /// refused until space is freed; reads are still served.
    #[error(
        "agentd's data directory {dir} is out of disk space ({free}); free some space and agentd continues on its own"
    )]
    DiskFull { dir: PathBuf, free: String },
    /// A state change took effect, but the record saying so waits for
    /// disk space: a crash before space is freed would undo it.
    #[error(
        "{what}, but that is not on disk yet: agentd's data directory {dir} is out of disk space ({free}); it is written as soon as space is freed, and until then a crash of agentd would undo it"
    )]
    NotOnDisk {
        what: String,
        dir: PathBuf,
        free: String,
    },
    #[error("store I/O failed: {0}")]
    Io(sled::Error),
    /// A state change took effect, but a write of the store failed for a
    /// reason other than space since it was opened: sled makes nothing
    /// durable after that, so the change is not on disk.
    #[error(
        "{what}, but that is not on disk: agentd's store failed a write ({cause}) and writes nothing more until agentd is restarted; see agentd's log, check the disk, and restart agentd"
    )]
    WriteFailed { what: String, cause: String },
    /// sled's own report of a full disk, where it surfaced outside the
    /// write paths that turn it into `DiskFull` (sled repeats a stored
    /// ENOSPC on later operations until the store is reopened).
    #[error(
        "agentd's data directory is out of disk space ({0}); free some space and agentd continues on its own"
    )]
    NoSpace(sled::Error),
    #[error("the store is being reopened after a disk-full error; try again in a moment")]
    Reopening,
    /// An item that must be read to act safely cannot be decoded (a
    /// budget): the action is refused rather than taken without it.
    #[error("{0}; agentd's log says which item")]
    Corrupt(String),
    /// An append meant to deliver inbox items, and one of them was no
    /// longer in the inbox: it was withdrawn, or it had never reached the
    /// disk and a reopen dropped it. Nothing was written; the deliverer
    /// reads the inbox again.
    #[error("the inbox changed while its items were being delivered; read it again")]
    InboxChanged,
    /// A transcript entry could not be read (it was skipped and counted):
    /// the conversation has a hole, and sending it on would misstate it.
    #[error(
        "entry {seq} of agent {id}'s transcript is unreadable (corrupt); the agent cannot continue from a transcript with a hole — its log shows the rest; start a new agent"
    )]
    TranscriptHole {
        id: crate::domain::AgentId,
        seq: u64,
    },
    #[error("store flush task failed: {0}")]
    Join(#[from] tokio::task::JoinError),
}

impl StoreError {
    pub fn is_disk_full(&self) -> bool {
        matches!(self, StoreError::DiskFull { .. } | StoreError::NoSpace(_))
    }
}

impl From<sled::Error> for StoreError {
    fn from(e: sled::Error) -> StoreError {
        if is_out_of_space(&e) {
            StoreError::NoSpace(e)
        } else {
            StoreError::Io(e)
        }
    }
}

/// True for the I/O errors that mean "no space left": ENOSPC and EDQUOT.
pub(crate) fn is_out_of_space(e: &sled::Error) -> bool {
    match e {
        sled::Error::Io(io) => {
            matches!(
                io.raw_os_error(),
                Some(code) if code == nix::libc::ENOSPC || code == nix::libc::EDQUOT
            // sled hands out copies of a stored error that keep only the
            // kind.
            ) || matches!(
                io.kind(),
                std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded
            )
        }
        _ => false,
    }
}

/// Whether opening failed because another process holds the store's lock
/// (sled reports it only in words).
pub(crate) fn is_lock_held(e: &sled::Error) -> bool {
    matches!(e, sled::Error::Io(io) if io.to_string().starts_with("could not acquire lock"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn out_of_space_is_recognised_also_in_the_copies_sled_hands_out() {
        let raw = |code| sled::Error::Io(std::io::Error::from_raw_os_error(code));
        assert!(is_out_of_space(&raw(nix::libc::ENOSPC)));
        assert!(is_out_of_space(&raw(nix::libc::EDQUOT)));
        // sled repeats a stored error as a copy with only its kind.
        for e in [raw(nix::libc::ENOSPC), raw(nix::libc::EDQUOT)] {
            assert!(is_out_of_space(&e.clone()), "{e:?}");
        }
        assert!(!is_out_of_space(&raw(nix::libc::EIO)));
        assert!(!is_out_of_space(&raw(nix::libc::EIO).clone()));
    }
}
