//! A small disk to fill: a tmpfs (root only, see [`crate::root`]), for
//! disk-full tests and the torture run.

// Test infrastructure: a failure here is a test failure.
#![allow(clippy::unwrap_used)]

use std::io::Write;
use std::path::{Path, PathBuf};

/// A tmpfs of `mib` MiB, unmounted when dropped.
pub struct SmallDisk {
    pub path: PathBuf,
}

impl SmallDisk {
    pub fn mount(at: &Path, mib: u64) -> Option<SmallDisk> {
        if crate::root::skip_unless_root("mounting a tmpfs") {
            return None;
        }
        std::fs::create_dir_all(at).unwrap();
        let out = std::process::Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={mib}m,mode=0700"),
                "tmpfs",
            ])
            .arg(at)
            .output()
            .unwrap();
        if !out.status.success() {
            crate::root::skip(&format!(
                "cannot mount a tmpfs here: {}",
                String::from_utf8_lossy(&out.stderr)
            ));
            return None;
        }
        Some(SmallDisk {
            path: at.to_path_buf(),
        })
    }

    pub fn free(&self) -> u64 {
        let s = nix::sys::statvfs::statvfs(&self.path).unwrap();
        s.blocks_available() * s.fragment_size()
    }

    /// Fills the disk until at most `leave` bytes are free.
    pub fn fill(&self, leave: u64) -> PathBuf {
        let ballast = self.path.join("ballast");
        let mut f = std::fs::File::create(&ballast).unwrap();
        let chunk = vec![0xa5u8; 64 * 1024];
        while self.free() > leave {
            let room = (self.free() - leave).min(chunk.len() as u64) as usize;
            if f.write_all(&chunk[..room.max(1)]).is_err() {
                break;
            }
        }
        let _ = f.flush();
        ballast
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(&self.path)
            .status();
    }
}
