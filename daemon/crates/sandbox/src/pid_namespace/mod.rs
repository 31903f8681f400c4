//! Containment of a confined agent's processes (DESIGN §14): its commands
//! run in a PID namespace of the agent's own, so nothing they start can
//! outlive the daemon or the agent's run, whatever it does — `setsid`, a
//! double fork, `env -i`, `nohup`, a new process name. An environment
//! marker can be dropped and a process tree left; a PID namespace cannot be
//! left, and the kernel kills everything in it when its pid 1 dies.
//!
//! One namespace per run (`AgentNamespace`), made at the agent's first
//! command: a **keeper** (the daemon's child, killed by its parent-death
//! signal when the daemon dies) and the namespace's **init** (pid 1, killed
//! when the keeper dies). Each command is forked into it by a keeper of its
//! own, which the daemon waits for (`fork`). So a server one command starts
//! with `&` is seen, and can be stopped, by the agent's next commands (the
//! namespace has its own `/proc`, so `ps`, `kill` and `pkill` agree on ids);
//! when the run ends the keeper is killed and the namespace goes with it.
//!
//! Without privilege (the usual case: agentd runs as the person), the
//! namespaces are made inside a user namespace that maps only the person's
//! own uid and gid onto themselves: files keep their owner (other users'
//! files show as `nobody`), and a command holds no capability once it
//! execs.
//!
//! The keepers and the init exec the daemon's own binary in a helper mode
//! (`helper_main`) once forked, so they do not keep a copy of the daemon's
//! memory alive; without the binary (unit tests) they run the same loops
//! in the fork.

mod binds;
mod fork;

use std::ffi::CString;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::Path;
use std::sync::OnceLock;
use std::time::Duration;

pub use binds::{Bind, FileId};
use fork::{JoinPlan, MakePlan, NetPlan, UserMaps};

/// How this machine lets the daemon make PID namespaces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Directly: the daemon may (root, or CAP_SYS_ADMIN).
    Direct,
    /// Inside a user namespace of the agent's own.
    UserNamespace,
}

impl Mode {
    pub fn describe(self) -> &'static str {
        match self {
            Mode::Direct => "a PID namespace per agent",
            Mode::UserNamespace => "a PID namespace per agent, in a user namespace",
        }
    }
}

/// Tests set this to 1 to see confined agents refused (debug builds only).
pub const DISABLE_VAR: &str = "AGENTD_NO_PID_NAMESPACES";

/// How long a new namespace's init may take to say it is ready.
const READY_WITHIN: Duration = Duration::from_secs(10);

/// The daemon's binary, for the helper processes (`set_helper`).
static HELPER: OnceLock<OwnedFd> = OnceLock::new();

/// Makes keepers and inits exec the daemon's own binary (whose `main`
/// must call `helper_main` first thing). Called once by `main`.
pub fn set_helper() -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let exe = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_PATH)
        .open("/proc/self/exe")?;
    let _ = HELPER.set(exe.into());
    Ok(())
}

fn helper() -> fork::Helper {
    HELPER.get().map(AsRawFd::as_raw_fd)
}

/// The helper modes the daemon's binary runs in when a keeper or an init
/// execs it: `Some(mode)` when `arg` (the first argument) names one; the
/// caller then calls `helper_main`.
pub fn helper_mode(arg: &str) -> Option<HelperMode> {
    match arg {
        "__ns-keeper" => Some(HelperMode::Keeper),
        "__ns-init" => Some(HelperMode::Init),
        _ => None,
    }
}

#[derive(Clone, Copy, Debug)]
pub enum HelperMode {
    Keeper,
    Init,
}

/// Runs a helper process; never returns.
pub fn helper_main(mode: HelperMode) -> ! {
    match mode {
        HelperMode::Keeper => fork::keeper_loop(),
        HelperMode::Init => fork::init_loop(),
    }
}

/// Whether (and how) confined commands can be contained here, probed once
/// by making a namespace and running a command in it. The error says what
/// to do.
pub fn support() -> Result<Mode, String> {
    static PROBED: OnceLock<Result<Mode, String>> = OnceLock::new();
    PROBED.get_or_init(probe).clone()
}

fn probe() -> Result<Mode, String> {
    #[cfg(debug_assertions)]
    if std::env::var_os(DISABLE_VAR).is_some_and(|v| v == "1") {
        return Err(unavailable("disabled for a test"));
    }
    let modes: &[Mode] = if nix::unistd::geteuid().is_root() {
        &[Mode::Direct, Mode::UserNamespace]
    } else {
        &[Mode::UserNamespace]
    };
    let mut last = String::new();
    for &mode in modes {
        match try_mode(mode) {
            Ok(()) => return Ok(mode),
            Err(e) => last = e.to_string(),
        }
    }
    Err(unavailable(&last))
}

fn unavailable(why: &str) -> String {
    format!(
        "this system does not let agentd run an agent's commands in a PID namespace of their own ({why}), so what they start could outlive the agent and the daemon; allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, or on Ubuntu kernel.apparmor_restrict_unprivileged_userns=0), or run the agent with --sandbox off"
    )
}

/// Makes a namespace in `mode` and runs `true` in it.
fn try_mode(mode: Mode) -> std::io::Result<()> {
    let mut keeper_cmd = keeper_command();
    let plan = Making::new(mode, false, &[])?;
    let (ready_r, _) = plan.install(&mut keeper_cmd)?;
    let mut keeper = keeper_cmd.spawn()?;
    drop(keeper_cmd);
    let result = (|| {
        let own_proc = read_ready_blocking(&ready_r)?;
        let ns = Namespaces::of(keeper.id() as i32, mode, own_proc, false)?;
        let mut cmd = std::process::Command::new("true");
        cmd.stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        ns.join(&mut cmd, Path::new("/"), || Ok(()))?;
        let status = cmd.spawn()?.wait()?;
        if status.success() {
            Ok(())
        } else {
            Err(std::io::Error::other(format!(
                "a command in a new namespace ended with {status}"
            )))
        }
    })();
    let _ = keeper.kill();
    let _ = keeper.wait();
    result
}

/// The command a namespace's keeper is spawned with. Its program is never
/// executed: the keeper execs the helper itself (`fork::make`).
fn keeper_command() -> std::process::Command {
    let mut cmd = std::process::Command::new("true");
    cmd.env_clear()
        .current_dir("/")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    cmd
}

/// A namespace about to be made.
struct Making {
    mode: Mode,
    maps: Option<UserMaps>,
    /// A network namespace of its own, with only loopback.
    net: bool,
    binds: Vec<binds::Prepared>,
}

impl Making {
    fn new(mode: Mode, net: bool, binds: &[Bind]) -> std::io::Result<Making> {
        let uid = nix::unistd::getuid().as_raw();
        let gid = nix::unistd::getgid().as_raw();
        Ok(Making {
            mode,
            maps: (mode == Mode::UserNamespace).then(|| UserMaps {
                uid_map: format!("{uid} {uid} 1\n").into_bytes(),
                gid_map: format!("{gid} {gid} 1\n").into_bytes(),
            }),
            net,
            binds: binds::prepare(binds)?,
        })
    }

    /// Adds the making to `cmd` (the keeper's command); returns the read
    /// end of the pipe on which the init says it is ready, and with a
    /// network namespace the socket its proxy listener comes on. The
    /// write ends live in `cmd` until it is dropped.
    fn install(
        self,
        cmd: &mut std::process::Command,
    ) -> std::io::Result<(OwnedFd, Option<OwnedFd>)> {
        use std::os::unix::process::CommandExt as _;
        let (ready_r, ready_w) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)?;
        let mut flags = libc::CLONE_NEWPID | libc::CLONE_NEWNS;
        if self.mode == Mode::UserNamespace {
            flags |= libc::CLONE_NEWUSER;
        }
        let pair = if self.net {
            flags |= libc::CLONE_NEWNET;
            let (recv, send) = nix::sys::socket::socketpair(
                nix::sys::socket::AddressFamily::Unix,
                nix::sys::socket::SockType::SeqPacket,
                None,
                nix::sys::socket::SockFlag::SOCK_CLOEXEC,
            )?;
            Some((recv, send))
        } else {
            None
        };
        let plan = MakePlan {
            flags,
            user_maps: self.maps,
            ready_w: ready_w.as_raw_fd(),
            helper: helper(),
            net: pair.as_ref().map(|(_, send)| NetPlan {
                send_fd: send.as_raw_fd(),
            }),
            binds: self.binds,
        };
        let (recv, send) = pair.map_or((None, None), |(r, s)| (Some(r), Some(s)));
        dies_with_the_daemon(cmd);
        // SAFETY: `fork::make` runs between fork and exec and makes only
        // async-signal-safe system calls; it allocates nothing. `ready_w`
        // is moved in so the descriptor stays open until `cmd` is dropped.
        #[allow(unsafe_code)]
        unsafe {
            cmd.pre_exec(move || {
                let _keep_open = (&ready_w, &send);
                fork::make(&plan)
            });
        }
        Ok((ready_r, recv))
    }
}

/// In the forked child, before anything else: a session of its own (no
/// controlling terminal: nothing it runs can type into the person's
/// terminal), the person's file mask, and killed when the daemon dies.
pub fn dies_with_the_daemon(cmd: &mut std::process::Command) {
    use std::os::unix::process::CommandExt as _;
    let daemon = nix::unistd::getpid();
    let mask = crate::umask::person();
    // SAFETY: setsid, prctl, getppid and kill are async-signal-safe; the
    // closure allocates nothing.
    #[allow(unsafe_code)]
    unsafe {
        cmd.pre_exec(move || {
            nix::unistd::setsid()?;
            // What the command makes is the person's, with their mask.
            crate::umask::in_tool_child(mask);
            nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL)?;
            // The daemon died between fork and prctl: nothing will kill us.
            if nix::unistd::getppid() != daemon {
                let _ = nix::sys::signal::raise(nix::sys::signal::Signal::SIGKILL);
            }
            Ok(())
        });
    }
}

fn read_ready_blocking(ready: &OwnedFd) -> std::io::Result<bool> {
    use nix::poll::{PollFd, PollFlags, PollTimeout};
    let mut fds = [PollFd::new(
        std::os::fd::AsFd::as_fd(ready),
        PollFlags::POLLIN,
    )];
    let ms = PollTimeout::try_from(READY_WITHIN).unwrap_or(PollTimeout::MAX);
    if nix::poll::poll(&mut fds, ms)? == 0 {
        return Err(std::io::Error::other(
            "the namespace's init did not start in time",
        ));
    }
    let mut byte = [0u8; 1];
    match nix::unistd::read(ready, &mut byte)? {
        1 => Ok(byte[0] == b'1'),
        _ => Err(std::io::Error::other("the namespace's init died at once")),
    }
}

/// The namespaces of a made keeper, held open to join.
struct Namespaces {
    user: Option<OwnedFd>,
    mnt: OwnedFd,
    pid: OwnedFd,
    /// The namespace has a `/proc` of its own.
    own_proc: bool,
    /// That `/proc` (`O_PATH`), as its commands see it: a read rule on the
    /// daemon's `/proc` does not reach it (Landlock skips a mount point
    /// hidden by another mount), so confinement grants it by itself.
    proc_dir: Option<OwnedFd>,
    /// Its network namespace, when it has one of its own.
    net: Option<OwnedFd>,
}

impl Namespaces {
    /// Opens the namespaces of the keeper `pid` (which made them: its
    /// `pid_for_children` is the new PID namespace).
    fn of(pid: i32, mode: Mode, own_proc: bool, net: bool) -> std::io::Result<Namespaces> {
        let open = |name: &str| -> std::io::Result<OwnedFd> {
            let f = std::fs::File::open(format!("/proc/{pid}/ns/{name}"))?;
            Ok(f.into())
        };
        Ok(Namespaces {
            user: match mode {
                Mode::UserNamespace => Some(open("user")?),
                Mode::Direct => None,
            },
            mnt: open("mnt")?,
            pid: open("pid_for_children")?,
            net: net.then(|| open("net")).transpose()?,
            proc_dir: own_proc
                .then(|| {
                    nix::fcntl::open(
                        format!("/proc/{pid}/root/proc").as_str(),
                        nix::fcntl::OFlag::O_PATH
                            | nix::fcntl::OFlag::O_DIRECTORY
                            | nix::fcntl::OFlag::O_CLOEXEC,
                        nix::sys::stat::Mode::empty(),
                    )
                    .map_err(std::io::Error::from)
                })
                .transpose()?,
            own_proc,
        })
    }

    /// Makes `cmd` run in these namespaces, in `cwd`, then run `then` in
    /// the command's process (its confinement) before it execs. The process
    /// `cmd` spawns is the command's keeper: it exits as the command does.
    fn join<F>(
        &self,
        cmd: &mut std::process::Command,
        cwd: &Path,
        mut then: F,
    ) -> std::io::Result<()>
    where
        F: FnMut() -> std::io::Result<()> + Send + Sync + 'static,
    {
        use std::os::unix::ffi::OsStrExt as _;
        use std::os::unix::process::CommandExt as _;
        let plan = JoinPlan {
            user: self.user.as_ref().map(AsRawFd::as_raw_fd),
            mnt: self.mnt.as_raw_fd(),
            pid: self.pid.as_raw_fd(),
            net: self.net.as_ref().map(AsRawFd::as_raw_fd),
            cwd: CString::new(cwd.as_os_str().as_bytes())
                .map_err(|_| std::io::Error::other("the working directory holds a NUL byte"))?,
            helper: helper(),
        };
        dies_with_the_daemon(cmd);
        // SAFETY: `fork::join` runs between fork and exec and makes only
        // async-signal-safe system calls; it allocates nothing. The
        // descriptors it enters stay open while `self` lives, which
        // outlives the spawn.
        #[allow(unsafe_code)]
        unsafe {
            cmd.pre_exec(move || {
                fork::join(&plan)?;
                then()
            });
        }
        Ok(())
    }
}

/// One agent run's namespace: dropped (its keeper killed, and so every
/// process in it) when the run ends.
pub struct AgentNamespace {
    keeper: tokio::process::Child,
    namespaces: Namespaces,
    /// With a network of its own: the listener its proxy serves, bound
    /// to 127.0.0.1 inside it (taken once, by whoever runs the proxy).
    proxy_listener: Option<std::net::TcpListener>,
    proxy_port: Option<u16>,
}

impl std::fmt::Debug for AgentNamespace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentNamespace")
            .field("keeper", &self.keeper.id())
            .field("own_proc", &self.namespaces.own_proc)
            .finish()
    }
}

impl AgentNamespace {
    /// Makes one. Must run on a thread that lives as long as the daemon (a
    /// runtime worker, not the blocking pool): the keeper's parent-death
    /// signal follows the thread that forked it.
    ///
    /// `net`: in a network namespace of its own with only loopback, and a
    /// listener on it for the agent's proxy (`take_proxy_listener`).
    /// `binds`: mounted in it, in order, before anything runs there.
    pub async fn make(mode: Mode, net: bool, binds: &[Bind]) -> std::io::Result<AgentNamespace> {
        let mut std_cmd = keeper_command();
        let (ready_r, listener_r) = Making::new(mode, net, binds)?.install(&mut std_cmd)?;
        let mut cmd = tokio::process::Command::from(std_cmd);
        cmd.kill_on_drop(true);
        let keeper = {
            let _spawning = crate::process::adopt::spawning();
            let keeper = cmd.spawn().map_err(|e| match e.raw_os_error() {
                Some(binds::SWAPPED) if !binds.is_empty() => std::io::Error::other(
                    "a path of the agent's git quarantine was replaced since agentd checked it (a link or another directory put in its place); nothing was mounted",
                ),
                _ => e,
            })?;
            if let Some(pid) = keeper.id() {
                crate::process::adopt::own(pid);
            }
            keeper
        };
        // The daemon's copy of the ready pipe's write end goes with it.
        drop(cmd);
        let pid = keeper
            .id()
            .and_then(|p| i32::try_from(p).ok())
            .ok_or_else(|| std::io::Error::other("the namespace's keeper exited at once"))?;
        let own_proc = tokio::time::timeout(READY_WITHIN, read_ready(ready_r))
            .await
            .map_err(|_| std::io::Error::other("the namespace's init did not start in time"))??;
        let namespaces = Namespaces::of(pid, mode, own_proc, net)?;
        let proxy_listener = listener_r.map(|r| receive_listener(&r)).transpose()?;
        let proxy_port = proxy_listener
            .as_ref()
            .map(|l| l.local_addr().map(|a| a.port()))
            .transpose()?;
        Ok(AgentNamespace {
            keeper,
            namespaces,
            proxy_listener,
            proxy_port,
        })
    }

    /// The proxy's listener, once (None without a network of its own).
    pub fn take_proxy_listener(&mut self) -> Option<std::net::TcpListener> {
        self.proxy_listener.take()
    }

    /// The port its proxy listens on, on 127.0.0.1 inside the namespace.
    pub fn proxy_port(&self) -> Option<u16> {
        self.proxy_port
    }

    /// True while its keeper (and so its init) lives.
    pub fn alive(&mut self) -> bool {
        matches!(self.keeper.try_wait(), Ok(None))
    }

    /// The namespace has a `/proc` of its own, so signals from inside can
    /// reach only its processes (ids resolve in it).
    pub fn own_proc(&self) -> bool {
        self.namespaces.own_proc
    }

    /// The namespace's own `/proc`, if it has one.
    pub fn proc_dir(&self) -> Option<std::os::fd::BorrowedFd<'_>> {
        self.namespaces
            .proc_dir
            .as_ref()
            .map(std::os::fd::AsFd::as_fd)
    }

    /// Makes `cmd` run in this namespace (see `Namespaces::join`).
    pub fn join<F>(
        &self,
        cmd: &mut std::process::Command,
        cwd: &Path,
        then: F,
    ) -> std::io::Result<()>
    where
        F: FnMut() -> std::io::Result<()> + Send + Sync + 'static,
    {
        self.namespaces.join(cmd, cwd, then)
    }
}

/// The listener the namespace's maker sent (before its init said it was
/// ready, so it is waiting).
fn receive_listener(fd: &OwnedFd) -> std::io::Result<std::net::TcpListener> {
    use nix::sys::socket::{ControlMessageOwned, MsgFlags, recvmsg};
    use std::os::fd::FromRawFd as _;
    let mut byte = [0u8; 1];
    let mut iov = [std::io::IoSliceMut::new(&mut byte)];
    let mut space = nix::cmsg_space!(std::os::fd::RawFd);
    let msg = recvmsg::<()>(
        fd.as_raw_fd(),
        &mut iov,
        Some(&mut space),
        MsgFlags::MSG_DONTWAIT | MsgFlags::MSG_CMSG_CLOEXEC,
    )?;
    for cmsg in msg.cmsgs()? {
        if let ControlMessageOwned::ScmRights(fds) = cmsg
            && let Some(&raw) = fds.first()
        {
            // SAFETY: the descriptor was just received and is ours alone.
            #[allow(unsafe_code)]
            let listener = unsafe { std::net::TcpListener::from_raw_fd(raw) };
            for extra in &fds[1..] {
                let _ = nix::unistd::close(*extra);
            }
            listener.set_nonblocking(true)?;
            return Ok(listener);
        }
    }
    Err(std::io::Error::other(
        "the namespace's maker sent no proxy listener",
    ))
}

async fn read_ready(fd: OwnedFd) -> std::io::Result<bool> {
    use tokio::io::AsyncReadExt as _;
    let mut rx = tokio::net::unix::pipe::Receiver::from_owned_fd(fd)?;
    let mut byte = [0u8; 1];
    match rx.read(&mut byte).await? {
        1 => Ok(byte[0] == b'1'),
        _ => Err(std::io::Error::other("the namespace's init died at once")),
    }
}

/// The identity of the PID namespace of process `pid` (`self` for the
/// daemon): the device and inode of `/proc/<pid>/ns/pid`. None when it
/// cannot be read (gone, or not ours to look at).
pub fn namespace_of(pid: &str) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt as _;
    let meta = std::fs::metadata(format!("/proc/{pid}/ns/pid")).ok()?;
    Some((meta.dev(), meta.ino()))
}

#[cfg(test)]
mod tests;
