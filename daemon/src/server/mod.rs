//! The daemon's server: prepares the data directory, opens the store,
//! recovers, binds the socket, serves the v1 API plus gRPC health and
//! reflection, and shuts down gracefully.

pub mod activation;
mod attach;
mod convert;
pub mod data_dir;
pub mod notify;
pub mod peer_auth;
mod service;
pub mod socket;
mod status;
mod wire_cache;

use std::path::PathBuf;

use agentd_shared::proto::agent_service_server::AgentServiceServer;
use tokio::signal::unix::{SignalKind, signal};
use tokio_stream::wrappers::UnixListenerStream;

use crate::config::{Config, ConfigError};
use crate::error::AgentdError;
use crate::store::{Store, StoreError};
use crate::supervisor::{DaemonInfo, Supervisor};

/// Largest request the daemon decodes; larger prompts get our own clear
/// INVALID_ARGUMENT rather than a transport error.
const MAX_REQUEST_BYTES: usize = 16 * 1024 * 1024;

/// How long connections may stay open once shutdown has stopped the agents.
const CONNECTION_DRAIN: std::time::Duration = std::time::Duration::from_secs(3);

pub struct ServeOptions {
    /// Where to bind, unless `inherited` holds a listener already.
    pub socket: PathBuf,
    /// A listener passed by socket activation (`activation::take`).
    pub inherited: Option<activation::Inherited>,
    pub config_path: PathBuf,
    /// Where readiness and reloads are reported (`notify::Notifier::take`).
    pub notifier: notify::Notifier,
    pub data_dir: PathBuf,
    pub config: Config,
    /// Keys and endpoints, read from the environment before the daemon
    /// forgot them there (`main`).
    pub models: crate::model::ModelSettings,
}

/// Why the daemon could not start or serve.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    DataDir(#[from] data_dir::DataDirError),
    #[error(transparent)]
    Socket(#[from] socket::SocketError),
    #[error("socket activation: {0}")]
    Activation(#[from] activation::ActivationError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("recovering after the last stop failed: {0}")]
    Recovery(#[from] AgentdError),
    #[error("cannot install signal handlers: {0}")]
    Signals(#[source] std::io::Error),
    #[error("cannot build the reflection service: {0}")]
    Reflection(String),
    #[error("serving the API failed: {0}")]
    Transport(#[from] tonic::transport::Error),
}

/// Runs the daemon until SIGTERM or SIGINT.
pub async fn serve(opts: ServeOptions) -> Result<(), ServeError> {
    // First: a SIGHUP that comes while the store opens and agents recover
    // waits for the reload handler instead of killing the daemon.
    let mut sighup = signal(SignalKind::hangup()).map_err(ServeError::Signals)?;
    data_dir::prepare(&opts.data_dir)?;
    // Bind first: if another daemon serves this socket, say so before
    // touching the store it holds.
    let models = opts.models;
    let activated = opts.inherited.is_some();
    let (listener, socket_path) = match opts.inherited {
        Some(inherited) => {
            if inherited.path != opts.socket {
                tracing::info!(passed = %inherited.path.display(), "serving the socket the service manager passed");
            }
            let listener =
                tokio::net::UnixListener::from_std(inherited.listener).map_err(|source| {
                    socket::SocketError::Io {
                        path: inherited.path.clone(),
                        source,
                    }
                })?;
            (listener, inherited.path)
        }
        None => (socket::bind(&opts.socket)?, opts.socket.clone()),
    };
    let store = Store::open(&opts.data_dir, opts.config.store_options())?;
    let sup = Supervisor::new(
        store,
        opts.config,
        models,
        DaemonInfo {
            socket: socket_path.clone(),
            data_dir: opts.data_dir.clone(),
            config_path: opts.config_path.clone(),
            socket_activated: activated,
        },
    );
    let interrupted = sup.recover().await?;
    if !interrupted.is_empty() {
        tracing::info!(
            interrupted = interrupted.len(),
            "agents interrupted when agentd last stopped; resuming them unless resume_on_start is off"
        );
    }
    let (resumed, blocked) = sup.resume_after_start(&interrupted).await?;
    if resumed + blocked > 0 {
        tracing::info!(resumed, blocked, "resumed interrupted agents");
    }
    sup.start_housekeeping();

    let (health, health_service) = tonic_health::server::health_reporter();
    health
        .set_serving::<AgentServiceServer<service::AgentApi>>()
        .await;
    // Reflection in both versions: grpcurl and grpc-go speak v1, Python's
    // grpcio-reflection and older tools only v1alpha.
    let reflection_builder = || {
        tonic_reflection::server::Builder::configure()
            .register_encoded_file_descriptor_set(agentd_shared::proto::FILE_DESCRIPTOR_SET)
            .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
    };
    let reflection = reflection_builder()
        .build_v1()
        .map_err(|e| ServeError::Reflection(e.to_string()))?;
    let reflection_v1alpha = reflection_builder()
        .build_v1alpha()
        .map_err(|e| ServeError::Reflection(e.to_string()))?;
    let api = AgentServiceServer::new(service::AgentApi::new(sup.clone()))
        .max_decoding_message_size(MAX_REQUEST_BYTES);

    let uid = nix::unistd::getuid().as_raw();
    let mut sigterm = signal(SignalKind::terminate()).map_err(ServeError::Signals)?;
    let mut sigint = signal(SignalKind::interrupt()).map_err(ServeError::Signals)?;
    let notifier = std::sync::Arc::new(opts.notifier);
    let reload_notifier = notifier.clone();
    let reloading = sup.clone();
    let reload_path = opts.config_path.clone();
    tokio::spawn(async move {
        while sighup.recv().await.is_some() {
            // systemd's Type=notify reload protocol: RELOADING, then READY.
            reload_notifier.reloading();
            match reloading.reload_config(&reload_path) {
                Ok(r) => {
                    tracing::info!(applied = ?r.applied, needs_restart = ?r.needs_restart, "SIGHUP: configuration reloaded")
                }
                Err(e) => {
                    tracing::error!("SIGHUP: configuration not reloaded, the old one stays: {e}")
                }
            }
            reload_notifier.ready();
        }
    });
    let stopping = sup.clone();
    let (stopped_tx, stopped_rx) = tokio::sync::oneshot::channel();
    let agents_stopped = std::sync::Arc::new(tokio::sync::Notify::new());
    let agents_stopped_tx = agents_stopped.clone();
    let shutdown = async move {
        tokio::select! {
            _ = sigterm.recv() => tracing::info!("SIGTERM: shutting down"),
            _ = sigint.recv() => tracing::info!("SIGINT: shutting down"),
        }
        // Agents get their grace period while the server drains requests;
        // streams end as soon as the supervisor's shutdown token fires.
        tokio::spawn(async move {
            stopping.shutdown().await;
            agents_stopped_tx.notify_one();
            let _ = stopped_tx.send(());
        });
    };

    // Ready: the store is open and recovery has run (systemd Type=notify,
    // and agentctl's autostart, listen for this).
    notifier.ready();
    tracing::info!(socket = %socket_path.display(), activated, data_dir = %opts.data_dir.display(), version = agentd_shared::VERSION, "agentd ready");

    let server = tonic::transport::Server::builder()
        .layer(peer_auth::PeerUidLayer::new(uid))
        .add_service(health_service)
        .add_service(reflection)
        .add_service(reflection_v1alpha)
        .add_service(api)
        .serve_with_incoming_shutdown(UnixListenerStream::new(listener), shutdown);
    // Connections drain once the agents have stopped; a client that keeps
    // one open (blocked, or never reading) does not hold the daemon.
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
    let _ = stopped_rx.await;
    // A passed socket belongs to the service manager, which keeps
    // listening on it to start the next daemon.
    if !activated
        && let Err(e) = std::fs::remove_file(&socket_path)
        && e.kind() != std::io::ErrorKind::NotFound
    {
        tracing::warn!(error = %e, "could not remove the socket");
    }
    served?;
    tracing::info!("agentd stopped");
    Ok(())
}
