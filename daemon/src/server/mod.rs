//! The daemon's server: prepares the data directory, opens the store,
//! recovers, binds the socket, serves the v1 API plus gRPC health and
//! reflection, and shuts down gracefully. Each step has its file:
//! `listener` (which socket), `reload` (SIGHUP), `shutdown` (the way
//! down); `service` answers the API, `convert` is the wire edge.

pub mod activation;
mod attach;
mod convert;
pub mod data_dir;
mod listener;
pub mod notify;
pub mod peer_auth;
mod reload;
mod service;
mod shutdown;
pub mod socket;
mod status;
mod watch;
mod wire_cache;

use std::path::PathBuf;

use agentd_shared::proto::agent_service_server::AgentServiceServer;
use tokio::signal::unix::{SignalKind, signal};
use tokio_stream::wrappers::UnixListenerStream;

use crate::config::{Config, ConfigError};
use crate::error::AgentdError;
use crate::store::{Store, StoreError};
use crate::supervisor::{DaemonInfo, Supervisor};
use listener::Listener;
use shutdown::Shutdown;

/// Largest request the daemon decodes; larger prompts get our own clear
/// INVALID_ARGUMENT rather than a transport error.
const MAX_REQUEST_BYTES: usize = 16 * 1024 * 1024;

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
    let sighup = signal(SignalKind::hangup()).map_err(ServeError::Signals)?;
    data_dir::prepare(&opts.data_dir)?;
    // Bind first: if another daemon serves this socket, say so before
    // touching the store it holds.
    let Listener {
        listener,
        path: socket_path,
        activated,
    } = Listener::open(&opts.socket, opts.inherited)?;
    let store_options = crate::store::StoreOptions {
        min_free_bytes: opts.config.store_min_free_mb.saturating_mul(1024 * 1024),
    };
    let store = Store::open(&opts.data_dir, store_options)?;
    let sup = Supervisor::new(
        store,
        opts.config,
        opts.models,
        DaemonInfo {
            socket: socket_path.clone(),
            data_dir: opts.data_dir.clone(),
            config_path: opts.config_path.clone(),
            socket_activated: activated,
        },
    );
    recover(&sup).await?;
    let (health, health_service) = tonic_health::server::health_reporter();
    health
        .set_serving::<AgentServiceServer<service::AgentApi>>()
        .await;
    let (reflection, reflection_v1alpha) = reflection()?;
    let api = AgentServiceServer::new(service::AgentApi::new(sup.clone()))
        .max_decoding_message_size(MAX_REQUEST_BYTES);

    let uid = nix::unistd::getuid().as_raw();
    let (shutdown, stopping) = Shutdown::install(sup.clone())?;
    let notifier = std::sync::Arc::new(opts.notifier);
    reload::on_sighup(sighup, sup, notifier.clone(), opts.config_path);

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
        .serve_with_incoming_shutdown(UnixListenerStream::new(listener), shutdown.signalled());
    let served = stopping.drain(server).await;
    listener::remove_socket(&socket_path, activated);
    served?;
    tracing::info!("agentd stopped");
    Ok(())
}

/// Recovers what the last stop left (agents interrupted mid-run), resumes
/// them unless configured not to, and starts the timers.
async fn recover(sup: &std::sync::Arc<Supervisor>) -> Result<(), ServeError> {
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
    Ok(())
}

type Reflection<T> = tonic_reflection::server::v1::ServerReflectionServer<T>;
type ReflectionAlpha<T> = tonic_reflection::server::v1alpha::ServerReflectionServer<T>;

/// Reflection in both versions: grpcurl and grpc-go speak v1, Python's
/// grpcio-reflection and older tools only v1alpha.
#[allow(clippy::type_complexity)]
fn reflection() -> Result<
    (
        Reflection<impl tonic_reflection::server::v1::ServerReflection>,
        ReflectionAlpha<impl tonic_reflection::server::v1alpha::ServerReflection>,
    ),
    ServeError,
> {
    let builder = || {
        tonic_reflection::server::Builder::configure()
            .register_encoded_file_descriptor_set(agentd_shared::proto::FILE_DESCRIPTOR_SET)
            .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
    };
    let v1 = builder()
        .build_v1()
        .map_err(|e| ServeError::Reflection(e.to_string()))?;
    let v1alpha = builder()
        .build_v1alpha()
        .map_err(|e| ServeError::Reflection(e.to_string()))?;
    Ok((v1, v1alpha))
}
