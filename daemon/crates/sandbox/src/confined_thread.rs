//! The daemon's own writes into a repository an agent can change (making a
//! worktree with libgit2, git's submodule update), run on a thread of their
//! own that Landlock lets write only beneath directories the daemon has
//! verified. The paths libgit2 and git resolve are strings an agent's
//! background process could redirect with a link swapped in at the wrong
//! moment; under this ruleset such a write fails instead of landing in the
//! person's files. Landlock restricts only the calling thread (and what it
//! starts), so the rest of the daemon is unaffected, and the thread ends
//! with the work.
//!
//! On a kernel without Landlock the work runs unrestricted: no sandboxed
//! agent can exist there (they are refused), so no confined process races
//! it; the link checks made before (`crate::beneath`) still hold.

use std::os::fd::{AsFd, OwnedFd};

use landlock::{
    ABI, Access, AccessFs, CompatLevel, Compatible, PathBeneath, Ruleset, RulesetAttr,
    RulesetCreatedAttr, path_beneath_rules,
};

/// Runs `work` on a new thread that may write only beneath `writable` (and
/// to /dev/null), reading anything. Returns its result, or why the thread
/// could not be confined (the work did not run).
pub fn run<R: Send>(writable: &[&OwnedFd], work: impl FnOnce() -> R + Send) -> Result<R, String> {
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                restrict(writable)?;
                Ok(work())
            })
            .join()
            .map_err(|_| "the confined worker panicked".to_string())?
    })
}

fn restrict(writable: &[&OwnedFd]) -> Result<(), String> {
    if super::kernel_abi() < 1 {
        return Ok(());
    }
    let abi = ABI::V5;
    let err = |e: landlock::RulesetError| format!("cannot confine the daemon's git work: {e}");
    let mut created = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_all(abi))
        .map_err(err)?
        .create()
        .map_err(err)?
        .add_rules(path_beneath_rules(["/"], AccessFs::from_read(abi)))
        .map_err(err)?
        .add_rules(path_beneath_rules(
            ["/dev/null"],
            AccessFs::ReadFile | AccessFs::WriteFile,
        ))
        .map_err(err)?;
    for dir in writable {
        created = created
            .add_rule(PathBeneath::new(dir.as_fd(), AccessFs::from_all(abi)))
            .map_err(err)?;
    }
    created.restrict_self().map_err(err)?;
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn writes_outside_the_given_directories_fail_and_the_daemon_stays_free() {
        if super::super::kernel_abi() < 1 {
            return;
        }
        let tmp = tempfile::tempdir().unwrap();
        let allowed = tmp.path().join("allowed");
        let other = tmp.path().join("other");
        std::fs::create_dir_all(&allowed).unwrap();
        std::fs::create_dir_all(&other).unwrap();
        let fd = crate::beneath::open_dir(&allowed).unwrap();
        let (inside, outside) = run(&[&fd], || {
            (
                std::fs::write(allowed.join("f"), "x"),
                std::fs::write(other.join("f"), "x"),
            )
        })
        .unwrap();
        inside.unwrap();
        assert_eq!(
            outside.unwrap_err().kind(),
            std::io::ErrorKind::PermissionDenied
        );
        // This thread (and the daemon's others) were never restricted.
        std::fs::write(other.join("g"), "x").unwrap();
    }
}
