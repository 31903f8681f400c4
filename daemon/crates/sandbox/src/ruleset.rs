//! A policy made into a Landlock ruleset in the daemon, applied in the
//! tool's child process between fork and exec.

use std::os::fd::{AsRawFd, OwnedFd};
use std::path::Path;

use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, PathBeneath, Ruleset,
    RulesetAttr, RulesetCreatedAttr, Scope, path_beneath_rules,
};

use super::Policy;
use super::carve::carve;
use crate::domain::{NetworkMode, SandboxMode};

/// The file-system rights handled (and so denied unless a rule grants
/// them): all of them up to ABI 5 — on an older kernel, those it knows.
const FS_ABI: ABI = ABI::V5;

/// Devices any process may read and write (no ioctls): the null sink and
/// randomness. Never terminals: nothing confined may write to, or type
/// into, the person's.
const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
];

/// What a confined process may do beneath a writable directory: everything
/// but making device nodes (a block device made there would reach any disk
/// or loop file) and device ioctls.
fn writable() -> BitFlags<AccessFs> {
    AccessFs::from_all(FS_ABI) & !(AccessFs::MakeChar | AccessFs::MakeBlock | AccessFs::IoctlDev)
}

/// A ruleset made for one tool process, to be applied in the child.
#[derive(Debug)]
pub struct Confinement {
    fd: OwnedFd,
    /// The seccomp programs every confined process gets (`filters`).
    filters: &'static Filters,
    /// `--no-network`: `Filters::inet` too.
    no_network: bool,
}

/// The seccomp programs, built once: the same ones confine every tool
/// process.
#[derive(Debug)]
struct Filters {
    /// Refuses `socket(AF_UNIX, …)` with EACCES: Landlock does not control
    /// connecting to a path-named Unix socket, and those lead to services
    /// that run commands unconfined (the daemon's own socket, `systemd
    /// --user`, tmux, X11, container engines, ssh-agent). `socketpair`,
    /// which names no path, stays allowed.
    unix_sockets: seccompiler::BpfProgram,
    /// Refuses io_uring with EPERM (as container runtimes do): its
    /// operations (`IORING_OP_SOCKET`, `IORING_OP_CONNECT`, opens) are not
    /// system calls a seccomp filter sees, so it would make and connect
    /// the very sockets the first program refuses.
    io_uring: seccompiler::BpfProgram,
    /// With `--no-network`: refuses `socket(AF_INET | AF_INET6, …)` with
    /// EACCES. Landlock controls only TCP bind and connect; this also
    /// closes UDP (DNS, QUIC), ICMP echo and SCTP.
    inet: seccompiler::BpfProgram,
}

static FILTERS: std::sync::OnceLock<Result<Filters, String>> = std::sync::OnceLock::new();

/// On x86_64, the x32 ABI reaches the same calls with this bit set; a
/// kernel built with it would otherwise let them pass.
#[cfg(target_arch = "x86_64")]
const X32: i64 = 0x4000_0000;
#[cfg(not(target_arch = "x86_64"))]
const X32: i64 = 0;

fn with_x32(nr: i64) -> Vec<i64> {
    if X32 == 0 {
        vec![nr]
    } else {
        vec![nr, nr | X32]
    }
}

fn filters() -> Result<Filters, String> {
    use seccompiler::{
        SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule,
    };
    let err =
        |e: seccompiler::BackendError| format!("cannot build the sandbox's seccomp filter: {e}");
    let arch: seccompiler::TargetArch = std::env::consts::ARCH
        .try_into()
        .map_err(|e: seccompiler::BackendError| err(e))?;
    let unix = SeccompCondition::new(
        0,
        SeccompCmpArgLen::Dword,
        SeccompCmpOp::Eq,
        libc::AF_UNIX as u64,
    )
    .map_err(err)?;
    let unix_rule = SeccompRule::new(vec![unix]).map_err(err)?;
    let unix_sockets = SeccompFilter::new(
        with_x32(libc::SYS_socket)
            .into_iter()
            .map(|nr| (nr, vec![unix_rule.clone()]))
            .collect(),
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EACCES as u32),
        arch,
    )
    .map_err(err)?;
    let io_uring = SeccompFilter::new(
        [
            libc::SYS_io_uring_setup,
            libc::SYS_io_uring_enter,
            libc::SYS_io_uring_register,
        ]
        .into_iter()
        .flat_map(with_x32)
        // No condition: every call of these is refused.
        .map(|nr| (nr, vec![]))
        .collect(),
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .map_err(err)?;
    let family = |f: i32| {
        SeccompCondition::new(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, f as u64)
            .and_then(|c| SeccompRule::new(vec![c]))
            .map_err(err)
    };
    let inet_rules = vec![family(libc::AF_INET)?, family(libc::AF_INET6)?];
    let inet = SeccompFilter::new(
        with_x32(libc::SYS_socket)
            .into_iter()
            .map(|nr| (nr, inet_rules.clone()))
            .collect(),
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EACCES as u32),
        arch,
    )
    .map_err(err)?;
    Ok(Filters {
        inet: inet
            .try_into()
            .map_err(|e: seccompiler::BackendError| err(e))?,
        unix_sockets: unix_sockets
            .try_into()
            .map_err(|e: seccompiler::BackendError| err(e))?,
        io_uring: io_uring
            .try_into()
            .map_err(|e: seccompiler::BackendError| err(e))?,
    })
}

impl Confinement {
    /// Builds the ruleset of `policy` (which must not be `off`): reading
    /// and executing everywhere but the `denied` paths (`read_deny`,
    /// resolved); writing beneath the workspace and the temp dir
    /// (workspace-write), less the denied paths in them, and to the usual
    /// devices; with network `none`, no TCP bind or connect at all.
    /// `own_proc`: the `/proc` of the namespace it runs in, readable.
    /// `scope_signals`: also keep signals inside this one process tree
    /// (ABI 6) — needed where the PID namespace it runs in lacks a `/proc`
    /// of its own and so does not keep them in by itself.
    pub fn build(
        policy: &Policy,
        denied: &[std::path::PathBuf],
        scope_signals: bool,
        own_proc: Option<std::os::fd::BorrowedFd<'_>>,
    ) -> Result<Confinement, String> {
        let err = |e: landlock::RulesetError| format!("cannot build the sandbox: {e}");
        // ABI 6: no abstract Unix sockets of others (the daemon's, other
        // agents', the person's) and, where asked, no signals to them.
        let scopes = if scope_signals {
            Scope::Signal | Scope::AbstractUnixSocket
        } else {
            Scope::AbstractUnixSocket.into()
        };
        let mut ruleset = Ruleset::default()
            .set_compatibility(CompatLevel::BestEffort)
            .handle_access(AccessFs::from_all(FS_ABI))
            .map_err(err)?
            .scope(scopes)
            .map_err(err)?;
        if policy.network == NetworkMode::None {
            ruleset = ruleset
                .set_compatibility(CompatLevel::HardRequirement)
                .handle_access(AccessNet::from_all(ABI::V4))
                .map_err(err)?;
        }
        let mut grants = Vec::new();
        let read = AccessFs::from_read(FS_ABI);
        let file_read = read & AccessFs::from_file(FS_ABI);
        // Reading and executing everywhere but the denied paths.
        carve(Path::new("/"), read, file_read, denied, &mut grants);
        if let Some(proc_dir) = own_proc {
            let fd = proc_dir
                .try_clone_to_owned()
                .map_err(|e| format!("cannot build the sandbox: {e}"))?;
            grants.push(super::carve::Grant { fd, access: read });
        }
        if policy.mode == SandboxMode::WorkspaceWrite {
            for dir in [&policy.workspace, &policy.tmpdir] {
                let dir = super::carve::resolve(dir);
                carve(
                    &dir,
                    writable(),
                    writable() & AccessFs::from_file(FS_ABI),
                    denied,
                    &mut grants,
                );
            }
        } else {
            // Its own temp dir is in a denied directory (everyone's are).
            let dir = super::carve::resolve(&policy.tmpdir);
            carve(&dir, read, file_read, denied, &mut grants);
        }
        // An external agent's own state (its sessions, its login) stays
        // writable in read-only mode too: without it, it cannot run at
        // all. A path that does not exist gets no rule.
        for dir in &policy.also_writable {
            let dir = super::carve::resolve(dir);
            carve(
                &dir,
                writable(),
                writable() & AccessFs::from_file(FS_ABI),
                denied,
                &mut grants,
            );
        }
        let mut created = ruleset
            .create()
            .map_err(err)?
            .add_rules(
                grants
                    .into_iter()
                    .map(|g| Ok::<_, landlock::RulesetError>(PathBeneath::new(g.fd, g.access))),
            )
            .map_err(err)?;
        let devices: Vec<&Path> = DEVICES
            .iter()
            .map(Path::new)
            .filter(|p| p.exists())
            .collect();
        created = created
            .add_rules(path_beneath_rules(
                devices,
                AccessFs::ReadFile | AccessFs::WriteFile,
            ))
            .map_err(err)?;
        let fd: Option<OwnedFd> = created.into();
        let fd = fd.ok_or_else(|| {
            "this kernel offers no Landlock, so the sandbox cannot be enforced; run the agent with --sandbox off".to_string()
        })?;
        let filters = FILTERS
            .get_or_init(filters)
            .as_ref()
            .map_err(Clone::clone)?;
        Ok(Confinement {
            fd,
            filters,
            no_network: policy.network == NetworkMode::None,
        })
    }

    /// Confines the calling process for good: no new privileges, then the
    /// ruleset. Only for a child between fork and exec: it makes two
    /// system calls and allocates nothing.
    #[allow(unsafe_code)]
    pub fn apply_in_child(&self) -> std::io::Result<()> {
        nix::sys::prctl::set_no_new_privs()?;
        // SAFETY: landlock_restrict_self(fd, 0) takes an open ruleset fd and
        // flags; it reads no memory of ours.
        let r = unsafe {
            libc::syscall(
                libc::SYS_landlock_restrict_self,
                self.fd.as_raw_fd(),
                0 as libc::c_uint,
            )
        };
        if r != 0 {
            return Err(std::io::Error::last_os_error());
        }
        // No allocation on the error path either: the child must not call
        // malloc between fork and exec.
        for program in [&self.filters.unix_sockets, &self.filters.io_uring] {
            seccompiler::apply_filter(program)
                .map_err(|_| std::io::Error::from_raw_os_error(libc::EPERM))?;
        }
        if self.no_network {
            seccompiler::apply_filter(&self.filters.inet)
                .map_err(|_| std::io::Error::from_raw_os_error(libc::EPERM))?;
        }
        Ok(())
    }
}
