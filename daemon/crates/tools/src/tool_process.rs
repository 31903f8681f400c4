//! The process a tool starts (Bash's shell) and how everything it starts
//! is ended.
//!
//! A confined command runs in its agent's PID namespace
//! (`sandbox::pid_namespace`), held by the agent's `AgentProcesses`: the
//! process the daemon waits for is the command's keeper, which exits as the
//! command does. On a timeout or a cancel the command's process group is
//! killed; what it started in the background (and anything that left the
//! group) lives on in the namespace — the agent's next commands see it —
//! until the agent's run ends, when the namespace is killed whole.
//!
//! An unconfined command (`--sandbox off`) runs as before: in a session and
//! process group of its own, killed as a group, with the daemon's marker in
//! its environment so a daemon that starts again finds what is left
//! (`process::reap`).

use std::path::Path;
use std::process::ExitStatus;
use std::sync::Arc;
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::process::{Child, Command};

use crate::domain::NetworkMode;
use agentd_sandbox::network::proxy::Proxy;
use agentd_sandbox::network::{Egress, NO_PROXY_LOOPBACK, NO_PROXY_VARS, PROXY_VARS};
use agentd_sandbox::pid_namespace::{self, AgentNamespace};
use agentd_sandbox::{Confinement, GitQuarantine, Policy};

/// A started command.
pub struct ToolProcess {
    pub child: Child,
    how: How,
    /// The command has been waited for (or killed and reaped).
    ended: bool,
}

enum How {
    /// In the agent's namespace; `child` is the command's keeper.
    Contained,
    /// In a process group of its own; `child` is the shell.
    Grouped(ProcessGroup),
}

/// The processes of one agent's run: its PID namespace, made at its first
/// confined command and killed, with everything in it, when this is
/// dropped (the run's end). With network `proxy` the namespace has a
/// network of its own, and its proxy runs as long as it does.
#[derive(Default)]
pub struct AgentProcesses {
    namespace: tokio::sync::Mutex<Option<Made>>,
    /// Who decides the proxy's connections; None: nobody (all refused).
    egress: Option<Arc<dyn Egress>>,
    /// The agent's git quarantine: mounted in its namespace, and writable
    /// to its confined commands.
    git: Option<GitQuarantine>,
}

/// A namespace and the proxy serving it.
struct Made {
    namespace: AgentNamespace,
    _proxy: Option<Proxy>,
}

impl std::fmt::Debug for AgentProcesses {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentProcesses")
            .field("egress", &self.egress.is_some())
            .field("git", &self.git.is_some())
            .finish()
    }
}

impl AgentProcesses {
    /// Processes of their own (another namespace) whose connections the
    /// same egress decides.
    pub fn sibling(&self) -> AgentProcesses {
        AgentProcesses {
            namespace: tokio::sync::Mutex::default(),
            egress: self.egress.clone(),
            git: self.git.clone(),
        }
    }

    /// A run's processes whose proxy connections `egress` decides, with
    /// the agent's git quarantine when it has one.
    pub fn new(egress: Arc<dyn Egress>, git: Option<GitQuarantine>) -> AgentProcesses {
        AgentProcesses {
            namespace: tokio::sync::Mutex::default(),
            egress: Some(egress),
            git,
        }
    }

    /// Whether the run's namespace has been made and still lives.
    pub async fn has_namespace(&self) -> bool {
        self.namespace
            .lock()
            .await
            .as_mut()
            .is_some_and(|m| m.namespace.alive())
    }
}

/// Starts `cmd` (in `cwd`) in a process group of its own, unconfined,
/// killed when the daemon dies.
pub fn spawn_grouped(mut cmd: Command) -> std::io::Result<ToolProcess> {
    cmd.kill_on_drop(true);
    pid_namespace::dies_with_the_daemon(cmd.as_std_mut());
    let child = spawn_owned(&mut cmd)?;
    let group = ProcessGroup::of(&child);
    Ok(ToolProcess {
        child,
        how: How::Grouped(group),
        ended: false,
    })
}

/// Starts `cmd` confined by `policy`, in the namespace of `processes` (made
/// now if it has none, or if it died), unable to read `denied`. The error
/// says why it could not run.
pub async fn spawn_contained(
    processes: &AgentProcesses,
    mut cmd: Command,
    cwd: &Path,
    policy: &Policy,
    denied: &agentd_sandbox::ReadDenials,
) -> std::io::Result<ToolProcess> {
    let mode = pid_namespace::support().map_err(std::io::Error::other)?;
    let proxied = policy.network == NetworkMode::Proxy;
    let mut slot = processes.namespace.lock().await;
    if !slot.as_mut().is_some_and(|m| m.namespace.alive()) {
        // A namespace that died (its init killed) is made anew.
        *slot = None;
        let binds = processes.git.as_ref().map_or(&[][..], |g| &g.binds[..]);
        let mut namespace = AgentNamespace::make(mode, proxied, binds)
            .await
            .map_err(|e| {
                std::io::Error::other(format!("cannot make the agent's process namespace: {e}"))
            })?;
        let proxy = match namespace.take_proxy_listener() {
            Some(listener) => {
                let egress = processes
                    .egress
                    .clone()
                    .unwrap_or_else(|| Arc::new(agentd_sandbox::network::RefuseAll));
                Some(Proxy::start(listener, egress)?)
            }
            None => None,
        };
        *slot = Some(Made {
            namespace,
            _proxy: proxy,
        });
    }
    let Some(Made { namespace, .. }) = slot.as_ref() else {
        return Err(std::io::Error::other(
            "the agent's process namespace is gone",
        ));
    };
    if proxied {
        // Fail closed: a namespace made without a network of its own (for
        // another policy) would hand the command the machine's network.
        let Some(port) = namespace.proxy_port() else {
            return Err(std::io::Error::other(
                "the agent's namespace has no network of its own, so its network proxy cannot be enforced",
            ));
        };
        point_at_proxy(cmd.as_std_mut(), port);
    }
    // With a /proc of its own, the namespace itself keeps signals from
    // reaching outside it; Landlock's signal scope would also keep the
    // agent's commands from signalling each other (each is a domain).
    let mut policy = policy.clone();
    if let Some(git) = &processes.git {
        policy.also_writable.push(git.writable.clone());
    }
    let confinement = Arc::new(
        Confinement::build(
            &policy,
            &denied.paths,
            !namespace.own_proc(),
            namespace.proc_dir(),
        )
        .map_err(std::io::Error::other)?,
    );
    cmd.kill_on_drop(true);
    namespace.join(cmd.as_std_mut(), cwd, move || confinement.apply_in_child())?;
    let child = spawn_owned(&mut cmd)?;
    Ok(ToolProcess {
        child,
        how: How::Contained,
        ended: false,
    })
}

/// Sets the proxy variables on `cmd`, except those its caller set itself
/// (an external agent clears NO_PROXY: its model API is reached through
/// the proxy even on loopback).
fn point_at_proxy(cmd: &mut std::process::Command, port: u16) {
    let url = format!("http://127.0.0.1:{port}");
    let given: Vec<std::ffi::OsString> = cmd.get_envs().map(|(k, _)| k.to_owned()).collect();
    let unset = |name: &str| !given.iter().any(|g| g == name);
    for var in PROXY_VARS {
        if unset(var) {
            cmd.env(var, &url);
        }
    }
    for var in NO_PROXY_VARS {
        if unset(var) {
            cmd.env(var, NO_PROXY_LOOPBACK);
        }
    }
}

/// Spawns `cmd`, registered as the daemon's own child (not an orphan its
/// subreaper should reap: `process::adopt`).
fn spawn_owned(cmd: &mut Command) -> std::io::Result<Child> {
    let _spawning = agentd_sandbox::process::adopt::spawning();
    let child = cmd.spawn()?;
    if let Some(pid) = child.id() {
        agentd_sandbox::process::adopt::own(pid);
    }
    Ok(child)
}

impl ToolProcess {
    /// Waits for the command itself to exit (cancel-safe).
    pub async fn wait(&mut self) -> std::io::Result<ExitStatus> {
        let status = self.child.wait().await?;
        self.ended = true;
        if let How::Grouped(group) = &mut self.how {
            // The shell is reaped: its pid may be reused from now on.
            group.disarm();
        }
        Ok(status)
    }

    /// Kills the command and its process group (a contained command's
    /// group is found through its keeper, whose one child it is).
    pub fn kill(&mut self) {
        match &self.how {
            How::Grouped(group) => group.kill(),
            How::Contained => {
                if let Some(command) = self.child.id().and_then(only_child) {
                    let _ = killpg(command, Signal::SIGKILL);
                }
            }
        }
        let _ = self.child.start_kill();
    }

    /// Asks the command and its process group to end (SIGTERM), as `kill`
    /// finds them; a process that needs to save its state gets the chance.
    pub fn terminate(&self) {
        match &self.how {
            How::Grouped(group) => {
                if let Some(pgid) = group.pgid {
                    let _ = killpg(pgid, Signal::SIGTERM);
                }
            }
            How::Contained => {
                if let Some(command) = self.child.id().and_then(only_child) {
                    let _ = killpg(command, Signal::SIGTERM);
                }
            }
        }
    }

    /// Waits briefly for a killed command so it does not linger as a zombie.
    pub async fn reap(&mut self) {
        if tokio::time::timeout(Duration::from_secs(5), self.child.wait())
            .await
            .is_ok()
        {
            self.ended = true;
            if let How::Grouped(group) = &mut self.how {
                group.disarm();
            }
        }
    }
}

impl Drop for ToolProcess {
    /// A call dropped while its command runs (the agent's loop dropped at
    /// shutdown) kills the command's group, not only its keeper.
    fn drop(&mut self) {
        if !self.ended && matches!(self.how, How::Contained) {
            self.kill();
        }
    }
}

/// The one child of process `pid` (a keeper's command), as the daemon's
/// namespace numbers it.
fn only_child(pid: u32) -> Option<Pid> {
    let list = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).ok()?;
    let first = list.split_whitespace().next()?.parse::<i32>().ok()?;
    Some(Pid::from_raw(first))
}

/// The process group an unconfined command runs in (its pgid is the
/// shell's pid). It is killed when dropped unless disarmed, which must
/// happen once the shell has been reaped: its pid, and so the group id, may
/// then be reused.
struct ProcessGroup {
    pgid: Option<Pid>,
}

impl ProcessGroup {
    fn of(child: &Child) -> Self {
        Self {
            pgid: child
                .id()
                .and_then(|pid| i32::try_from(pid).ok())
                .map(Pid::from_raw),
        }
    }

    fn kill(&self) {
        if let Some(pgid) = self.pgid {
            let _ = killpg(pgid, Signal::SIGKILL);
        }
    }

    fn disarm(&mut self) {
        self.pgid = None;
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        self.kill();
    }
}
