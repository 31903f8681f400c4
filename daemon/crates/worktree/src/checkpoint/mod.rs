//! Checkpoints (DESIGN §23): an agent's whole workspace recorded as a git
//! tree at the start of every user turn, in a shadow store the daemon owns
//! (`<data dir>/checkpoints/<agent id>.git`, a bare repository no sandbox
//! can reach and no `git log` or `gc` of the person's ever sees).
//!
//! Because it is the tree that is recorded, not the tool calls, every
//! change is covered however it was made: Write and Edit, Bash, MCP
//! servers, an external agent's own tools, the person. Recording is
//! content addressed and incremental (`walk`): the shadow index holds each
//! file's stat and blob, so a turn that changed one file reads that file
//! and rebuilds the trees above it. Each checkpoint is a commit (its tree,
//! a message of what began the turn) under `refs/checkpoints/<name>`;
//! pruning a ref and collecting the store drops what no checkpoint needs.

mod restore;
mod walk;

use std::path::{Path, PathBuf};

use agentd_sandbox::beneath;
use agentd_shared::sync::Unpoisoned as _;
use git2::{Index, Oid, Repository, Signature};

use crate::WorktreeError;
pub use restore::{Restored, check, restore};
pub use walk::{CAPS, Caps, Walked};

/// The prefix of every checkpoint's ref.
const REFS: &str = "refs/checkpoints/";

/// One recorded checkpoint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stored {
    /// Its name (`refs/checkpoints/<name>`).
    pub name: String,
    pub tree: Oid,
    /// When it was recorded (ms since the epoch).
    pub at_ms: i64,
    /// What it says of itself (what began the turn).
    pub message: String,
}

/// What `record` made.
#[derive(Debug)]
pub struct Recorded {
    pub tree: Oid,
    pub walked: Walked,
}

/// One path that differs between two checkpoints.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Changed {
    pub path: String,
    /// `A`dded, `M`odified, `D`eleted, `T`ype changed.
    pub status: char,
}

fn git_err(what: &str) -> impl Fn(git2::Error) -> WorktreeError + '_ {
    move |e| crate::git_error(what, e)
}

/// An agent's shadow store.
pub struct Shadow {
    repo: Repository,
    dir: PathBuf,
    /// The stat cache of the workspace this view records, and when its
    /// last walk began.
    index: PathBuf,
    stamp: PathBuf,
}

/// One recording or restore per store at a time (in this process).
fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static ONE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    ONE.locked()
}

fn now_ns() -> i128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i128)
}

impl Shadow {
    /// The store at `dir`, made if missing (private: the daemon's).
    pub fn open(dir: &Path) -> Result<Shadow, WorktreeError> {
        agentd_sandbox::umask::as_the_daemon(|| Shadow::open_private(dir))
    }

    fn open_private(dir: &Path) -> Result<Shadow, WorktreeError> {
        let repo = match Repository::open_bare(dir) {
            Ok(r) => r,
            Err(_) => {
                let r = Repository::init_bare(dir)
                    .map_err(git_err("cannot make the checkpoint store"))?;
                let mut config = r
                    .config()
                    .map_err(git_err("cannot configure the checkpoint store"))?;
                config
                    .set_i64("gc.auto", 0)
                    .map_err(git_err("cannot configure the checkpoint store"))?;
                r
            }
        };
        Ok(Shadow {
            repo,
            dir: dir.to_path_buf(),
            index: dir.join("index"),
            stamp: dir.join("walked"),
        })
    }

    /// The store, recording another directory than the agent's workspace
    /// (a fork's new tree made from a checkpoint): its own stat cache,
    /// which `drop_view` removes.
    pub fn open_for(dir: &Path, key: &str) -> Result<Shadow, WorktreeError> {
        let mut shadow = Shadow::open(dir)?;
        shadow.index = dir.join(format!("index-{key}"));
        shadow.stamp = dir.join(format!("walked-{key}"));
        Ok(shadow)
    }

    /// Removes the stat cache of a view `open_for` made.
    pub fn drop_view(self) {
        if self.index != self.dir.join("index") {
            let _ = std::fs::remove_file(&self.index);
            let _ = std::fs::remove_file(&self.stamp);
        }
    }

    /// Whether a store exists at `dir`.
    pub fn exists(dir: &Path) -> bool {
        Repository::open_bare(dir).is_ok()
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Records `workspace` as checkpoint `name` (replacing one of that
    /// name) with `message`.
    pub fn record(
        &self,
        workspace: &Path,
        name: &str,
        message: &str,
    ) -> Result<Recorded, WorktreeError> {
        agentd_sandbox::umask::as_the_daemon(|| self.record_private(workspace, name, message))
    }

    fn record_private(
        &self,
        workspace: &Path,
        name: &str,
        message: &str,
    ) -> Result<Recorded, WorktreeError> {
        let _one = one_at_a_time();
        let (tree, walked) = self.tree_of_workspace(workspace)?;
        let sig = Signature::now("agentd", "agentd@localhost").map_err(git_err("cannot sign"))?;
        let tree_obj = self
            .repo
            .find_tree(tree)
            .map_err(git_err("cannot read the tree"))?;
        let commit = self
            .repo
            .commit(None, &sig, &sig, message, &tree_obj, &[])
            .map_err(git_err("cannot record the checkpoint"))?;
        self.repo
            .reference(&format!("{REFS}{name}"), commit, true, "agentd checkpoint")
            .map_err(git_err("cannot record the checkpoint"))?;
        Ok(Recorded { tree, walked })
    }

    /// The workspace as a tree in the store (its blobs written).
    fn tree_of_workspace(&self, workspace: &Path) -> Result<(Oid, Walked), WorktreeError> {
        let io = |e: std::io::Error| {
            WorktreeError::refused(format!("cannot record {}: {e}", workspace.display()))
        };
        let mut index =
            Index::open(&self.index).map_err(git_err("cannot open the checkpoint index"))?;
        let stamp = &self.stamp;
        let previous_start_ns = std::fs::read_to_string(stamp)
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(0);
        let start = now_ns();
        let odb = self
            .repo
            .odb()
            .map_err(git_err("cannot open the checkpoint store"))?;
        let root = beneath::open_dir(workspace).map_err(io)?;
        let mut walk = walk::Walk {
            index: &mut index,
            odb: &odb,
            caps: &CAPS,
            previous_start_ns,
            seen: Default::default(),
            walked: Walked::default(),
        };
        walk.dir(&root, Path::new("")).map_err(io)?;
        let seen = std::mem::take(&mut walk.seen);
        let walked = std::mem::take(&mut walk.walked);
        let gone: Vec<PathBuf> = index
            .iter()
            .filter(|e| !seen.contains(&e.path))
            .map(|e| PathBuf::from(String::from_utf8_lossy(&e.path).into_owned()))
            .collect();
        for path in gone {
            index
                .remove_path(&path)
                .map_err(git_err("cannot update the checkpoint index"))?;
        }
        let tree = index
            .write_tree_to(&self.repo)
            .map_err(git_err("cannot write the checkpoint's tree"))?;
        index
            .write()
            .map_err(git_err("cannot write the checkpoint index"))?;
        std::fs::write(stamp, start.to_string()).map_err(io)?;
        Ok((tree, walked))
    }

    /// Every checkpoint, by name.
    pub fn list(&self) -> Result<Vec<Stored>, WorktreeError> {
        let mut out = Vec::new();
        let refs = self
            .repo
            .references_glob(&format!("{REFS}*"))
            .map_err(git_err("cannot list checkpoints"))?;
        for r in refs.flatten() {
            let (Some(name), Ok(commit)) = (r.name().map(str::to_string), r.peel_to_commit())
            else {
                continue;
            };
            out.push(Stored {
                name: name.trim_start_matches(REFS).to_string(),
                tree: commit.tree_id(),
                at_ms: commit.time().seconds() * 1000,
                message: commit.message().unwrap_or_default().to_string(),
            });
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }

    /// The tree of checkpoint `name`.
    pub fn tree(&self, name: &str) -> Option<Oid> {
        self.repo
            .find_reference(&format!("{REFS}{name}"))
            .and_then(|r| r.peel_to_commit())
            .map(|c| c.tree_id())
            .ok()
    }

    /// What differs from `from` (None: nothing) to `to`.
    pub fn changed(&self, from: Option<Oid>, to: Oid) -> Result<Vec<Changed>, WorktreeError> {
        let old = from
            .map(|f| self.repo.find_tree(f))
            .transpose()
            .map_err(git_err("cannot read a checkpoint"))?;
        let new = self
            .repo
            .find_tree(to)
            .map_err(git_err("cannot read a checkpoint"))?;
        let diff = self
            .repo
            .diff_tree_to_tree(old.as_ref(), Some(&new), None)
            .map_err(git_err("cannot compare checkpoints"))?;
        Ok(diff
            .deltas()
            .map(|d| Changed {
                path: d
                    .new_file()
                    .path()
                    .or(d.old_file().path())
                    .map(|p| p.display().to_string())
                    .unwrap_or_default(),
                status: match d.status() {
                    git2::Delta::Added => 'A',
                    git2::Delta::Deleted => 'D',
                    git2::Delta::Typechange => 'T',
                    _ => 'M',
                },
            })
            .collect())
    }

    /// Forgets checkpoint `name` (its objects go at the next `collect`).
    pub fn forget(&self, name: &str) -> Result<(), WorktreeError> {
        agentd_sandbox::umask::as_the_daemon(|| self.forget_private(name))
    }

    fn forget_private(&self, name: &str) -> Result<(), WorktreeError> {
        match self.repo.find_reference(&format!("{REFS}{name}")) {
            Ok(mut r) => r.delete().map_err(git_err("cannot forget a checkpoint")),
            Err(_) => Ok(()),
        }
    }

    /// Drops the objects no checkpoint needs (git's own collector, run on
    /// the daemon's own store with its own config only).
    pub fn collect(&self) -> Result<(), WorktreeError> {
        agentd_sandbox::umask::as_the_daemon(|| self.collect_private())
    }

    fn collect_private(&self) -> Result<(), WorktreeError> {
        let out = std::process::Command::new("git")
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_DIR", &self.dir)
            .args(["gc", "--quiet", "--prune=now"])
            .output()
            .map_err(|e| WorktreeError::refused(format!("cannot run git gc: {e}")))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(WorktreeError::refused(format!(
                "git gc of the checkpoint store failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            )))
        }
    }

    pub(crate) fn repo(&self) -> &Repository {
        &self.repo
    }
}

#[cfg(test)]
mod tests;
