//! The daemon's file-creation mask (DESIGN §16). Everything the daemon
//! makes for itself is private: the store (sled makes files whenever it
//! likes, from its own threads, so only the process's mask can cover them),
//! the spool, the logs. So the daemon runs with 077 — and what it makes on
//! the person's behalf gets the person's own mask back: tool commands
//! (`in_tool_child`), Write's files, and git's work in their repositories
//! (`as_the_person`: worktrees, merges), so a tree agentd checks out looks
//! like one the person's git would.

use std::sync::atomic::{AtomicU32, Ordering};

use nix::sys::stat::Mode;

/// The mask the daemon was started with: the person's.
static PERSON: AtomicU32 = AtomicU32::new(0o022);

/// Makes the daemon's own files private from here on; remembers the
/// person's mask. Called once, first thing in `main`.
pub fn make_private() {
    let old = nix::sys::stat::umask(Mode::from_bits_truncate(0o077));
    PERSON.store(old.bits(), Ordering::Relaxed);
}

/// The person's mask.
pub fn person() -> Mode {
    Mode::from_bits_truncate(PERSON.load(Ordering::Relaxed))
}

/// For a tool's child between fork and exec: the person's mask
/// (async-signal-safe: one system call on a value read before the fork).
pub fn in_tool_child(mask: Mode) {
    nix::sys::stat::umask(mask);
}

thread_local! {
    /// This thread has a file-system context of its own (`unshare`), so
    /// its mask is its own.
    static OWN_FS: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `work` with the person's mask, on this thread only: the thread
/// first takes a file-system context of its own (`unshare(CLONE_FS)`; the
/// rest of the daemon keeps 077), and gets the daemon's mask back after.
/// Threads `work` starts share the thread's context (and mask).
pub fn as_the_person<R>(work: impl FnOnce() -> R) -> R {
    let own = OWN_FS.with(|own| {
        if !own.get() && nix::sched::unshare(nix::sched::CloneFlags::CLONE_FS).is_ok() {
            own.set(true);
        }
        own.get()
    });
    if !own {
        // Without a context of its own, the mask would change for every
        // thread: the work runs with the daemon's (its files are private).
        return work();
    }
    struct Restore(Mode);
    impl Drop for Restore {
        fn drop(&mut self) {
            nix::sys::stat::umask(self.0);
        }
    }
    let _restore = Restore(nix::sys::stat::umask(person()));
    work()
}

/// Runs `work` with the daemon's own mask (077) on a thread that may be
/// working with the person's (`as_the_person`): what it makes is the
/// daemon's (a checkpoint store written in the middle of a rewind). On a
/// thread without a context of its own the mask is the daemon's already,
/// and nothing changes.
pub fn as_the_daemon<R>(work: impl FnOnce() -> R) -> R {
    if !OWN_FS.with(std::cell::Cell::get) {
        return work();
    }
    let before = nix::sys::stat::umask(Mode::from_bits_truncate(0o077));
    struct Restore(Mode);
    impl Drop for Restore {
        fn drop(&mut self) {
            nix::sys::stat::umask(self.0);
        }
    }
    let _restore = Restore(before);
    work()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt as _;

    #[test]
    fn the_persons_mask_applies_on_one_thread_only() {
        let dir = tempfile::tempdir().unwrap();
        PERSON.store(0o022, Ordering::Relaxed);
        let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        std::thread::scope(|s| {
            s.spawn(|| {
                // This thread plays the daemon: private files.
                nix::sched::unshare(nix::sched::CloneFlags::CLONE_FS).unwrap();
                nix::sys::stat::umask(Mode::from_bits_truncate(0o077));
                std::fs::write(dir.path().join("daemon"), "").unwrap();
                as_the_person(|| std::fs::write(dir.path().join("person"), "").unwrap());
                std::fs::write(dir.path().join("after"), "").unwrap();
            });
        });
        assert_eq!(mode(&dir.path().join("daemon")), 0o600);
        assert_eq!(mode(&dir.path().join("person")), 0o644);
        assert_eq!(mode(&dir.path().join("after")), 0o600);
    }
}
