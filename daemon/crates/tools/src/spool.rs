//! Where Bash keeps a command's output while it runs: one file per tool
//! call under `<data dir>/spool/<agent id>/`, named by the assistant entry
//! and the call's position in it (never by anything the model chose).
//!
//! If the daemon is killed mid-command, the result of the call is never
//! recorded; when the agent resumes, the call is answered as interrupted
//! with the output captured so far (DESIGN §5). Files go once the round's
//! results are in the transcript. The page cache is enough: this guards
//! against a daemon crash, not a machine crash.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::domain::AgentId;

/// The most a spool file holds; later output is only counted.
pub const MAX_SPOOL_BYTES: u64 = 1024 * 1024;
/// What is read back of a spool file: its start and its end.
const SHOWN_BYTES: usize = 8 * 1024;

/// One agent's spool directory.
#[derive(Debug, Clone)]
pub struct Spool {
    dir: PathBuf,
}

impl Spool {
    pub fn new(data_dir: &Path, agent: AgentId) -> Spool {
        Spool {
            dir: data_dir.join("spool").join(agent.to_string()),
        }
    }

    /// The file of call `index` of the assistant entry `seq`.
    pub fn path(&self, seq: u64, index: usize) -> PathBuf {
        self.dir.join(format!("{seq}-{index}.out"))
    }

    /// What call `index` of entry `seq` had written, shortened in the
    /// middle; None if it wrote nothing.
    pub fn captured(&self, seq: u64, index: usize) -> Option<String> {
        let bytes = std::fs::read(self.path(seq, index)).ok()?;
        if bytes.is_empty() {
            return None;
        }
        let text = if bytes.len() <= 2 * SHOWN_BYTES {
            String::from_utf8_lossy(&bytes).into_owned()
        } else {
            format!(
                "{}\n[… {} bytes left out …]\n{}",
                String::from_utf8_lossy(&bytes[..SHOWN_BYTES]),
                bytes.len() - 2 * SHOWN_BYTES,
                String::from_utf8_lossy(&bytes[bytes.len() - SHOWN_BYTES..])
            )
        };
        Some(text)
    }

    /// Removes the files of entry `seq`'s calls: their results are recorded.
    pub fn clear(&self, seq: u64) {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return;
        };
        let prefix = format!("{seq}-");
        for entry in entries.flatten() {
            if entry.file_name().to_string_lossy().starts_with(&prefix) {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }

    /// Removes the agent's spool directory.
    pub fn remove(&self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Appends output to a spool file as it arrives; never fails the command
/// (a spool that cannot be written only means less is known after a crash).
pub struct SpoolWriter {
    file: Option<std::fs::File>,
    written: u64,
}

impl SpoolWriter {
    pub fn create(path: Option<&Path>) -> SpoolWriter {
        let file = path.and_then(|p| {
            if let Some(dir) = p.parent() {
                let _ = std::fs::create_dir_all(dir);
            }
            std::fs::OpenOptions::new()
                .create(true)
                .write(true)
                .truncate(true)
                .open(p)
                .map_err(|e| tracing::debug!(path = %p.display(), error = %e, "no spool file"))
                .ok()
        });
        SpoolWriter { file, written: 0 }
    }

    pub fn write(&mut self, chunk: &[u8]) {
        let Some(file) = self.file.as_mut() else {
            return;
        };
        let room = MAX_SPOOL_BYTES.saturating_sub(self.written) as usize;
        let part = &chunk[..chunk.len().min(room)];
        if part.is_empty() || file.write_all(part).is_err() {
            self.file = None;
            return;
        }
        self.written += part.len() as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn captured_output_is_read_back_and_cleared() {
        let dir = tempfile::tempdir().unwrap();
        let spool = Spool::new(dir.path(), AgentId::random());
        let mut w = SpoolWriter::create(Some(&spool.path(4, 1)));
        w.write(b"step 1\n");
        w.write(b"step 2\n");
        drop(w);
        assert_eq!(spool.captured(4, 1).as_deref(), Some("step 1\nstep 2\n"));
        assert_eq!(spool.captured(4, 0), None);
        spool.clear(4);
        assert_eq!(spool.captured(4, 1), None);
    }

    #[test]
    fn long_output_keeps_its_start_and_end() {
        let dir = tempfile::tempdir().unwrap();
        let spool = Spool::new(dir.path(), AgentId::random());
        let mut w = SpoolWriter::create(Some(&spool.path(0, 0)));
        w.write(b"BEGIN");
        w.write(&vec![b'x'; 100_000]);
        w.write(b"END");
        drop(w);
        let text = spool.captured(0, 0).unwrap();
        assert!(text.starts_with("BEGIN"));
        assert!(text.ends_with("END"));
        assert!(text.contains("bytes left out"));
    }
}
