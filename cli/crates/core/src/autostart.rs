//! Reaching the daemon, starting it when none answers (DESIGN §12).
//!
//! An autostarted `agentd` gets the same socket and data directory and is
//! detached (own process group, no terminal, output to `agentd.log` in the
//! data directory). Readiness is learned the way systemd learns it: the
//! daemon sends `READY=1` to `$NOTIFY_SOCKET`, a datagram socket that
//! agentctl binds for the occasion, so there is no polling.

use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use agentd_shared::client::{ConnectError, connect};
use agentd_shared::paths;
use agentd_shared::proto::agent_service_client::AgentServiceClient;
use tokio::net::UnixDatagram;
use tonic::transport::Channel;

use crate::exit::{Failure, UNREACHABLE};

/// Starting the daemon in a session of its own.
trait SpawnDetached {
    fn spawn_detached(&mut self) -> std::io::Result<tokio::process::Child>;
}

impl SpawnDetached for tokio::process::Command {
    /// A session of its own: a Ctrl-C aimed at this agentctl never reaches
    /// the daemon, and the daemon (with every process it starts) has no
    /// controlling terminal to write to or type into.
    #[allow(unsafe_code)]
    fn spawn_detached(&mut self) -> std::io::Result<tokio::process::Child> {
        // SAFETY: setsid is async-signal-safe and touches no memory of ours.
        unsafe {
            self.pre_exec(|| {
                nix::unistd::setsid()
                    .map(drop)
                    .map_err(std::io::Error::from)
            });
        }
        self.spawn()
    }
}

/// How long a starting daemon may take to report ready.
const READY_TIMEOUT: Duration = Duration::from_secs(15);

/// How long a connected daemon may take to answer its first request. A
/// socket the service manager holds accepts connections even when the
/// service cannot start; nothing would answer them.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(20);

/// A client of the socket at `path`, once something there answered a
/// health check: Err(ConnectError) when nothing could be reached, Ok(Err)
/// when it connected but failed to answer.
async fn agent_client(path: &Path) -> Result<Result<Client, Failure>, ConnectError> {
    let channel = connect(path).await?;
    let mut health = tonic_health::pb::health_client::HealthClient::new(channel.clone());
    let probe = health.check(tonic_health::pb::HealthCheckRequest {
        service: String::new(),
    });
    Ok(match tokio::time::timeout(ANSWER_TIMEOUT, probe).await {
        Ok(Ok(_)) => {
            Ok(AgentServiceClient::new(channel).max_decoding_message_size(64 * 1024 * 1024))
        }
        Ok(Err(status)) => Err(Failure::from(status)),
        Err(_) => Err(Failure::new(
            UNREACHABLE,
            format!(
                "something accepted the connection on {} but did not answer within {}s; \
                 if agentd runs as a user service, `systemctl --user status agentd.service` \
                 and `agentctl daemon logs` say why",
                path.display(),
                ANSWER_TIMEOUT.as_secs()
            ),
        )),
    })
}

pub type Client = AgentServiceClient<Channel>;

/// Which daemon to talk to, and whether to start it.
#[derive(Clone)]
pub struct Target {
    pub socket: PathBuf,
    pub data_dir: PathBuf,
    /// The config file an autostarted daemon reads (its default if None).
    pub config: Option<PathBuf>,
    autostart: bool,
}

impl Target {
    pub fn new(socket: Option<&Path>, data_dir: Option<&Path>, autostart: bool) -> Target {
        Target {
            socket: paths::absolute(&paths::socket_path(socket)),
            data_dir: paths::absolute(&paths::data_dir(data_dir)),
            config: None,
            autostart,
        }
    }

    /// The same socket, for a daemon started with this data directory and
    /// config file (a restart keeps the running daemon's).
    pub fn with_daemon_paths(&self, data_dir: PathBuf, config: PathBuf) -> Target {
        Target {
            socket: self.socket.clone(),
            data_dir,
            config: Some(config),
            autostart: true,
        }
    }

    /// Whether a daemon is started when none answers.
    pub fn autostarts(&self) -> bool {
        self.autostart
    }

    /// A client of the daemon if one answers now; never starts one.
    pub async fn running_client(&self) -> Result<Option<Client>, Failure> {
        match agent_client(&self.socket).await {
            Ok(c) => c.map(Some),
            Err(e) if !e.is_unreachable() => Err(Failure::new(UNREACHABLE, e.to_string())),
            Err(_) => Ok(None),
        }
    }

    /// A connected client, starting the daemon first if needed and allowed.
    pub async fn client(&self) -> Result<Client, Failure> {
        match agent_client(&self.socket).await {
            Ok(c) => return c,
            // Something is there that must not be used: never start a
            // daemon beside it, never send it anything.
            Err(e) if !e.is_unreachable() => return Err(Failure::new(UNREACHABLE, e.to_string())),
            Err(e) if !self.autostart => {
                return Err(Failure::new(
                    UNREACHABLE,
                    format!("{e}\n(start it with `agentd`, or drop --no-autostart)"),
                ));
            }
            Err(_) => {}
        }
        // With the user units installed, the service manager owns the
        // socket: start the socket unit rather than a daemon beside it.
        if self.start_socket_unit()
            && let Ok(c) = agent_client(&self.socket).await
        {
            return c;
        }
        self.start_daemon().await?;
        agent_client(&self.socket)
            .await
            .map_err(|e| Failure::new(UNREACHABLE, format!("agentd started but {e}")))?
    }

    /// Starts agentd.socket when this is the socket it listens on and a
    /// user service manager runs with the units installed.
    fn start_socket_unit(&self) -> bool {
        crate::systemd_units::unit_socket().as_deref() == Some(self.socket.as_path())
            && crate::systemd_units::installed()
            && crate::systemctl::manager_runs()
            && crate::systemctl::must(&["start", crate::systemd_units::SOCKET_NAME]).is_ok()
    }

    async fn start_daemon(&self) -> Result<(), Failure> {
        let unreachable = |m: String| Failure::new(UNREACHABLE, m);
        let exe = daemon_executable().map_err(unreachable)?;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.data_dir)
            .map_err(|e| unreachable(format!("cannot create {}: {e}", self.data_dir.display())))?;
        let log_path = self.data_dir.join("agentd.log");
        // Private from the start, like everything in the data directory
        // (the daemon would otherwise tighten it, and warn, at every start).
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .open(&log_path)
            .map_err(|e| unreachable(format!("cannot open {}: {e}", log_path.display())))?;
        let log_err = log
            .try_clone()
            .map_err(|e| unreachable(format!("cannot open {}: {e}", log_path.display())))?;

        let notify_dir = tempfile_dir()
            .map_err(|e| unreachable(format!("cannot create a readiness socket: {e}")))?;
        let notify_path = notify_dir.join("notify.sock");
        let notify = UnixDatagram::bind(&notify_path)
            .map_err(|e| unreachable(format!("cannot create a readiness socket: {e}")))?;

        let mut command = tokio::process::Command::new(&exe);
        command
            .arg("--socket")
            .arg(&self.socket)
            .arg("--data-dir")
            .arg(&self.data_dir);
        if let Some(config) = &self.config {
            command.arg("--config").arg(config);
        }
        let mut child = command
            // Sockets passed to this agentctl are not the daemon's.
            .env_remove("LISTEN_FDS")
            .env_remove("LISTEN_PID")
            .env_remove("LISTEN_FDNAMES")
            .env("NOTIFY_SOCKET", &notify_path)
            .stdin(Stdio::null())
            .stdout(Stdio::from(log))
            .stderr(Stdio::from(log_err))
            .spawn_detached()
            .map_err(|e| {
                unreachable(format!(
                    "no agentd answers on {} and starting {} failed: {e}",
                    self.socket.display(),
                    exe.display()
                ))
            })?;

        let mut buf = [0u8; 512];
        let outcome = tokio::select! {
            r = tokio::time::timeout(READY_TIMEOUT, wait_ready(&notify, &mut buf)) => match r {
                Ok(Ok(())) => Ok(()),
                Ok(Err(e)) => Err(format!("waiting for agentd to be ready failed: {e}")),
                Err(_) => Err(format!("agentd did not report ready within {}s", READY_TIMEOUT.as_secs())),
            },
            status = child.wait() => {
                // It may have lost a race with another autostart: if a daemon
                // answers now, use that one.
                if agent_client(&self.socket).await.is_ok() {
                    Ok(())
                } else {
                    let status = status.map(|s| s.to_string()).unwrap_or_else(|e| e.to_string());
                    Err(format!("agentd exited ({status}) before it was ready:\n{}", tail(&log_path)))
                }
            }
        };
        let _ = std::fs::remove_dir_all(&notify_dir);
        outcome.map_err(unreachable)
    }
}

async fn wait_ready(notify: &UnixDatagram, buf: &mut [u8]) -> std::io::Result<()> {
    loop {
        let n = notify.recv(buf).await?;
        let msg = String::from_utf8_lossy(&buf[..n]);
        if msg.lines().any(|l| l == "READY=1") {
            return Ok(());
        }
    }
}

/// `agentd` next to this executable, else in the first absolute PATH
/// directory that has one: the binary autostart and `service install`
/// run. Only a file that passes [`trusted_binary`] is taken, and never a
/// name for the OS to look up: a relative or empty PATH entry (`.`,
/// `PATH=/usr/bin::/bin`) resolves against the current directory, which
/// may be a cloned repository holding an `agentd` of its own.
pub fn find_daemon() -> Option<PathBuf> {
    let beside = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|dir| dir.join("agentd")));
    let on_path = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join("agentd"));
    beside
        .into_iter()
        .chain(on_path)
        .filter_map(|p| p.canonicalize().ok())
        .find(|p| trusted_binary(p).is_ok())
}

/// Whether `path` (absolute, canonical) may be run as the daemon: an
/// executable regular file that only this user or root could have put
/// there — it and its directory owned by this user or root, and writable
/// by no one else (group write only for this user's own primary group,
/// as under a user-private-group umask of 002).
pub fn trusted_binary(path: &Path) -> Result<(), String> {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let uid = nix::unistd::getuid().as_raw();
    let gid = nix::unistd::getgid().as_raw();
    let owned = |what: &str, p: &Path| -> Result<std::fs::Metadata, String> {
        let m = std::fs::metadata(p).map_err(|e| format!("{what} {}: {e}", p.display()))?;
        if m.uid() != uid && m.uid() != 0 {
            return Err(format!(
                "{what} {} belongs to uid {}, neither you nor root",
                p.display(),
                m.uid()
            ));
        }
        let mode = m.permissions().mode();
        if mode & 0o002 != 0 || (mode & 0o020 != 0 && m.gid() != gid) {
            return Err(format!(
                "{what} {} can be written by other users (mode {:o})",
                p.display(),
                mode & 0o7777
            ));
        }
        Ok(m)
    };
    if !path.is_absolute() {
        return Err(format!("{} is not an absolute path", path.display()));
    }
    let m = owned("the binary", path)?;
    if !m.is_file() || m.permissions().mode() & 0o111 == 0 {
        return Err(format!("{} is not an executable file", path.display()));
    }
    if let Some(dir) = path.parent() {
        owned("the directory", dir)?;
    }
    Ok(())
}

/// The daemon autostart runs, or what to do when there is none that may
/// be run.
fn daemon_executable() -> Result<PathBuf, String> {
    find_daemon().ok_or_else(|| {
        let beside = std::env::current_exe()
            .ok()
            .and_then(|exe| exe.parent().map(|dir| dir.join("agentd")));
        let why = beside
            .as_deref()
            .and_then(|p| p.canonicalize().ok())
            .and_then(|p| trusted_binary(&p).err())
            .map(|e| format!(" ({e})"))
            .unwrap_or_default();
        format!(
            "no agentd answers and none can be started: agentctl starts only an `agentd` beside \
             itself or in an absolute PATH directory, owned by you or root and writable by no one \
             else{why}; install both binaries together (`cargo install --path daemon` and \
             `--path cli`, or copy target/release/agentd next to agentctl), or start agentd yourself"
        )
    })
}

/// A private directory for the readiness socket.
fn tempfile_dir() -> std::io::Result<PathBuf> {
    let base = std::env::temp_dir();
    for attempt in 0..100u32 {
        let dir = base.join(format!("agentctl-{}-{attempt}", std::process::id()));
        match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::other("no free temporary directory name"))
}

/// The last lines of the daemon's log, for an error message.
fn tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(5)..].join("\n")
}
