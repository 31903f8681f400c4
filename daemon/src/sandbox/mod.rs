//! The tool sandbox (DESIGN §14): what the processes an agent's tools
//! start may write and reach, enforced by Landlock in the child between
//! fork and exec — never in the daemon itself.
//!
//! - `abi`: which Landlock ABI the kernel offers (`status`, `doctor`, and
//!   the fail-closed check when an agent is created).
//! - `ruleset`: a policy made into a Landlock ruleset, ready for the child.

mod abi;
mod ruleset;

use std::path::{Path, PathBuf};

pub use abi::{ABI_OVERRIDE_VAR, kernel_abi};
pub use ruleset::Confinement;

use crate::domain::{AgentRecord, SandboxMode};

/// The Landlock ABI that confines writes (ABI 1, Linux 5.13).
pub const MIN_FS_ABI: i32 = 1;
/// The Landlock ABI that controls TCP bind and connect (Linux 6.7).
pub const MIN_NET_ABI: i32 = 4;

/// What one agent's tool processes may do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Policy {
    pub mode: SandboxMode,
    pub no_network: bool,
    /// Writable beneath (workspace-write): the working directory or tree.
    pub workspace: PathBuf,
    /// The agent's private temp dir (exported as TMPDIR).
    pub tmpdir: PathBuf,
    /// Also writable: for an agent in an agentd worktree, what git writes
    /// to commit on its branch (see `tree_git_dirs`).
    pub git_dirs: Vec<PathBuf>,
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
        let tmpdir = tmpdir(&root, record.short_id.as_str())
            .unwrap_or_else(|_| root.join(record.short_id.as_str()));
        let git_dirs = tree_git_dirs(&workspace);
        Some(Policy {
            mode,
            no_network: record.no_network,
            workspace,
            tmpdir,
            git_dirs,
        })
    }
}

/// For a workspace inside an agentd worktree (`.agentd/worktrees/<name>`):
/// the parts of the repository's git directory that committing on
/// `agentd/<name>` writes — new objects, the `agentd/` branches and their
/// logs, and git's record of that tree (its HEAD and index). Never the
/// person's branches, hooks or configuration.
pub fn tree_git_dirs(workspace: &Path) -> Vec<PathBuf> {
    let Some((tree, name)) = workspace.ancestors().find_map(|d| {
        let name = d.file_name()?.to_str()?;
        crate::worktree::is_agentd_tree(d, name).then(|| (d.to_path_buf(), name.to_string()))
    }) else {
        return Vec::new();
    };
    let Ok(link) = std::fs::read_to_string(tree.join(".git")) else {
        return Vec::new();
    };
    let Some(admin) = link
        .trim()
        .strip_prefix("gitdir:")
        .map(|p| PathBuf::from(p.trim()))
    else {
        return Vec::new();
    };
    if admin.file_name().and_then(|n| n.to_str()) != Some(name.as_str()) {
        return Vec::new();
    }
    let Some(common) = admin.parent().and_then(Path::parent) else {
        return Vec::new();
    };
    let logs = common.join("logs/refs/heads/agentd");
    let _ = std::fs::create_dir_all(&logs);
    vec![
        common.join("objects"),
        common.join("refs/heads/agentd"),
        logs,
        admin,
    ]
    .into_iter()
    .filter(|p| p.is_dir())
    .collect()
}

/// Why an agent cannot run sandboxed here, in words that say what to do;
/// None when it can.
pub fn refusal(
    mode: SandboxMode,
    no_network: bool,
    workspace: &Path,
    protected: &[PathBuf],
) -> Option<String> {
    if mode == SandboxMode::Off {
        return no_network.then(|| {
            "--no-network needs the sandbox (Landlock); it cannot be combined with --sandbox off"
                .to_string()
        });
    }
    let abi = kernel_abi();
    if abi < MIN_FS_ABI {
        return Some(format!(
            "this kernel offers no Landlock (ABI {abi}), so the {mode} sandbox cannot be enforced; start the agent with --sandbox off (or sandbox = \"off\" in config.toml) to run it unconfined"
        ));
    }
    if no_network && abi < MIN_NET_ABI {
        return Some(format!(
            "denying the network needs Landlock ABI {MIN_NET_ABI} (Linux 6.7) and this kernel offers ABI {abi}; drop --no-network, or use --sandbox off"
        ));
    }
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
pub fn tmpdir(root: &Path, short_id: &str) -> std::io::Result<PathBuf> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    let dir = root.join(short_id);
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&dir)?;
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))?;
    Ok(dir)
}

/// Where agents' temp dirs live: `$TMPDIR/agentd-<uid>-tmp`, never inside
/// the daemon's data or socket directories.
pub fn tmp_root() -> PathBuf {
    std::env::temp_dir().join(format!("agentd-{}-tmp", nix::unistd::getuid()))
}
