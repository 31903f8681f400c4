//! The data directory is private (DESIGN §16): it holds every transcript.
//! A new one is made 0700; an existing one must belong to this user, and
//! anything in it that others could read or write is tightened (0700 for
//! directories, 0600 for files). Something owned by another user inside it
//! means someone else has been writing there: the daemon refuses to start.

use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum DataDirError {
    #[error(
        "{path} belongs to uid {owner}, not to this user (uid {me}); agentd keeps transcripts there and will not use it — pass another --data-dir, or fix its owner"
    )]
    Foreign { path: PathBuf, owner: u32, me: u32 },
    #[error("{0} exists and is not a directory; pass another --data-dir")]
    NotADirectory(PathBuf),
    #[error("cannot prepare the data directory {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> DataDirError + '_ {
    move |source| DataDirError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Makes `dir` private, creating it if needed. Returns how many entries
/// had their mode tightened.
pub fn prepare(dir: &Path) -> Result<usize, DataDirError> {
    match std::fs::symlink_metadata(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .map_err(io(dir))?;
            Ok(0)
        }
        Err(e) => Err(io(dir)(e)),
        Ok(meta) if !meta.is_dir() => Err(DataDirError::NotADirectory(dir.to_path_buf())),
        Ok(meta) => {
            let me = nix::unistd::getuid().as_raw();
            let mut tightened = 0;
            tighten(dir, me, &mut tightened)?;
            // Files sled made with the default umask inside a private
            // directory were never reachable: no alarm for them.
            let was_open = meta.permissions().mode() & 0o077 != 0;
            if was_open {
                tracing::warn!(dir = %dir.display(), tightened, "the data directory was readable by others; made it private (0700 directories, 0600 files)");
            } else if tightened > 0 {
                tracing::debug!(dir = %dir.display(), tightened, "made files in the private data directory 0600");
            }
            Ok(tightened)
        }
    }
}

fn tighten(path: &Path, me: u32, tightened: &mut usize) -> Result<(), DataDirError> {
    let meta = std::fs::symlink_metadata(path).map_err(io(path))?;
    // A symlink's own mode means nothing, and it is not followed.
    if meta.file_type().is_symlink() {
        return Ok(());
    }
    if meta.uid() != me {
        return Err(DataDirError::Foreign {
            path: path.to_path_buf(),
            owner: meta.uid(),
            me,
        });
    }
    let mode = meta.permissions().mode() & 0o7777;
    let wanted = if meta.is_dir() { 0o700 } else { mode & 0o700 };
    if mode & 0o077 != 0 {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(wanted))
            .map_err(io(path))?;
        *tightened += 1;
    }
    if meta.is_dir() {
        for entry in std::fs::read_dir(path).map_err(io(path))? {
            tighten(&entry.map_err(io(path))?.path(), me, tightened)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode(p: &Path) -> u32 {
        std::fs::metadata(p).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn a_new_directory_is_private() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("a/b/data");
        assert_eq!(prepare(&dir).unwrap(), 0);
        assert_eq!(mode(&dir), 0o700);
    }

    #[test]
    fn a_world_readable_directory_and_its_files_are_tightened() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("data");
        std::fs::create_dir_all(dir.join("store/blobs")).unwrap();
        std::fs::write(dir.join("store/db"), "x").unwrap();
        std::fs::write(dir.join("agentd.log"), "x").unwrap();
        for (p, m) in [
            (dir.clone(), 0o755),
            (dir.join("store"), 0o755),
            (dir.join("store/blobs"), 0o777),
            (dir.join("store/db"), 0o644),
            (dir.join("agentd.log"), 0o666),
        ] {
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(m)).unwrap();
        }
        assert_eq!(prepare(&dir).unwrap(), 5);
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(mode(&dir.join("store")), 0o700);
        assert_eq!(mode(&dir.join("store/blobs")), 0o700);
        assert_eq!(mode(&dir.join("store/db")), 0o600);
        assert_eq!(mode(&dir.join("agentd.log")), 0o600);
        assert_eq!(prepare(&dir).unwrap(), 0, "nothing left to tighten");
    }

    #[test]
    fn a_file_is_not_a_data_directory() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("data");
        std::fs::write(&file, "x").unwrap();
        assert!(matches!(
            prepare(&file),
            Err(DataDirError::NotADirectory(_))
        ));
    }
}
