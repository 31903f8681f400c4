//! Shutting down: SIGTERM or SIGINT stops the agents (each at a safe point,
//! within its grace period) while the server drains requests; streams end
//! as soon as the supervisor's shutdown token fires. Connections still
//! open a moment after the agents stopped are closed, so a client that
//! never reads does not hold the daemon.

use std::sync::Arc;
use std::time::Duration;

use tokio::signal::unix::{Signal, SignalKind, signal};
use tokio::sync::{Notify, oneshot};

use super::ServeError;
use crate::supervisor::Supervisor;

/// How long connections may stay open once shutdown has stopped the agents.
const CONNECTION_DRAIN: Duration = Duration::from_secs(3);

/// The daemon's way down, from the signal to the last connection.
pub(super) struct Shutdown {
    sigterm: Signal,
    sigint: Signal,
    sup: Arc<Supervisor>,
    agents_stopped: Arc<Notify>,
    stopped_tx: oneshot::Sender<()>,
}

/// What the server waits on once shutdown has begun.
pub(super) struct Stopping {
    agents_stopped: Arc<Notify>,
    stopped_rx: oneshot::Receiver<()>,
}

impl Shutdown {
    /// Installs the signal handlers (before the daemon reports ready).
    pub(super) fn install(sup: Arc<Supervisor>) -> Result<(Shutdown, Stopping), ServeError> {
        let sigterm = signal(SignalKind::terminate()).map_err(ServeError::Signals)?;
        let sigint = signal(SignalKind::interrupt()).map_err(ServeError::Signals)?;
        let agents_stopped = Arc::new(Notify::new());
        let (stopped_tx, stopped_rx) = oneshot::channel();
        Ok((
            Shutdown {
                sigterm,
                sigint,
                sup,
                agents_stopped: agents_stopped.clone(),
                stopped_tx,
            },
            Stopping {
                agents_stopped,
                stopped_rx,
            },
        ))
    }

    /// Resolves when a signal asks the daemon to stop, and starts stopping
    /// the agents (the server's graceful-shutdown future).
    pub(super) async fn signalled(mut self) {
        tokio::select! {
            _ = self.sigterm.recv() => tracing::info!("SIGTERM: shutting down"),
            _ = self.sigint.recv() => tracing::info!("SIGINT: shutting down"),
        }
        let (sup, agents_stopped, stopped_tx) = (self.sup, self.agents_stopped, self.stopped_tx);
        tokio::spawn(async move {
            sup.shutdown().await;
            agents_stopped.notify_one();
            let _ = stopped_tx.send(());
        });
    }
}

impl Stopping {
    /// Serves until `server` ends, or until connections outlive the agents
    /// by [`CONNECTION_DRAIN`]; then waits for the agents to have stopped.
    pub(super) async fn drain<E>(
        self,
        server: impl std::future::Future<Output = Result<(), E>>,
    ) -> Result<(), E> {
        let agents_stopped = self.agents_stopped;
        let served = tokio::select! {
            served = server => served,
            _ = async {
                agents_stopped.notified().await;
                tokio::time::sleep(CONNECTION_DRAIN).await;
            } => {
                tracing::warn!(
                    "clients kept connections open {}s after the agents stopped; closing them",
                    CONNECTION_DRAIN.as_secs()
                );
                Ok(())
            }
        };
        let _ = self.stopped_rx.await;
        served
    }
}
