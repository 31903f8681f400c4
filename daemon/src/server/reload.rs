//! SIGHUP: reload the configuration in place (systemd's `Type=notify`
//! reload protocol: RELOADING, then READY).

use std::path::PathBuf;
use std::sync::Arc;

use tokio::signal::unix::Signal;

use super::notify::Notifier;
use crate::supervisor::Supervisor;

/// Reloads `config_path` on every SIGHUP `sighup` receives, for as long as
/// the daemon runs. A config that does not load leaves the old one in
/// force.
pub(super) fn on_sighup(
    mut sighup: Signal,
    sup: Arc<Supervisor>,
    notifier: Arc<Notifier>,
    config_path: PathBuf,
) {
    tokio::spawn(async move {
        while sighup.recv().await.is_some() {
            notifier.reloading();
            match sup.reload_config(&config_path) {
                Ok(r) => {
                    tracing::info!(applied = ?r.applied, needs_restart = ?r.needs_restart, "SIGHUP: configuration reloaded")
                }
                Err(e) => {
                    tracing::error!("SIGHUP: configuration not reloaded, the old one stays: {e}")
                }
            }
            notifier.ready();
        }
    });
}
