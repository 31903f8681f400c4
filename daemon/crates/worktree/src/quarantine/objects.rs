//! The agent's new objects, verified and moved into the repository.
//!
//! The quarantine's object directory is the agent's to write, so the daemon
//! never lets libgit2 loose on it: it copies the loose objects and packs
//! (regular files, through no link, under caps) into a private directory of
//! its own, with no `alternates` of the agent's choosing, and reads them
//! from there. From the agent's ref it walks only what the repository lacks,
//! parsing each commit, tree and tag itself, checks that every object hashes
//! to its name and is within the size cap, and writes it into the
//! repository's object database. Whatever the agent wrote that is not
//! reachable from its ref stays behind.

use std::collections::HashMap;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use git2::{ObjectType, Odb, Oid, Repository};

use super::files;
use crate::WorktreeError;

/// The largest object agentd migrates.
const MAX_OBJECT_BYTES: usize = 512 * 1024 * 1024;
/// The most bytes of objects it copies out of one quarantine.
const MAX_COPY_BYTES: u64 = 4 * 1024 * 1024 * 1024;
/// The most objects one migration moves.
const MAX_OBJECTS: usize = 2_000_000;

fn refused(why: impl std::fmt::Display) -> WorktreeError {
    WorktreeError::refused(format!(
        "the agent's git quarantine holds something agentd will not take into the repository: {why}"
    ))
}

/// A private copy of a quarantine's objects, removed when dropped.
pub(super) struct Copied {
    dir: PathBuf,
    odb: Odb<'static>,
}

impl Drop for Copied {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Copied {
    /// A path in the copy's private directory for another file.
    pub(super) fn scratch(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// Copies the objects of the quarantine git directory `qgit`.
    pub(super) fn from(qgit: &OwnedFd) -> Result<Copied, WorktreeError> {
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let root = std::env::temp_dir().join(format!("agentd-{}-migrate", nix::unistd::getuid()));
        agentd_sandbox::private_dir(&root).map_err(|e| WorktreeError::refused(e.to_string()))?;
        let dir = root.join(format!(
            "{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        let io = |e: std::io::Error| {
            WorktreeError::refused(format!("cannot copy the agent's objects: {e}"))
        };
        std::fs::create_dir_all(dir.join("pack")).map_err(io)?;
        let mut budget = MAX_COPY_BYTES;
        let objects = files::dir(qgit, "objects", false).map_err(io)?;
        for name in files::names(&objects).map_err(io)? {
            if name.len() == 2 && name.bytes().all(|b| b.is_ascii_hexdigit()) {
                let sub = files::dir(&objects, &name, false).map_err(io)?;
                let to = dir.join(&name);
                std::fs::create_dir_all(&to).map_err(io)?;
                for file in files::names(&sub).map_err(io)? {
                    if file.len() == 38 && file.bytes().all(|b| b.is_ascii_hexdigit()) {
                        copy(&sub, &file, &to.join(&file), &mut budget)?;
                    }
                }
            }
        }
        if let Ok(pack) = files::dir(&objects, "pack", false) {
            for file in files::names(&pack).map_err(io)? {
                if file.starts_with("pack-") && (file.ends_with(".pack") || file.ends_with(".idx"))
                {
                    copy(&pack, &file, &dir.join("pack").join(&file), &mut budget)?;
                }
            }
        }
        let odb = Odb::new().map_err(|e| crate::git_error("cannot open the copied objects", e))?;
        odb.add_disk_alternate(&dir.to_string_lossy())
            .map_err(|e| crate::git_error("cannot open the copied objects", e))?;
        Ok(Copied { dir, odb })
    }
}

fn copy(from: &OwnedFd, name: &str, to: &Path, budget: &mut u64) -> Result<(), WorktreeError> {
    let bytes = files::read(from, name, *budget)
        .map_err(|e| refused(format!("{name}: {e}")))?
        .unwrap_or_default();
    *budget -= bytes.len() as u64;
    std::fs::write(to, bytes)
        .map_err(|e| WorktreeError::refused(format!("cannot copy the agent's objects: {e}")))
}

/// What an object names: a commit's tree and parents, a tree's entries
/// (not submodules' commits), a tag's object.
fn children(
    oid: Oid,
    kind: ObjectType,
    data: &[u8],
) -> Result<Vec<(Oid, Option<ObjectType>)>, WorktreeError> {
    let bad = |what: &str| refused(format!("{oid} is not a well-formed {kind}: {what}"));
    let hex = |s: &[u8]| {
        std::str::from_utf8(s)
            .ok()
            .filter(|s| s.len() == 40)
            .and_then(|s| Oid::from_str(s).ok())
    };
    let mut out = Vec::new();
    match kind {
        ObjectType::Commit => {
            let mut has_tree = false;
            for line in data.split(|b| *b == b'\n') {
                if line.is_empty() {
                    break;
                }
                if let Some(t) = line.strip_prefix(b"tree ") {
                    if has_tree {
                        return Err(bad("two trees"));
                    }
                    has_tree = true;
                    out.push((
                        hex(t).ok_or_else(|| bad("its tree"))?,
                        Some(ObjectType::Tree),
                    ));
                } else if let Some(p) = line.strip_prefix(b"parent ") {
                    out.push((
                        hex(p).ok_or_else(|| bad("a parent"))?,
                        Some(ObjectType::Commit),
                    ));
                }
            }
            if !has_tree {
                return Err(bad("no tree"));
            }
        }
        ObjectType::Tree => {
            let mut rest = data;
            while !rest.is_empty() {
                let space = rest
                    .iter()
                    .position(|b| *b == b' ')
                    .ok_or_else(|| bad("an entry"))?;
                let mode = &rest[..space];
                let nul = rest[space..]
                    .iter()
                    .position(|b| *b == 0)
                    .ok_or_else(|| bad("a name"))?
                    + space;
                let id = rest.get(nul + 1..nul + 21).ok_or_else(|| bad("an id"))?;
                let id = Oid::from_bytes(id).map_err(|_| bad("an id"))?;
                let child = match mode {
                    b"40000" => Some(Some(ObjectType::Tree)),
                    b"160000" => None,
                    b"100644" | b"100755" | b"120000" | b"100664" => Some(Some(ObjectType::Blob)),
                    _ => return Err(bad("a mode")),
                };
                if let Some(k) = child {
                    out.push((id, k));
                }
                rest = &rest[nul + 21..];
            }
        }
        ObjectType::Tag => {
            let first = data.split(|b| *b == b'\n').next().unwrap_or_default();
            let target = first
                .strip_prefix(b"object ")
                .and_then(hex)
                .ok_or_else(|| bad("its object"))?;
            out.push((target, None));
        }
        _ => {}
    }
    Ok(out)
}

/// Moves what `tips` reach and the repository lacks from `from` into
/// `repo`, each object verified first and written only after every object
/// it names (so a crash midway never leaves an object in the repository
/// whose children are missing: one that is there is whole, and the next
/// walk may stop at it). Returns how many it moved.
pub(super) fn migrate(
    repo: &Repository,
    from: &Copied,
    tips: &[(Oid, Option<ObjectType>)],
) -> Result<usize, WorktreeError> {
    let odb = repo
        .odb()
        .map_err(|e| crate::git_error("cannot open the repository's objects", e))?;
    // (object, the kind it was named as, its children are written)
    let mut stack: Vec<(Oid, Option<ObjectType>, bool)> =
        tips.iter().map(|(o, k)| (*o, *k, false)).collect();
    let mut found: HashMap<Oid, (ObjectType, Vec<u8>)> = HashMap::new();
    let mut moved = 0;
    while let Some((oid, want, children_written)) = stack.pop() {
        if children_written {
            let Some((kind, data)) = found.remove(&oid) else {
                continue;
            };
            let written = odb
                .write(kind, &data)
                .map_err(|e| crate::git_error("cannot write an object into the repository", e))?;
            if written != oid {
                return Err(refused(format!("{oid} was written as {written}")));
            }
            moved += 1;
            continue;
        }
        if found.contains_key(&oid) || odb.exists(oid) {
            continue;
        }
        if found.len() + moved >= MAX_OBJECTS {
            return Err(refused(format!("more than {MAX_OBJECTS} new objects")));
        }
        let (kind, data) = verified(from, oid, want)?;
        let named = children(oid, kind, &data)?;
        found.insert(oid, (kind, data));
        stack.push((oid, None, true));
        stack.extend(named.into_iter().map(|(o, k)| (o, k, false)));
    }
    Ok(moved)
}

/// The object `oid` of the copy, if it is what it was named as, within
/// the cap, and hashes to its name.
fn verified(
    from: &Copied,
    oid: Oid,
    want: Option<ObjectType>,
) -> Result<(ObjectType, Vec<u8>), WorktreeError> {
    let (size, kind) = from
        .odb
        .read_header(oid)
        .map_err(|_| refused(format!("{oid} is named but missing")))?;
    if let Some(w) = want.filter(|w| *w != kind) {
        return Err(refused(format!("{oid} is a {kind}, named as a {w}")));
    }
    if size > MAX_OBJECT_BYTES {
        return Err(refused(format!(
            "{oid} is {size} bytes, over the {MAX_OBJECT_BYTES}-byte limit"
        )));
    }
    let object = from
        .odb
        .read(oid)
        .map_err(|e| refused(format!("{oid} cannot be read: {}", e.message())))?;
    let data = object.data().to_vec();
    let hashed = Oid::hash_object(kind, &data).map_err(|e| crate::git_error("cannot hash", e))?;
    if hashed != oid {
        return Err(refused(format!("{oid} holds the object {hashed}")));
    }
    Ok((kind, data))
}
