//! What a person approved of a repository (a cloned repository's
//! definitions do nothing until then), per repository and per definition:
//! its `.mcp.json` servers and agent types' servers (DESIGN §18) and its
//! settings files' allow rules (DESIGN §24), each kind in a tree of its
//! own. The key is the repository's root (canonical path) and the
//! definition's name, the value the fingerprint of the definition
//! approved. A definition that changed since no longer matches, and needs
//! approving again; matching is the caller's (`supervisor::mcp_sources`,
//! `supervisor::rules`).
//!
//! An approval that cannot be decoded is skipped like every corrupt item
//! (counted, logged once): what it was for is then unapproved, which
//! starts and allows nothing.

use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use prost::Message as _;

use super::{Store, StoreError};

/// What an approval is of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Approved {
    /// MCP servers: named by server (`TYPE/SERVER` for an agent type's).
    McpServers,
    /// Permission allow rules of a repository's settings files: named by
    /// file and rule (`supervisor::rules`).
    Rules,
}

/// One definition approved for a repository.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Approval {
    pub name: String,
    /// The fingerprint of the definition approved (`ServerDef::fingerprint`,
    /// `supervisor::rules`'s of a rule).
    pub fingerprint: String,
    pub approved_at_ms: i64,
}

#[derive(Clone, PartialEq, prost::Message)]
struct StoredApproval {
    #[prost(string, tag = "1")]
    fingerprint: String,
    #[prost(int64, tag = "2")]
    approved_at_ms: i64,
}

/// The keys of `root`'s approvals start with this: a path holds no NUL, so
/// no other repository's keys do.
fn prefix(root: &Path) -> Vec<u8> {
    let mut key = root.as_os_str().as_bytes().to_vec();
    key.push(0);
    key
}

fn key(root: &Path, name: &str) -> Vec<u8> {
    let mut key = prefix(root);
    key.extend_from_slice(name.as_bytes());
    key
}

fn tree(trees: &super::Trees, of: Approved) -> &sled::Tree {
    match of {
        Approved::McpServers => &trees.mcp_approvals,
        Approved::Rules => &trees.rule_approvals,
    }
}

impl Store {
    /// The approvals of `of` kept for the repository whose root is `root`,
    /// in name order.
    pub fn approvals(&self, of: Approved, root: &Path) -> Result<Vec<Approval>, StoreError> {
        let trees = self.trees()?;
        let start = prefix(root);
        let mut out = Vec::new();
        for item in tree(&trees, of).scan_prefix(&start) {
            let (key, value) = item?;
            let name = std::str::from_utf8(&key[start.len()..]).map(str::to_string);
            match (name, StoredApproval::decode(value.as_ref())) {
                (Ok(name), Ok(stored)) => out.push(Approval {
                    name,
                    fingerprint: stored.fingerprint,
                    approved_at_ms: stored.approved_at_ms,
                }),
                (Err(e), _) => self.note_corrupt("approval", &key, &e),
                (_, Err(e)) => self.note_corrupt("approval", &key, &e),
            }
        }
        Ok(out)
    }

    /// Records `approvals` for the repository at `root` (replacing what was
    /// kept for the same names), all or none; on disk when this returns.
    pub async fn approve_durable(
        &self,
        of: Approved,
        root: &Path,
        approvals: &[Approval],
    ) -> Result<(), StoreError> {
        let trees = self.trees_for_write()?;
        let mut batch = sled::Batch::default();
        for a in approvals {
            let stored = StoredApproval {
                fingerprint: a.fingerprint.clone(),
                approved_at_ms: a.approved_at_ms,
            };
            batch.insert(key(root, &a.name), stored.encode_to_vec());
        }
        tree(&trees, of)
            .apply_batch(batch)
            .map_err(|e| self.write_error(e))?;
        self.flush_on(trees).await
    }

    /// Forgets the approvals of `names` for the repository at `root` (every
    /// one of its approvals when `names` is None); on disk when this
    /// returns. The names that had one.
    pub async fn revoke_durable(
        &self,
        of: Approved,
        root: &Path,
        names: Option<&[String]>,
    ) -> Result<Vec<String>, StoreError> {
        let kept: Vec<String> = self
            .approvals(of, root)?
            .into_iter()
            .map(|a| a.name)
            .filter(|n| names.is_none_or(|wanted| wanted.contains(n)))
            .collect();
        if kept.is_empty() {
            return Ok(kept);
        }
        let trees = self.trees_for_write()?;
        let mut batch = sled::Batch::default();
        for name in &kept {
            batch.remove(key(root, name));
        }
        tree(&trees, of)
            .apply_batch(batch)
            .map_err(|e| self.write_error(e))?;
        self.flush_on(trees).await?;
        Ok(kept)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::StoreOptions;

    fn approval(name: &str, fingerprint: &str) -> Approval {
        Approval {
            name: name.into(),
            fingerprint: fingerprint.into(),
            approved_at_ms: 7,
        }
    }

    #[tokio::test]
    async fn approvals_are_kept_per_repository_across_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), StoreOptions::default()).unwrap();
        let repo = PathBuf::from("/src/repo");
        // A repository whose path extends the other's shares no key.
        let longer = PathBuf::from("/src/repo-2");
        store
            .approve_durable(
                Approved::McpServers,
                &repo,
                &[approval("b", "f1"), approval("a", "f2")],
            )
            .await
            .unwrap();
        store
            .approve_durable(Approved::McpServers, &longer, &[approval("a", "other")])
            .await
            .unwrap();
        store
            .approve_durable(Approved::McpServers, &repo, &[approval("b", "f3")])
            .await
            .unwrap();
        drop(store);
        let store = crate::reopen_for_tests(dir.path());
        assert_eq!(
            store.approvals(Approved::McpServers, &repo).unwrap(),
            vec![approval("a", "f2"), approval("b", "f3")]
        );
        assert_eq!(
            store
                .approvals(Approved::McpServers, &longer)
                .unwrap()
                .len(),
            1
        );
        assert!(
            store
                .approvals(Approved::McpServers, Path::new("/src"))
                .unwrap()
                .is_empty()
        );

        let gone = store
            .revoke_durable(
                Approved::McpServers,
                &repo,
                Some(&["b".to_string(), "zz".to_string()]),
            )
            .await
            .unwrap();
        assert_eq!(gone, ["b"]);
        assert_eq!(
            store.approvals(Approved::McpServers, &repo).unwrap(),
            vec![approval("a", "f2")]
        );
        assert_eq!(
            store
                .revoke_durable(Approved::McpServers, &repo, None)
                .await
                .unwrap(),
            ["a"]
        );
        assert!(
            store
                .approvals(Approved::McpServers, &repo)
                .unwrap()
                .is_empty()
        );
        assert_eq!(
            store
                .approvals(Approved::McpServers, &longer)
                .unwrap()
                .len(),
            1
        );
    }

    #[tokio::test]
    async fn a_corrupt_approval_counts_as_none() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), StoreOptions::default()).unwrap();
        let repo = PathBuf::from("/r");
        store
            .approve_durable(Approved::McpServers, &repo, &[approval("a", "f")])
            .await
            .unwrap();
        store
            .trees()
            .unwrap()
            .mcp_approvals
            .insert(key(&repo, "b"), &[0xff, 0xff, 0xff][..])
            .unwrap();
        assert_eq!(
            store.approvals(Approved::McpServers, &repo).unwrap(),
            vec![approval("a", "f")]
        );
        assert_eq!(store.corrupt_count(), 1);
    }
}
