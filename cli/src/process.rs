//! Waiting for another process (the daemon) to go away.

use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

/// The process exists and has not exited (a zombie waiting for its parent
/// to reap it has stopped serving).
pub fn alive(pid: Pid) -> bool {
    if kill(pid, None).is_err() {
        return false;
    }
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the parenthesised command name.
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_none_or(|state| state != "Z"),
        Err(_) => false,
    }
}

/// Sends SIGTERM to `pid` and waits up to `limit` for it to be gone.
pub async fn terminate(pid: u32, limit: Duration) -> Result<(), String> {
    let pid = Pid::from_raw(i32::try_from(pid).map_err(|_| format!("bad daemon pid {pid}"))?);
    match kill(pid, Signal::SIGTERM) {
        Ok(()) => {}
        Err(nix::Error::ESRCH) => return Ok(()),
        Err(e) => return Err(format!("cannot signal agentd (pid {pid}): {e}")),
    }
    let start = Instant::now();
    while alive(pid) {
        if start.elapsed() > limit {
            return Err(format!(
                "agentd (pid {pid}) did not stop within {}s; `kill -9 {pid}` ends it (its agents resume at the next start)",
                limit.as_secs()
            ));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(())
}
