//! The supervisor's timers: idle handles are swept (and the memory they
//! held given back, `memory`; an idle store is reopened to drop sled's
//! cache, `store::refresh`), and when the store
//! heals after a full disk, agents a full disk kept from resuming are
//! resumed, and agents whose notifications were deferred are woken.

use std::sync::Arc;
use std::time::Duration;

use super::Supervisor;

/// How often idle handles are swept.
const SWEEP_EVERY: Duration = Duration::from_secs(30);

impl Supervisor {
    /// Starts the timers; they end with the daemon.
    pub fn start_housekeeping(self: &Arc<Self>) {
        let sup = self.clone();
        // Orphans of tool processes, adopted as the subreaper, are reaped.
        self.runs.spawn(async move {
            let mut tick = tokio::time::interval(std::time::Duration::from_secs(1));
            loop {
                tokio::select! {
                    _ = tick.tick() => {
                        let reaped = tokio::task::spawn_blocking(crate::process::adopt::reap_adopted)
                            .await
                            .unwrap_or(0);
                        if reaped > 0 {
                            tracing::debug!(reaped, "reaped adopted tool processes");
                        }
                    }
                    _ = sup.runs.shutdown_token().cancelled() => return,
                }
            }
        });
        let sup = self.clone();
        self.runs.spawn(async move {
            let mut tick = tokio::time::interval(SWEEP_EVERY);
            tick.tick().await;
            loop {
                tokio::select! {
                    _ = tick.tick() => {
                        let kept = sup.registry.sweep_idle();
                        tracing::trace!(kept, "swept idle agent handles");
                        let store = sup.store.clone();
                        let trimmed = tokio::task::spawn_blocking(move || {
                            // Nothing runs or is held: sled's cache of
                            // what ran can go (`store::refresh`).
                            if kept == 0 {
                                store.refresh_if_worth_it();
                            }
                            crate::memory::give_back_if_freed()
                        })
                        .await
                        .unwrap_or(false);
                        if trimmed {
                            tracing::trace!("gave freed memory back");
                        }
                    }
                    _ = sup.runs.shutdown_token().cancelled() => return,
                }
            }
        });
        let sup = self.clone();
        self.runs.spawn(async move {
            let mut writable = sup.store.writable();
            loop {
                tokio::select! {
                    changed = writable.changed() => {
                        if changed.is_err() {
                            return;
                        }
                    }
                    _ = sup.runs.shutdown_token().cancelled() => return,
                }
                if *writable.borrow_and_update() {
                    sup.resume_deferred().await;
                    if let Err(e) = sup.wake_idle_with_inbox().await {
                        tracing::warn!(error = %e, "cannot wake agents after the store healed");
                    }
                }
            }
        });
    }
}
