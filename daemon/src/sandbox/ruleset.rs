//! A policy made into a Landlock ruleset in the daemon, applied in the
//! tool's child process between fork and exec.

use std::os::fd::{AsRawFd, OwnedFd};
use std::path::Path;

use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, Ruleset, RulesetAttr,
    RulesetCreatedAttr, Scope, path_beneath_rules,
};

use super::Policy;
use crate::domain::SandboxMode;

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
    /// Refuses `socket(AF_UNIX, …)`: Landlock does not control connecting
    /// to a path-named Unix socket, and those lead to services that run
    /// commands unconfined (the daemon's own socket, `systemd --user`,
    /// tmux, X11, container engines).
    unix_sockets: &'static seccompiler::BpfProgram,
}

/// Built once: the same program confines every tool process.
static NO_UNIX_SOCKETS: std::sync::OnceLock<Result<seccompiler::BpfProgram, String>> =
    std::sync::OnceLock::new();

/// The seccomp program that refuses new Unix-domain sockets with EACCES
/// (`socketpair`, which names no path, stays allowed).
fn no_unix_sockets() -> Result<seccompiler::BpfProgram, String> {
    use seccompiler::{
        SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule,
    };
    let err =
        |e: seccompiler::BackendError| format!("cannot build the sandbox's seccomp filter: {e}");
    let unix = SeccompCondition::new(
        0,
        SeccompCmpArgLen::Dword,
        SeccompCmpOp::Eq,
        libc::AF_UNIX as u64,
    )
    .map_err(err)?;
    let arch = std::env::consts::ARCH
        .try_into()
        .map_err(|e: seccompiler::BackendError| err(e))?;
    let filter = SeccompFilter::new(
        [(
            libc::SYS_socket,
            vec![SeccompRule::new(vec![unix]).map_err(err)?],
        )]
        .into_iter()
        .collect(),
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EACCES as u32),
        arch,
    )
    .map_err(err)?;
    filter
        .try_into()
        .map_err(|e: seccompiler::BackendError| err(e))
}

impl Confinement {
    /// Builds the ruleset of `policy` (which must not be `off`): reading
    /// and executing everywhere; writing beneath the workspace and the temp
    /// dir (workspace-write) and to the usual devices; with `no_network`, no
    /// TCP bind or connect at all.
    pub fn build(policy: &Policy) -> Result<Confinement, String> {
        let err = |e: landlock::RulesetError| format!("cannot build the sandbox: {e}");
        let mut ruleset = Ruleset::default()
            .set_compatibility(CompatLevel::BestEffort)
            .handle_access(AccessFs::from_all(FS_ABI))
            .map_err(err)?
            // ABI 6: no signals to processes outside (the daemon, other
            // agents, the person's) and no abstract Unix sockets of theirs.
            .scope(Scope::Signal | Scope::AbstractUnixSocket)
            .map_err(err)?;
        if policy.no_network {
            ruleset = ruleset
                .set_compatibility(CompatLevel::HardRequirement)
                .handle_access(AccessNet::from_all(ABI::V4))
                .map_err(err)?;
        }
        let mut created = ruleset
            .create()
            .map_err(err)?
            .add_rules(path_beneath_rules(["/"], AccessFs::from_read(FS_ABI)))
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
        if policy.mode == SandboxMode::WorkspaceWrite {
            created = created
                .add_rules(path_beneath_rules(
                    [&policy.workspace, &policy.tmpdir],
                    writable(),
                ))
                .map_err(err)?;
        }
        let fd: Option<OwnedFd> = created.into();
        let fd = fd.ok_or_else(|| {
            "this kernel offers no Landlock, so the sandbox cannot be enforced; run the agent with --sandbox off".to_string()
        })?;
        let unix_sockets = NO_UNIX_SOCKETS
            .get_or_init(no_unix_sockets)
            .as_ref()
            .map_err(Clone::clone)?;
        Ok(Confinement { fd, unix_sockets })
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
        seccompiler::apply_filter(self.unix_sockets)
            .map_err(|_| std::io::Error::from_raw_os_error(libc::EPERM))
    }
}
