//! Processes left behind by a daemon that was killed (DESIGN §5): a Bash
//! command's shell dies with the daemon (parent-death signal), but what it
//! started in the background may live on and keep changing files after its
//! agent has moved on. Every tool process carries a marker variable naming
//! the store; when the daemon starts again, before any agent resumes, every
//! process of this user that still carries this store's marker is killed.
//!
//! A process that clears its environment (`env -i`) escapes the marker;
//! the sandbox (Landlock) is what bounds such a process.

use std::path::Path;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

/// The variable set in every tool process.
pub const MARKER_VAR: &str = "AGENTD_STORE_ID";

/// Kills every process (but this one) whose environment holds
/// `MARKER_VAR=marker`. Returns how many were killed.
pub fn reap_orphans(marker: &str) -> usize {
    reap_in(Path::new("/proc"), marker)
}

fn reap_in(proc_dir: &Path, marker: &str) -> usize {
    let needle = format!("{MARKER_VAR}={marker}");
    let me = std::process::id();
    let Ok(entries) = std::fs::read_dir(proc_dir) else {
        return 0;
    };
    let mut killed = 0;
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        if pid as u32 == me {
            continue;
        }
        // Unreadable (another user's, or gone): not ours.
        let Ok(environ) = std::fs::read(entry.path().join("environ")) else {
            continue;
        };
        if environ
            .split(|b| *b == 0)
            .any(|var| var == needle.as_bytes())
            && kill(Pid::from_raw(pid), Signal::SIGKILL).is_ok()
        {
            killed += 1;
        }
    }
    killed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_processes_with_this_marker_are_killed() {
        let marker = uuid::Uuid::new_v4().to_string();
        let other = uuid::Uuid::new_v4().to_string();
        let spawn = |m: &str| {
            std::process::Command::new("sleep")
                .arg("30")
                .env(MARKER_VAR, m)
                .spawn()
                .unwrap()
        };
        let mut ours = spawn(&marker);
        let mut theirs = spawn(&other);
        assert_eq!(reap_orphans(&marker), 1);
        let status = ours.wait().unwrap();
        assert_eq!(
            std::os::unix::process::ExitStatusExt::signal(&status),
            Some(9)
        );
        assert!(
            theirs.try_wait().unwrap().is_none(),
            "another store's process lives"
        );
        let _ = theirs.kill();
        let _ = theirs.wait();
    }
}
