//! Cache-warm fan-out (DESIGN §6): when several forks are launched from one
//! assistant message, the provider's cache entry for their shared prefix
//! exists only once the first request's response has started. So the first
//! fork (the leader) is sent at once, and its siblings (followers) wait for
//! that moment and then go together, each reading the prefix from the cache
//! instead of each writing it.

use std::sync::Arc;

use tokio::sync::watch;

/// One group of sibling forks.
pub struct FanOut {
    started: watch::Sender<bool>,
}

impl FanOut {
    pub fn new() -> Arc<FanOut> {
        Arc::new(FanOut {
            started: watch::channel(false).0,
        })
    }

    /// The leader's response has started (or the leader is gone): the
    /// followers may go.
    pub fn release(&self) {
        self.started
            .send_if_modified(|s| !std::mem::replace(s, true));
    }

    pub fn released(&self) -> bool {
        *self.started.borrow()
    }

    pub async fn wait(&self) {
        let mut rx = self.started.subscribe();
        let _ = rx.wait_for(|s| *s).await;
    }
}

/// A run's place in a fan-out.
#[derive(Default)]
pub enum FanOutRole {
    /// Not part of one (or no longer: after the first request).
    #[default]
    Alone,
    /// Sent first; releases the others when its response starts.
    Leader(Lead),
    /// Waits for the leader before its first request.
    Follower(Arc<FanOut>),
}

/// The leader's hold on its group. A leader that ends (or never asks)
/// before its response starts must not hold its siblings forever: dropping
/// the hold releases them.
pub struct Lead(Arc<FanOut>);

impl Lead {
    pub fn new(group: Arc<FanOut>) -> Lead {
        Lead(group)
    }

    pub fn release(&self) {
        self.0.release();
    }
}

impl Drop for Lead {
    fn drop(&mut self) {
        self.0.release();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn followers_wait_for_the_leader_and_a_dropped_leader_releases_them() {
        let group = FanOut::new();
        let follower = tokio::spawn({
            let g = group.clone();
            async move { g.wait().await }
        });
        tokio::task::yield_now().await;
        assert!(!follower.is_finished());
        drop(FanOutRole::Leader(Lead::new(group.clone())));
        tokio::time::timeout(std::time::Duration::from_secs(5), follower)
            .await
            .unwrap()
            .unwrap();
        assert!(group.released());
    }
}
