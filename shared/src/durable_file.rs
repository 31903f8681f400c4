//! A small file replaced whole and durably: written beside itself, synced,
//! renamed over the old one, the directory synced. A reader sees the old
//! file or the new, never a part; after a crash, one of the two is there.

use std::io::Write as _;
use std::path::Path;

/// Replaces `dir/name` with `bytes` (creating `dir` if need be).
pub fn replace(dir: &Path, name: &str, bytes: &[u8]) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let tmp = dir.join(format!(".{name}.tmp"));
    let mut f = std::fs::File::create(&tmp)?;
    f.write_all(bytes)?;
    f.sync_all()?;
    std::fs::rename(&tmp, dir.join(name))?;
    std::fs::File::open(dir)?.sync_all()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    #[test]
    fn the_file_is_replaced_whole_and_nothing_is_left_beside_it() {
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("d");
        super::replace(&sub, "f.toml", b"one").unwrap();
        super::replace(&sub, "f.toml", b"two").unwrap();
        assert_eq!(std::fs::read(sub.join("f.toml")).unwrap(), b"two");
        let names: Vec<_> = std::fs::read_dir(&sub).unwrap().collect();
        assert_eq!(names.len(), 1);
    }
}
