//! The daemon is a child subreaper: whatever an agent's tool starts stays
//! the daemon's descendant, even after a double fork, so the socket can
//! tell that a request comes from a tool (`server::peer_auth`). The
//! orphans it adopts that way are reaped here; the children the daemon
//! starts itself (registered while spawning) are left to their owners.

use std::collections::HashMap;
use std::sync::{Mutex, RwLock, RwLockReadGuard};

use agentd_shared::sync::{Unpoisoned as _, UnpoisonedRw as _};
use nix::sys::wait::{WaitPidFlag, waitpid};
use nix::unistd::Pid;

/// Held (shared) while a child is spawned and registered; the reaper holds
/// it exclusively, so it never sees a child of ours not yet registered.
static GATE: RwLock<()> = RwLock::new(());
/// The daemon's own children: pid → start time (tells a reused pid apart).
static OWN: Mutex<Option<HashMap<i32, u64>>> = Mutex::new(None);

/// Makes the daemon the reaper of its descendants' orphans.
pub fn become_subreaper() -> nix::Result<()> {
    nix::sys::prctl::set_child_subreaper(true)
}

/// Hold while spawning a child of the daemon's own; `own` it before
/// letting go.
pub fn spawning() -> RwLockReadGuard<'static, ()> {
    GATE.read_locked()
}

/// Registers `pid` as a child the daemon waits for itself.
pub fn own(pid: u32) {
    let Ok(pid) = i32::try_from(pid) else { return };
    let start = start_time(pid).unwrap_or(0);
    OWN.locked()
        .get_or_insert_with(HashMap::new)
        .insert(pid, start);
}

/// Field 22 of /proc/<pid>/stat: when the process started.
fn start_time(pid: i32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// The daemon's children now, as the kernel lists them.
fn children() -> Vec<i32> {
    let mut out = Vec::new();
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return out;
    };
    for task in tasks.flatten() {
        if let Ok(list) = std::fs::read_to_string(task.path().join("children")) {
            out.extend(
                list.split_whitespace()
                    .filter_map(|p| p.parse::<i32>().ok()),
            );
        }
    }
    out
}

/// Reaps the adopted orphans that have exited; forgets own children that
/// are gone. Returns how many were reaped.
pub fn reap_adopted() -> usize {
    let _gate = GATE.write_locked();
    let mut own = OWN.locked();
    let own = own.get_or_insert_with(HashMap::new);
    own.retain(|pid, start| start_time(*pid).is_some_and(|s| s == *start));
    let mut reaped = 0;
    for pid in children() {
        if own.contains_key(&pid) {
            continue;
        }
        if let Ok(status) = waitpid(Pid::from_raw(pid), Some(WaitPidFlag::WNOHANG))
            && status != nix::sys::wait::WaitStatus::StillAlive
        {
            reaped += 1;
        }
    }
    reaped
}
