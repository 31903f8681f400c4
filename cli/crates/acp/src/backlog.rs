//! What waits to be written to the editor, counted in bytes. A replay
//! (`session/load`) turns the daemon's history into updates far faster
//! than stdout takes them; unbounded, the queue held the whole replay at
//! once (about 1.5 bytes of memory per byte of updates: 11 MiB for 4,000
//! turns, BENCHMARKS.md). The attach stream's reader waits for
//! `room` before taking the next event, so the daemon's stream pauses
//! instead (HTTP/2 flow control) and the bridge's memory stays flat
//! whatever the length of the session.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use tokio::sync::Notify;

/// Bytes queued for stdout above which the reader of the daemon's stream
/// waits: a few hundred updates, far more than one event makes.
pub const LIMIT: usize = 256 * 1024;

#[derive(Default)]
pub struct Backlog {
    bytes: AtomicUsize,
    /// stdout is gone: nothing will drain, nobody should wait.
    closed: AtomicBool,
    drained: Notify,
}

impl Backlog {
    pub fn queued(&self, n: usize) {
        self.bytes.fetch_add(n, Ordering::SeqCst);
    }

    pub fn written(&self, n: usize) {
        let before = self.bytes.fetch_sub(n, Ordering::SeqCst);
        if before - n <= LIMIT {
            self.drained.notify_waiters();
        }
    }

    /// The writer ended (stdout closed or failed).
    pub fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        self.drained.notify_waiters();
    }

    /// Returns once at most `LIMIT` bytes wait (or stdout is gone).
    pub async fn room(&self) {
        loop {
            let drained = self.drained.notified();
            tokio::pin!(drained);
            // Registered before the check, so a drain in between wakes it.
            drained.as_mut().enable();
            if self.closed.load(Ordering::SeqCst) || self.bytes.load(Ordering::SeqCst) <= LIMIT {
                return;
            }
            drained.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    #[tokio::test]
    async fn a_reader_waits_while_the_backlog_is_over_the_limit() {
        let backlog = Arc::new(Backlog::default());
        backlog.room().await;
        backlog.queued(LIMIT + 10);
        let waiting = tokio::spawn({
            let backlog = backlog.clone();
            async move { backlog.room().await }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!waiting.is_finished(), "over the limit: it waits");
        backlog.written(5);
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!waiting.is_finished(), "still over the limit");
        backlog.written(5);
        tokio::time::timeout(Duration::from_secs(5), waiting)
            .await
            .expect("at the limit: it goes on")
            .unwrap();
    }

    #[tokio::test]
    async fn a_closed_stdout_lets_the_reader_go_on() {
        let backlog = Arc::new(Backlog::default());
        backlog.queued(LIMIT * 2);
        let waiting = tokio::spawn({
            let backlog = backlog.clone();
            async move { backlog.room().await }
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        backlog.close();
        tokio::time::timeout(Duration::from_secs(5), waiting)
            .await
            .expect("nothing will drain: it goes on")
            .unwrap();
    }
}
