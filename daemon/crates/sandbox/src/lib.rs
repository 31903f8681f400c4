//! The tool sandbox (DESIGN §14): what the processes an agent's tools
//! start may write and reach, enforced by Landlock in the child between
//! fork and exec — never in the daemon itself.
//!
//! - `abi`: which Landlock ABI the kernel offers (`status`, `doctor`, and
//!   the fail-closed check when an agent is created).
//! - `ruleset`: a policy made into a Landlock ruleset and seccomp filters,
//!   ready for the child.
//! - `read_deny`: what no confined process may read (agentd's own
//!   directories, secret stores); `carve`: how a Landlock grant is made
//!   around them.
//! - `pid_namespace`: the PID namespace a confined agent's commands run in,
//!   so nothing they start outlives the agent or the daemon.
//! - `confined_thread`: the daemon's own git work in a repository an agent
//!   can change, allowed to write only where it was verified to.
//!
//! Beside it, in this crate, what confinement is built from: `process`
//! (tool processes: their groups, and those an earlier daemon left),
//! `network` (the per-agent egress proxy and its built-in hosts),
//! `beneath` (opening paths beneath a root without following a link out)
//! and `umask`.

mod abi;
pub mod beneath;
mod carve;
pub mod confined_thread;
pub mod network;
pub mod pid_namespace;
pub mod process;
mod read_deny;
mod ruleset;
pub mod umask;

use std::path::{Path, PathBuf};

pub use abi::{ABI_OVERRIDE_VAR, kernel_abi};
pub use read_deny::{ReadDenials, SECRET_STORES};
pub use ruleset::Confinement;

use agentd_domain as domain;
use domain::{AgentRecord, NetworkMode, SandboxMode};

/// The Landlock ABI that confines writes fully: ABI 3 (Linux 6.2) adds
/// truncation, without which any writable-by-you file could be emptied.
pub const MIN_FS_ABI: i32 = 3;
/// The Landlock ABI that controls TCP bind and connect (Linux 6.7).
pub const MIN_NET_ABI: i32 = 4;

/// What one agent's tool processes may do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Policy {
    pub mode: SandboxMode,
    /// Proxy: its tools run in the namespace's own network with only
    /// loopback, and reach out through the agent's proxy.
    pub network: NetworkMode,
    /// Writable beneath (workspace-write): the working directory or tree.
    pub workspace: PathBuf,
    /// The agent's private temp dir (exported as TMPDIR).
    pub tmpdir: PathBuf,
    /// Also writable (workspace-write): where an external agent keeps its
    /// own sessions and login (`[agents.NAME] writable`, DESIGN §19).
    /// Empty for agentd's own tools.
    pub also_writable: Vec<PathBuf>,
}

impl Policy {
    /// The policy of `record`'s tools; None when its sandbox is off. Its
    /// workspace is its own worktree when it has one, else its working
    /// directory.
    pub fn for_agent(record: &AgentRecord) -> Option<Policy> {
        let mode = record.effective_sandbox();
        if mode == SandboxMode::Off {
            return None;
        }
        let workspace = record
            .worktree
            .as_ref()
            .filter(|w| w.owned)
            .map_or_else(|| record.cwd.clone(), |w| w.path.clone());
        let root = tmp_root();
        // A temp dir that cannot be made private is never granted: writes
        // there then fail, and the model is told where it may write.
        let tmpdir = tmpdir(&root, record.short_id.as_str())
            .unwrap_or_else(|_| record.cwd.join(".agentd-no-tmpdir"));
        Some(Policy {
            mode,
            network: record.effective_network(),
            workspace,
            tmpdir,
            also_writable: Vec::new(),
        })
    }
}

impl Policy {
    /// Writes beneath `workspace` only, with the full network: for a server that
    /// must run confined though its agent is not (a repository's MCP
    /// server). Its temp dir is named for the workspace; None when that
    /// cannot be made private (the server then does not start).
    pub fn workspace_for_server(workspace: &Path) -> Option<Policy> {
        use sha2::Digest;
        let digest = sha2::Sha256::digest(workspace.as_os_str().as_encoded_bytes());
        let hex: String = digest[..6].iter().map(|b| format!("{b:02x}")).collect();
        let tmpdir = tmpdir(&tmp_root(), &format!("srv-{hex}")).ok()?;
        Some(Policy {
            mode: SandboxMode::WorkspaceWrite,
            network: NetworkMode::Full,
            workspace: workspace.to_path_buf(),
            tmpdir,
            also_writable: Vec::new(),
        })
    }
}

/// An agent's git quarantine as its confinement sees it (DESIGN §23): a
/// directory it may write besides its workspace (its own git directory),
/// and the binds that put it where git looks for `.git` and the
/// repository's real git directory, read only, where it finds its objects.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GitQuarantine {
    pub writable: PathBuf,
    pub binds: Vec<pid_namespace::Bind>,
}

/// Why an agent cannot run sandboxed here, in words that say what to do;
/// None when it can.
pub fn refusal(
    mode: SandboxMode,
    network: NetworkMode,
    workspace: &Path,
    protected: &[PathBuf],
) -> Option<String> {
    if mode == SandboxMode::Off {
        return (network != NetworkMode::Full).then(|| {
            format!(
                "--network {network} needs the sandbox (a network namespace and Landlock); it cannot be combined with --sandbox off (pass --network full with it)"
            )
        });
    }
    let abi = kernel_abi();
    if abi < MIN_FS_ABI {
        let has = if abi == 0 {
            "no Landlock".to_string()
        } else {
            format!(
                "Landlock ABI {abi}, which cannot stop truncation (ABI {MIN_FS_ABI}, Linux 6.2, can)"
            )
        };
        return Some(format!(
            "this kernel offers {has}, so the {mode} sandbox cannot be enforced; start the agent with --sandbox off (or sandbox = \"off\" in config.toml) to run it unconfined"
        ));
    }
    if network == NetworkMode::None && abi < MIN_NET_ABI {
        return Some(format!(
            "denying the network needs Landlock ABI {MIN_NET_ABI} (Linux 6.7) and this kernel offers ABI {abi}; use --network proxy, or --sandbox off"
        ));
    }
    if let Err(why) = pid_namespace::support() {
        return Some(why);
    }
    // Compared as the kernel resolves them: a link must not hide an overlap.
    let workspace = &workspace
        .canonicalize()
        .unwrap_or_else(|_| workspace.to_path_buf());
    if mode == SandboxMode::WorkspaceWrite
        && let Some(p) = protected
            .iter()
            .find(|p| p.starts_with(workspace) || workspace.starts_with(p))
    {
        return Some(format!(
            "the daemon's directory {} and the agent's working directory {} overlap, and the sandbox can only allow writing beneath a directory, not carve one out; start the agent in another directory, or move agentd's data (--data-dir, --socket)",
            p.display(),
            workspace.display()
        ));
    }
    None
}

/// The private temp dir of the agent `short_id`, under `root` (made 0700).
/// Refuses a root or a directory that is a symlink, not ours, or open to
/// others: on a shared machine someone else could have made them first.
pub fn tmpdir(root: &Path, short_id: &str) -> std::io::Result<PathBuf> {
    private_dir(root)?;
    let dir = root.join(short_id);
    private_dir(&dir)?;
    Ok(dir)
}

/// Makes `dir` (0700) unless it exists; then checks it is a real directory
/// of ours that nobody else can write.
pub fn private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    let meta = std::fs::symlink_metadata(dir)?;
    let ours = meta.uid() == nix::unistd::getuid().as_raw();
    if !meta.file_type().is_dir() || !ours || meta.mode() & 0o022 != 0 {
        return Err(std::io::Error::other(format!(
            "{} is not a private directory of this user (a link, someone else's, or writable by others); remove it",
            dir.display()
        )));
    }
    Ok(())
}

/// Removes the temp dir of the agent `short_id` (at its end).
pub fn remove_tmpdir(short_id: &str) {
    let dir = tmp_root().join(short_id);
    if std::fs::symlink_metadata(&dir).is_ok_and(|m| m.file_type().is_dir()) {
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// Where agents' temp dirs live: `$XDG_RUNTIME_DIR/agentd-tmp` (a private
/// per-user directory) when there is one, else `$TMPDIR/agentd-<uid>-tmp`;
/// never inside the daemon's data or socket directories.
pub fn tmp_root() -> PathBuf {
    match std::env::var_os("XDG_RUNTIME_DIR").filter(|d| !d.is_empty()) {
        Some(run) => PathBuf::from(run).join("agentd-tmp"),
        None => std::env::temp_dir().join(format!("agentd-{}-tmp", nix::unistd::getuid())),
    }
}
