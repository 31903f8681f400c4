//! Keeping file tools inside the agent's working directory.
//!
//! Every path a file tool touches goes through [`resolve_contained`], which
//! returns the path the tool must then use. The returned path is made of a
//! canonical (symlink-free) existing prefix that lies under the canonical root,
//! followed by components that did not exist when it was checked and contain no
//! `..`, so neither `..` nor a symlink can lead a tool outside the root.

use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

/// How many symlinks whose targets do not exist may be followed by hand while
/// resolving one path (the kernel's limit for ordinary lookups is 40 too).
const MAX_DANGLING_LINKS: usize = 40;

/// Resolves `given` (relative to `root`, or absolute) to the path a file tool
/// should use, refusing anything outside `root`.
///
/// `..` components are removed lexically, then the longest existing ancestor is
/// canonicalized (resolving symlinks) and must lie under the canonicalized
/// root. The part of the path that does not exist yet is kept as is, so a file
/// about to be created resolves fine. A dangling symlink is followed to its
/// target, which must be inside the root as well.
pub fn resolve_contained(root: &Path, given: &str) -> Result<PathBuf, String> {
    if given.is_empty() {
        return Err("The path is empty.".to_string());
    }
    let canonical_root = std::fs::canonicalize(root).map_err(|e| {
        format!(
            "The agent's working directory {} cannot be resolved: {e}",
            root.display()
        )
    })?;
    let given_path = Path::new(given);
    let joined = if given_path.is_absolute() {
        given_path.to_path_buf()
    } else {
        canonical_root.join(given_path)
    };
    let resolved = resolve_existing_prefix(&normalize_lexically(&joined))?;
    if resolved.starts_with(&canonical_root) {
        Ok(resolved)
    } else {
        Err(format!(
            "{given} is outside the agent's working directory {}; file tools can only access paths inside it.",
            root.display()
        ))
    }
}

/// Removes `.` and `..` components without touching the file system. `..` at
/// the root stays at the root.
fn normalize_lexically(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::Prefix(_) | Component::RootDir => out.push(component.as_os_str()),
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(name) => out.push(name),
        }
    }
    out
}

/// Canonicalizes the longest existing ancestor of the absolute, normalized
/// `path` and appends the rest. Dangling symlinks are replaced by their target.
fn resolve_existing_prefix(path: &Path) -> Result<PathBuf, String> {
    let mut current = path.to_path_buf();
    'restart: for _ in 0..=MAX_DANGLING_LINKS {
        let mut existing = current.clone();
        // Components that do not exist, innermost first.
        let mut missing: Vec<OsString> = Vec::new();
        loop {
            if let Ok(canonical) = std::fs::canonicalize(&existing) {
                let mut resolved = canonical;
                for name in missing.iter().rev() {
                    resolved.push(name);
                }
                return Ok(resolved);
            }
            let is_symlink = std::fs::symlink_metadata(&existing)
                .map(|m| m.file_type().is_symlink())
                .unwrap_or(false);
            if is_symlink {
                // A symlink whose target does not exist (yet): creating a file
                // through it would create its target, so resolve it by hand.
                let target = std::fs::read_link(&existing)
                    .map_err(|e| format!("Cannot read the symlink {}: {e}", existing.display()))?;
                let parent = existing.parent().unwrap_or_else(|| Path::new("/"));
                let parent = std::fs::canonicalize(parent).map_err(|e| {
                    format!("Cannot resolve the directory {}: {e}", parent.display())
                })?;
                let mut next = normalize_lexically(&parent.join(target));
                for name in missing.iter().rev() {
                    next.push(name);
                }
                current = next;
                continue 'restart;
            }
            match existing.file_name() {
                Some(name) => {
                    missing.push(name.to_os_string());
                    existing.pop();
                }
                // Nothing exists, not even the file system root: give up.
                None => return Err(format!("Cannot resolve the path {}.", path.display())),
            }
        }
    }
    Err(format!(
        "Cannot resolve {}: too many levels of symbolic links.",
        path.display()
    ))
}

/// Resolves the path field `field` of a tool's input, turning a refusal into a
/// tool error.
/// `given`, an absolute path inside `checkout` but not inside `tree`, moved
/// to the same place under `tree`.
pub(super) fn translate(given: &str, checkout: &Path, tree: &Path) -> Option<PathBuf> {
    let path = normalize_lexically(Path::new(given));
    if !path.is_absolute() || path.starts_with(tree) {
        return None;
    }
    path.strip_prefix(checkout).ok().map(|rest| tree.join(rest))
}

/// Whether `prefix` (the start of a file) looks like binary data: it contains
/// a NUL byte.
pub(super) fn looks_binary(prefix: &[u8]) -> bool {
    prefix.contains(&0)
}

/// How much of the start of a file [`looks_binary`] inspects.
pub(super) const BINARY_SNIFF_BYTES: usize = 8 * 1024;

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_path_into_the_parent_checkout_translates_to_the_worktree() {
        let (checkout, tree) = (Path::new("/r"), Path::new("/r/.agentd/worktrees/a1"));
        assert_eq!(
            translate("/r/src/../src/lib.rs", checkout, tree),
            Some(PathBuf::from("/r/.agentd/worktrees/a1/src/lib.rs"))
        );
        assert_eq!(translate("/r/.agentd/worktrees/a1/x", checkout, tree), None);
        assert_eq!(translate("/elsewhere/x", checkout, tree), None);
        assert_eq!(translate("src/lib.rs", checkout, tree), None);
    }

    fn temp_root() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let canonical = std::fs::canonicalize(dir.path()).unwrap();
        (dir, canonical)
    }

    #[test]
    fn relative_paths_resolve_against_the_root() {
        let (_dir, root) = temp_root();
        std::fs::write(root.join("a.txt"), "x").unwrap();
        assert_eq!(
            resolve_contained(&root, "a.txt").unwrap(),
            root.join("a.txt")
        );
        assert_eq!(
            resolve_contained(&root, "./a.txt").unwrap(),
            root.join("a.txt")
        );
        assert_eq!(resolve_contained(&root, ".").unwrap(), root);
    }

    #[test]
    fn a_new_file_inside_is_allowed() {
        let (_dir, root) = temp_root();
        assert_eq!(
            resolve_contained(&root, "new/dir/file.rs").unwrap(),
            root.join("new/dir/file.rs")
        );
        let abs = root.join("sub/x.txt");
        assert_eq!(
            resolve_contained(&root, abs.to_str().unwrap()).unwrap(),
            abs
        );
    }

    #[test]
    fn dotdot_inside_the_root_is_fine() {
        let (_dir, root) = temp_root();
        std::fs::create_dir(root.join("sub")).unwrap();
        assert_eq!(
            resolve_contained(&root, "sub/../b.txt").unwrap(),
            root.join("b.txt")
        );
    }

    #[test]
    fn dotdot_escapes_are_refused() {
        let (_dir, root) = temp_root();
        let err = resolve_contained(&root, "../x").unwrap_err();
        assert!(
            err.contains("outside the agent's working directory"),
            "{err}"
        );
        assert!(err.contains(&root.display().to_string()), "{err}");
        assert!(resolve_contained(&root, "sub/../../x").is_err());
        assert!(resolve_contained(&root, "a/b/../../../etc/passwd").is_err());
    }

    #[test]
    fn absolute_paths_outside_are_refused() {
        let (_dir, root) = temp_root();
        let err = resolve_contained(&root, "/etc/passwd").unwrap_err();
        assert!(err.contains("outside"), "{err}");
        assert!(resolve_contained(&root, "/").is_err());
        // A sibling whose name merely starts with the root's name.
        let sibling = format!("{}-other/file", root.display());
        assert!(resolve_contained(&root, &sibling).is_err());
    }

    #[test]
    fn symlinks_pointing_outside_are_refused() {
        let (_dir, root) = temp_root();
        let (_outside_dir, outside) = temp_root();
        std::fs::write(outside.join("secret"), "s").unwrap();
        std::os::unix::fs::symlink(&outside, root.join("link_dir")).unwrap();
        std::os::unix::fs::symlink(outside.join("secret"), root.join("link_file")).unwrap();
        assert!(resolve_contained(&root, "link_dir/secret").is_err());
        assert!(resolve_contained(&root, "link_dir/new_file").is_err());
        assert!(resolve_contained(&root, "link_file").is_err());
    }

    #[test]
    fn dangling_symlinks_are_followed() {
        let (_dir, root) = temp_root();
        let (_outside_dir, outside) = temp_root();
        std::os::unix::fs::symlink(outside.join("not_yet"), root.join("dangling_out")).unwrap();
        assert!(resolve_contained(&root, "dangling_out").is_err());
        std::os::unix::fs::symlink(root.join("target"), root.join("dangling_in")).unwrap();
        assert_eq!(
            resolve_contained(&root, "dangling_in").unwrap(),
            root.join("target")
        );
        // A symlink loop is an error, not a hang.
        std::os::unix::fs::symlink(root.join("loop_b"), root.join("loop_a")).unwrap();
        std::os::unix::fs::symlink(root.join("loop_a"), root.join("loop_b")).unwrap();
        assert!(resolve_contained(&root, "loop_a").is_err());
    }

    #[test]
    fn symlinks_inside_resolve_to_their_target() {
        let (_dir, root) = temp_root();
        std::fs::create_dir(root.join("real")).unwrap();
        std::os::unix::fs::symlink(root.join("real"), root.join("alias")).unwrap();
        assert_eq!(
            resolve_contained(&root, "alias/f.txt").unwrap(),
            root.join("real/f.txt")
        );
    }

    #[test]
    fn a_non_canonical_root_works() {
        let (_dir, real) = temp_root();
        let (_links, links) = temp_root();
        let root_link = links.join("root");
        std::os::unix::fs::symlink(&real, &root_link).unwrap();
        assert_eq!(
            resolve_contained(&root_link, "f.txt").unwrap(),
            real.join("f.txt")
        );
        let abs = root_link.join("f.txt");
        assert_eq!(
            resolve_contained(&root_link, abs.to_str().unwrap()).unwrap(),
            real.join("f.txt")
        );
    }

    #[test]
    fn empty_path_is_an_error() {
        let (_dir, root) = temp_root();
        assert!(resolve_contained(&root, "").is_err());
    }
}
