//! The repositories agentd has made worktrees in, so that `worktrees`,
//! `prune` and the startup sweep find every tree, even one whose agent's
//! record was never written (a crash between the two) or was removed.

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::{Store, StoreError};

impl Store {
    /// Records `common_dir` (a repository's common git directory) and waits
    /// until it is on disk: before a worktree is made in it.
    pub async fn remember_repo_durable(&self, common_dir: &Path) -> Result<(), StoreError> {
        let key = common_dir.as_os_str().as_bytes();
        {
            let trees = self.trees()?;
            if trees.worktree_repos.contains_key(key).unwrap_or(false) {
                return Ok(());
            }
        }
        let trees = self.trees_for_write()?;
        trees
            .worktree_repos
            .insert(key, &[] as &[u8])
            .map_err(|e| self.write_error(e))?;
        self.flush_on(trees).await
    }

    /// Every repository recorded, oldest key order.
    pub fn worktree_repos(&self) -> Result<Vec<PathBuf>, StoreError> {
        let trees = self.trees()?;
        let mut out = Vec::new();
        for key in trees.worktree_repos.iter().keys() {
            out.push(PathBuf::from(std::ffi::OsStr::from_bytes(&key?)));
        }
        Ok(out)
    }
}
