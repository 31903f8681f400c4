//! The person's approval of a repository's MCP servers (DESIGN §18): of the
//! servers of its `.mcp.json`, or of an agent type file in it (front matter
//! `mcpServers`). A repository is whatever was cloned, so none of its
//! servers starts before the person approved it, as defined now
//! (`mcp_sources` checks approvals; this is where they are given and taken
//! back). Approving starts nothing.
//!
//! An approval is kept per repository root, under the server's name for
//! `.mcp.json` and `TYPE/SERVER` for a type's (`TypeServers::approval_name`),
//! with the fingerprint of the definition approved.

use std::path::{Path, PathBuf};

use super::Supervisor;
use super::mcp_sources::{TypeServers, client_dir, is_approved};
use crate::config::agent_types::TypeOrigin;
use crate::domain::now_ms;
use crate::error::{AgentdError, quote};
use crate::mcp::repository::{self, FILE_NAME};
use crate::mcp::{ServerDef, ServerName};
use crate::store::{Approval, Approved};

/// Which servers an approval or a revocation names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum McpSelection {
    Names(Vec<ServerName>),
    All,
}

/// A server `approve_mcp` approved.
#[derive(Clone, Debug)]
pub struct ApprovedServer {
    pub def: ServerDef,
    /// This definition was approved already.
    pub already: bool,
}

impl Supervisor {
    /// The root of the repository holding the client's `cwd` (inside an
    /// agent's worktree: its checkout's), or why there is none.
    fn repository_at(&self, cwd: &Path) -> Result<PathBuf, AgentdError> {
        let dir = self.mcp_home(&client_dir(cwd)?);
        repository::root_of(&dir).ok_or_else(|| {
            AgentdError::refused(format!(
                "{} is not in a git repository: approvals are for a repository's servers \
                 ({FILE_NAME}, its agent types); run this in the repository or pass --cwd",
                quote(&dir.display().to_string())
            ))
        })
    }

    /// The servers of agent type `type_name` (a type file of the
    /// repository at `cwd`) that `which` names, each checked.
    fn select_of_type(
        &self,
        cwd: &Path,
        type_name: &str,
        which: &McpSelection,
    ) -> Result<Vec<ServerDef>, AgentdError> {
        let t = self.agent_type_at(&client_dir(cwd)?, type_name)?;
        let file = match &t.origin {
            TypeOrigin::Repository(file) => file.display().to_string(),
            TypeOrigin::BuiltIn => {
                return Err(AgentdError::refused(format!(
                    "agent type {:?} is built in and has no MCP servers to approve",
                    quote(type_name)
                )));
            }
            TypeOrigin::User(file) => {
                return Err(AgentdError::refused(format!(
                    "agent type {:?} is your own ({}): its servers need no approval",
                    quote(type_name),
                    file.display()
                )));
            }
        };
        let config = &self.config().mcp_servers;
        let shadowed = |d: &ServerDef| config.iter().any(|c| c.name == d.name);
        let usable: Vec<&ServerDef> = t.mcp.inline.iter().filter(|d| !shadowed(d)).collect();
        let names = match which {
            McpSelection::All if usable.is_empty() => {
                return Err(AgentdError::refused(format!(
                    "agent type {:?} ({file}) defines no MCP server to approve",
                    quote(type_name)
                )));
            }
            McpSelection::All => return Ok(usable.into_iter().cloned().collect()),
            McpSelection::Names(names) => names,
        };
        names
            .iter()
            .map(|name| match t.mcp.inline.iter().find(|d| &d.name == name) {
                Some(def) if shadowed(def) => Err(AgentdError::refused(format!(
                    "config.toml has a server named {:?}, which agents get instead of the \
                     type's: there is nothing to approve",
                    name.as_str()
                ))),
                Some(def) => Ok(def.clone()),
                None => {
                    let has: Vec<&str> = usable.iter().map(|d| d.name.as_str()).collect();
                    Err(AgentdError::NotFound(format!(
                        "agent type {:?} ({file}) defines no server {:?}; it has: {}",
                        quote(type_name),
                        name.as_str(),
                        if has.is_empty() {
                            "none".to_string()
                        } else {
                            has.join(", ")
                        }
                    )))
                }
            })
            .collect()
    }
}

/// The servers of `root`'s `.mcp.json` that `which` names, each checked.
fn select(
    root: &Path,
    config: &[ServerDef],
    which: &McpSelection,
) -> Result<Vec<ServerDef>, AgentdError> {
    let path = root.join(FILE_NAME);
    let mut file = repository::read(root);
    if !file.found {
        return Err(AgentdError::refused(format!(
            "{} does not exist: this repository defines no MCP servers",
            path.display()
        )));
    }
    let had_notes = file.notes.len();
    file.yield_to(config);
    // At most a few notes: a message quotes no more than a short part of
    // what a file says.
    let unusable = || match &file.notes[..had_notes] {
        [] => String::new(),
        [one] => format!(" ({one})"),
        [first, rest @ ..] => format!(" ({first}; and {} more notes)", rest.len()),
    };
    let names = match which {
        McpSelection::All if file.servers.is_empty() => {
            return Err(AgentdError::refused(format!(
                "{} has no server to approve{}",
                path.display(),
                unusable()
            )));
        }
        McpSelection::All => return Ok(file.servers),
        McpSelection::Names(names) => names,
    };
    names
        .iter()
        .map(|name| {
            if let Some(def) = file.servers.iter().find(|d| &d.name == name) {
                return Ok(def.clone());
            }
            if config.iter().any(|c| &c.name == name) {
                return Err(AgentdError::refused(format!(
                    "config.toml has a server named {:?}, which agents get instead of the \
                     repository's: there is nothing to approve",
                    name.as_str()
                )));
            }
            let has: Vec<&str> = file.servers.iter().map(|d| d.name.as_str()).collect();
            Err(AgentdError::NotFound(format!(
                "{} has no usable server {:?}{}; it has: {}",
                path.display(),
                name.as_str(),
                unusable(),
                if has.is_empty() {
                    "none".to_string()
                } else {
                    has.join(", ")
                }
            )))
        })
        .collect()
}

impl Supervisor {
    /// Approves servers of the `.mcp.json` of the repository holding `cwd`
    /// (with `agent_type`: of that type's file there) as they are defined
    /// now. Returns the repository's root and each server approved. Starts
    /// nothing.
    pub async fn approve_mcp(
        &self,
        cwd: &Path,
        which: &McpSelection,
        agent_type: Option<&str>,
    ) -> Result<(PathBuf, Vec<ApprovedServer>), AgentdError> {
        let root = self.repository_at(cwd)?;
        let chosen = match agent_type {
            None => select(&root, &self.config().mcp_servers, which)?,
            Some(t) => self.select_of_type(cwd, t, which)?,
        };
        let key = |name: &ServerName| match agent_type {
            None => name.as_str().to_string(),
            Some(t) => TypeServers::approval_name(t, name),
        };
        let kept = self.store.approvals(Approved::McpServers, &root)?;
        let now = now_ms();
        let approvals: Vec<Approval> = chosen
            .iter()
            .map(|def| Approval {
                name: key(&def.name),
                fingerprint: def.fingerprint(),
                approved_at_ms: now,
            })
            .collect();
        self.store
            .approve_durable(Approved::McpServers, &root, &approvals)
            .await?;
        for a in &approvals {
            tracing::info!(repository = %root.display(), server = %a.name, "MCP server approved");
        }
        let approved = chosen
            .into_iter()
            .map(|def| ApprovedServer {
                already: is_approved(&kept, &key(&def.name), &def),
                def,
            })
            .collect();
        Ok((root, approved))
    }

    /// Forgets approvals for the repository holding `cwd`: of the servers
    /// named (each must have one), or all of them; with `agent_type`, of
    /// that type's servers. Returns the repository's root and the names
    /// forgotten. Agents made before keep their servers.
    pub async fn revoke_mcp(
        &self,
        cwd: &Path,
        which: &McpSelection,
        agent_type: Option<&str>,
    ) -> Result<(PathBuf, Vec<String>), AgentdError> {
        let root = self.repository_at(cwd)?;
        let key = |name: &ServerName| match agent_type {
            None => name.as_str().to_string(),
            Some(t) => TypeServers::approval_name(t, name),
        };
        let names: Option<Vec<String>> = match (which, agent_type) {
            (McpSelection::All, None) => None,
            (McpSelection::All, Some(t)) => {
                let prefix = format!("{t}/");
                let kept = self.store.approvals(Approved::McpServers, &root)?;
                let names: Vec<String> = kept
                    .into_iter()
                    .filter(|a| a.name.starts_with(&prefix))
                    .map(|a| a.name)
                    .collect();
                if names.is_empty() {
                    return Err(AgentdError::NotFound(format!(
                        "no server of agent type {:?} is approved for {}",
                        quote(t),
                        root.display()
                    )));
                }
                Some(names)
            }
            (McpSelection::Names(names), _) => {
                let kept = self.store.approvals(Approved::McpServers, &root)?;
                let keys: Vec<String> = names.iter().map(key).collect();
                if let Some(missing) = keys.iter().find(|k| !kept.iter().any(|a| &a.name == *k)) {
                    return Err(AgentdError::NotFound(format!(
                        "no server {:?} is approved for {}",
                        quote(missing),
                        root.display()
                    )));
                }
                Some(keys)
            }
        };
        let revoked = self
            .store
            .revoke_durable(Approved::McpServers, &root, names.as_deref())
            .await?;
        for name in &revoked {
            tracing::info!(repository = %root.display(), server = %name, "MCP server approval revoked");
        }
        Ok((root, revoked))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {

    use super::*;

    fn repo_with(json: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("repo");
        std::fs::create_dir_all(root.join(".git")).unwrap();
        let root = root.canonicalize().unwrap();
        std::fs::write(root.join(".mcp.json"), json).unwrap();
        (dir, root)
    }

    #[test]
    fn selection_finds_named_servers_and_says_why_it_cannot() {
        let (_dir, root) = repo_with(
            r#"{"mcpServers": {"a": {"command": "x"}, "github": {"command": "y"},
                "bad": {"command": "z", "sandbox": "off"}}}"#,
        );
        let config = [ServerDef::stdio_for_test("github", "mine")];
        let name = |n: &str| ServerName::parse(n).unwrap();
        let all = select(&root, &config, &McpSelection::All).unwrap();
        assert_eq!(all.len(), 1);
        assert_eq!(all[0].name.as_str(), "a");
        let one = select(&root, &config, &McpSelection::Names(vec![name("a")])).unwrap();
        assert_eq!(one[0].name.as_str(), "a");
        let err = select(&root, &config, &McpSelection::Names(vec![name("github")])).unwrap_err();
        assert!(matches!(err, AgentdError::Refused(_)), "{err}");
        let err = select(&root, &config, &McpSelection::Names(vec![name("nope")])).unwrap_err();
        assert!(matches!(err, AgentdError::NotFound(_)), "{err}");
        assert!(err.to_string().contains("it has: a"), "{err}");
        let err = select(&root, &config, &McpSelection::Names(vec![name("bad")])).unwrap_err();
        assert!(err.to_string().contains("sandbox"), "says why: {err}");

        std::fs::write(root.join(".mcp.json"), "not json").unwrap();
        let err = select(&root, &config, &McpSelection::All).unwrap_err();
        assert!(matches!(err, AgentdError::Refused(_)), "{err}");
        assert!(err.to_string().contains("not valid JSON"), "{err}");
        std::fs::remove_file(root.join(".mcp.json")).unwrap();
        let err = select(&root, &config, &McpSelection::All).unwrap_err();
        assert!(err.to_string().contains("does not exist"), "{err}");
    }
}
