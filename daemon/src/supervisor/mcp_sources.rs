//! Which MCP servers a new agent gets (DESIGN §18), and the person's
//! approval of a repository's servers.
//!
//! Sources, in order: config.toml's `[mcp_servers]`, then the `.mcp.json`
//! at the root of the repository the agent works in. A repository's server
//! never takes a config server's name (it is left out with a note); within
//! `.mcp.json` a name given twice is the later one's.
//!
//! A repository is whatever was cloned, so its servers start only once the
//! person approved them (`agentctl mcp approve`): per repository (its root,
//! canonical) and per definition (`ServerDef::fingerprint`), so a changed
//! command, argument, environment or URL is unapproved again. Until then no
//! path of the daemon starts one — not an agent's creation, not `mcp list`
//! — and agents are told why they lack it (a note). Approvals are kept
//! durably in the store (`store::mcp_approvals`); an approval given later,
//! or revoked, counts for agents made afterwards: an agent's servers are
//! frozen at its creation.
//!
//! For an agent in a worktree, the repository is the checkout the worktree
//! was made from (where the person asked for the agent, and ran `mcp list`
//! and `mcp approve`): its `.mcp.json` is read there and its approvals
//! count. The same holds for agents working in another agent's worktree
//! (its children), and for `mcp list` and `mcp approve` run inside one. The
//! servers still run in the agent's own directory.

use std::path::{Path, PathBuf};

use super::Supervisor;
use crate::domain::{AgentRecord, McpSource, now_ms};
use crate::error::{AgentdError, quote};
use crate::mcp::repository::{self, FILE_NAME};
use crate::mcp::{ServerDef, ServerName};
use crate::store::{McpApproval, Store};

/// Where a server's definition comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum McpOrigin {
    /// `[mcp_servers.NAME]` in config.toml.
    Config,
    /// The repository's `.mcp.json`.
    Repository,
}

/// A server a new agent would get (a repository's: once approved).
#[derive(Clone, Debug)]
pub struct Candidate {
    pub def: ServerDef,
    pub origin: McpOrigin,
    /// Config servers always; a repository's when the person approved this
    /// very definition for this repository.
    pub approved: bool,
}

/// The servers for a directory, with what was left out and why.
#[derive(Clone, Debug, Default)]
pub struct Candidates {
    pub servers: Vec<Candidate>,
    /// The root of the repository whose `.mcp.json` was looked for.
    pub repository: Option<PathBuf>,
    pub notes: Vec<String>,
}

impl Candidates {
    /// Config's servers, then those of the `.mcp.json` of the repository
    /// holding `dir` (canonical), each marked approved or not. Reads files
    /// and the store; starts nothing.
    pub fn gather(store: &Store, config: &[ServerDef], dir: &Path) -> Candidates {
        let mut out = Candidates {
            servers: config
                .iter()
                .map(|def| Candidate {
                    def: def.clone(),
                    origin: McpOrigin::Config,
                    approved: true,
                })
                .collect(),
            repository: repository::root_of(dir),
            notes: Vec::new(),
        };
        let Some(root) = out.repository.clone() else {
            return out;
        };
        let mut file = repository::read(&root);
        file.yield_to(config);
        out.notes.append(&mut file.notes);
        if file.servers.is_empty() {
            return out;
        }
        let approvals = match store.mcp_approvals(&root) {
            Ok(approvals) => approvals,
            Err(e) => {
                // Fail closed: unknown approvals are none.
                out.notes.push(format!(
                    "the approvals of {}'s servers could not be read ({e}); none is started",
                    root.display()
                ));
                Vec::new()
            }
        };
        out.servers.extend(file.servers.into_iter().map(|def| {
            let approved = is_approved(&approvals, &def);
            Candidate {
                def,
                origin: McpOrigin::Repository,
                approved,
            }
        }));
        out
    }

    /// What a new agent starts: the enabled servers that are approved,
    /// each with where it was defined.
    pub fn to_start(&self) -> Vec<(ServerDef, McpSource)> {
        self.servers
            .iter()
            .filter(|c| c.def.enabled && c.approved)
            .map(|c| {
                let source = match c.origin {
                    McpOrigin::Config => McpSource::Config,
                    McpOrigin::Repository => McpSource::Repository,
                };
                (c.def.clone(), source)
            })
            .collect()
    }

    /// What an agent is told: the notes, and each server left unapproved.
    pub fn agent_notes(&self) -> Vec<String> {
        let mut notes = self.notes.clone();
        let root = self.repository.as_deref().unwrap_or(Path::new("."));
        for c in self.servers.iter().filter(|c| !c.approved) {
            notes.push(format!(
                "{FILE_NAME} server {:?} ({}) was not started: it is not approved for {}; \
                 `agentctl mcp approve {}` there approves it for agents made afterwards",
                c.def.name.as_str(),
                c.def.transport.kind(),
                root.display(),
                c.def.name.as_str()
            ));
        }
        notes
    }
}

fn is_approved(approvals: &[McpApproval], def: &ServerDef) -> bool {
    let fingerprint = def.fingerprint();
    approvals
        .iter()
        .any(|a| a.name == def.name.as_str() && a.fingerprint == fingerprint)
}

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

/// `cwd` as given by a client: an absolute directory, canonical.
pub(super) fn client_dir(cwd: &Path) -> Result<PathBuf, AgentdError> {
    let bad = || {
        AgentdError::invalid(format!(
            "cwd {} is not an absolute path to a directory",
            quote(&cwd.display().to_string())
        ))
    };
    if !cwd.is_absolute() {
        return Err(bad());
    }
    let dir = cwd.canonicalize().map_err(|_| bad())?;
    if !dir.is_dir() {
        return Err(bad());
    }
    Ok(dir)
}

impl Supervisor {
    /// The root of the repository holding the client's `cwd` (inside an
    /// agent's worktree: its checkout's), or why there is none.
    fn repository_at(&self, cwd: &Path) -> Result<PathBuf, AgentdError> {
        let dir = self.mcp_home(&client_dir(cwd)?);
        repository::root_of(&dir).ok_or_else(|| {
            AgentdError::refused(format!(
                "{} is not in a git repository: approvals are for a repository's {FILE_NAME}; \
                 run this in the repository or pass --cwd",
                quote(&dir.display().to_string())
            ))
        })
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
    /// The servers for a new agent working in `dir` (canonical), as
    /// [`Candidates::gather`] finds them for the checkout `dir` counts as
    /// ([`Supervisor::mcp_home`]).
    pub(super) fn mcp_candidates(&self, dir: &Path) -> Candidates {
        let home = self.mcp_home(dir);
        Candidates::gather(&self.store, &self.config().mcp_servers, &home)
    }

    /// The directory whose repository's `.mcp.json` a new agent gets: the
    /// checkout its worktree was made from, else where it works (for
    /// [`Supervisor::mcp_candidates`]).
    pub(super) fn mcp_source_dir(record: &AgentRecord) -> &Path {
        record
            .worktree
            .as_ref()
            .map_or(record.cwd.as_path(), |w| w.checkout.as_path())
    }

    /// `dir`, or, inside a worktree agentd made for an agent, the checkout
    /// that tree was made from — as that agent's record says, never as the
    /// tree says — so that an agent's children working in its tree, and
    /// `mcp list` run there, count the servers approved for the checkout.
    fn mcp_home(&self, dir: &Path) -> PathBuf {
        super::worktrees::host_tree_name(dir)
            .and_then(|name| crate::domain::ShortId::from_stored(&name))
            .and_then(|s| self.store.agent_by_short_id(&s).ok().flatten())
            .and_then(|id| self.store.get_agent(id).ok().flatten())
            .and_then(|owner| owner.worktree)
            .filter(|w| w.owned && dir.starts_with(&w.path))
            .map_or_else(|| dir.to_path_buf(), |w| w.checkout)
    }

    /// Approves servers of the `.mcp.json` of the repository holding `cwd`
    /// as they are defined now. Returns the repository's root and each
    /// server approved. Starts nothing.
    pub async fn approve_mcp(
        &self,
        cwd: &Path,
        which: &McpSelection,
    ) -> Result<(PathBuf, Vec<ApprovedServer>), AgentdError> {
        let root = self.repository_at(cwd)?;
        let chosen = select(&root, &self.config().mcp_servers, which)?;
        let kept = self.store.mcp_approvals(&root)?;
        let now = now_ms();
        let approvals: Vec<McpApproval> = chosen
            .iter()
            .map(|def| McpApproval {
                name: def.name.as_str().to_string(),
                fingerprint: def.fingerprint(),
                approved_at_ms: now,
            })
            .collect();
        self.store.approve_mcp_durable(&root, &approvals).await?;
        for def in &chosen {
            tracing::info!(repository = %root.display(), server = %def.name, "MCP server approved");
        }
        let approved = chosen
            .into_iter()
            .map(|def| ApprovedServer {
                already: is_approved(&kept, &def),
                def,
            })
            .collect();
        Ok((root, approved))
    }

    /// Forgets approvals for the repository holding `cwd`: of the servers
    /// named (each must have one), or all of them. Returns the repository's
    /// root and the names forgotten. Agents made before keep their servers.
    pub async fn revoke_mcp(
        &self,
        cwd: &Path,
        which: &McpSelection,
    ) -> Result<(PathBuf, Vec<String>), AgentdError> {
        let root = self.repository_at(cwd)?;
        let names: Option<Vec<String>> = match which {
            McpSelection::All => None,
            McpSelection::Names(names) => {
                let kept = self.store.mcp_approvals(&root)?;
                if let Some(missing) = names
                    .iter()
                    .find(|n| !kept.iter().any(|a| a.name == n.as_str()))
                {
                    return Err(AgentdError::NotFound(format!(
                        "no server {:?} is approved for {}",
                        missing.as_str(),
                        root.display()
                    )));
                }
                Some(names.iter().map(|n| n.as_str().to_string()).collect())
            }
        };
        let revoked = self
            .store
            .revoke_mcp_durable(&root, names.as_deref())
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
    use std::collections::BTreeMap;

    use super::*;
    use crate::mcp::Transport;
    use crate::store::StoreOptions;

    fn stdio(name: &str, command: &str) -> ServerDef {
        ServerDef::new(
            ServerName::parse(name).unwrap(),
            Transport::Stdio {
                command: command.into(),
                args: Vec::new(),
                env: BTreeMap::new(),
                cwd: None,
            },
        )
    }

    fn repo_with(json: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("repo");
        std::fs::create_dir_all(root.join(".git")).unwrap();
        let root = root.canonicalize().unwrap();
        std::fs::write(root.join(".mcp.json"), json).unwrap();
        (dir, root)
    }

    fn names(c: &Candidates) -> Vec<(&str, McpOrigin, bool)> {
        c.servers
            .iter()
            .map(|s| (s.def.name.as_str(), s.origin, s.approved))
            .collect()
    }

    #[tokio::test]
    async fn a_repository_server_starts_only_as_the_definition_approved() {
        let (dir, root) = repo_with(r#"{"mcpServers": {"tools": {"command": "run-me"}}}"#);
        let store = Store::open(&dir.path().join("data"), StoreOptions::default()).unwrap();
        let config = [stdio("mine", "x")];
        let found = Candidates::gather(&store, &config, &root);
        assert_eq!(
            names(&found),
            [
                ("mine", McpOrigin::Config, true),
                ("tools", McpOrigin::Repository, false)
            ]
        );
        assert_eq!(found.repository.as_deref(), Some(root.as_path()));
        let start: Vec<_> = found.to_start().into_iter().map(|(d, _)| d.name).collect();
        assert_eq!(start, [ServerName::parse("mine").unwrap()]);
        let notes = found.agent_notes();
        assert_eq!(notes.len(), 1);
        assert!(
            notes[0].contains("\"tools\" (stdio) was not started"),
            "{notes:?}"
        );
        assert!(notes[0].contains("agentctl mcp approve tools"), "{notes:?}");

        let tools = stdio("tools", "run-me");
        let approval = |def: &ServerDef| McpApproval {
            name: def.name.as_str().into(),
            fingerprint: def.fingerprint(),
            approved_at_ms: 1,
        };
        store
            .approve_mcp_durable(&root, &[approval(&tools)])
            .await
            .unwrap();
        let found = Candidates::gather(&store, &config, &root);
        assert_eq!(found.to_start().len(), 2);
        assert!(found.agent_notes().is_empty());

        // Changed arguments: a definition no one approved.
        std::fs::write(
            root.join(".mcp.json"),
            r#"{"mcpServers": {"tools": {"command": "run-me", "args": ["--more"]}}}"#,
        )
        .unwrap();
        let found = Candidates::gather(&store, &config, &root);
        assert_eq!(found.to_start().len(), 1);
        assert!(!found.servers[1].approved);
        // Approved elsewhere is not approved here.
        let other = dir.path().join("other");
        std::fs::create_dir_all(other.join(".git")).unwrap();
        std::fs::write(
            other.join(".mcp.json"),
            r#"{"mcpServers": {"tools": {"command": "run-me"}}}"#,
        )
        .unwrap();
        let found = Candidates::gather(&store, &config, &other);
        assert!(!found.servers[1].approved);
    }

    #[test]
    fn outside_a_repository_only_config_servers_count() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("data"), StoreOptions::default()).unwrap();
        let found = Candidates::gather(&store, &[stdio("mine", "x")], Path::new("/"));
        assert_eq!(names(&found), [("mine", McpOrigin::Config, true)]);
        assert!(found.notes.is_empty());
    }

    #[test]
    fn selection_finds_named_servers_and_says_why_it_cannot() {
        let (_dir, root) = repo_with(
            r#"{"mcpServers": {"a": {"command": "x"}, "github": {"command": "y"},
                "bad": {"command": "z", "sandbox": "off"}}}"#,
        );
        let config = [stdio("github", "mine")];
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

    #[test]
    fn a_client_directory_must_be_absolute_and_exist() {
        assert!(matches!(
            client_dir(Path::new("rel")),
            Err(AgentdError::Invalid(_))
        ));
        assert!(matches!(
            client_dir(Path::new("/definitely/not/here")),
            Err(AgentdError::Invalid(_))
        ));
        let long = PathBuf::from(format!("/{}", "a".repeat(10_000)));
        let err = client_dir(&long).unwrap_err().to_string();
        assert!(err.len() < 300, "{err}");
    }
}
