//! Which MCP servers a new agent gets (DESIGN §18).
//!
//! Sources, in order, a later one's server taking an earlier one's name:
//! config.toml's `[mcp_servers]`, then the agent's type's front matter
//! (`mcpServers`), then the `.mcp.json` at the root of the repository the
//! agent works in. A repository's definition — `.mcp.json`'s, or a type
//! file's in the repository — never takes the name of one of the person's
//! own (config.toml's, or a type file of theirs): it is left out with a
//! note, so a repository cannot swap a server they trust for one of its
//! own. Editor-passed servers come last (`mcp::setup::chosen`).
//!
//! A repository is whatever was cloned, so its servers start only once the
//! person approved them (`agentctl mcp approve [--type T]`,
//! `mcp_approvals`): per repository (its root, canonical) and per
//! definition (`ServerDef::fingerprint`), so a changed command, argument,
//! environment or URL is unapproved again. Until then no path of the
//! daemon starts one — not an agent's creation, not `mcp list` — and
//! agents are told why they lack it (a note). Approvals are kept durably in
//! the store (`store::mcp_approvals`); an approval given later, or revoked,
//! counts for agents made afterwards: an agent's servers are frozen at its
//! creation.
//!
//! For an agent in a worktree, the repository is the checkout the worktree
//! was made from (where the person asked for the agent, and ran `mcp list`
//! and `mcp approve`): its `.mcp.json` is read there and its approvals
//! count. The same holds for agents working in another agent's worktree
//! (its children), and for `mcp list` and `mcp approve` run inside one. The
//! servers still run in the agent's own directory.

use std::path::{Path, PathBuf};

use super::Supervisor;
use crate::config::agent_types::{AgentType, TypeOrigin};
use crate::config::definitions::type_mcp::TypeMcp;
use crate::domain::{AgentRecord, McpSource};
use crate::error::{AgentdError, quote};
use crate::mcp::repository::{self, FILE_NAME};
use crate::mcp::{ServerDef, ServerName};
use crate::store::{Approval, Approved, Store};

/// Where a server's definition comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum McpOrigin {
    /// `[mcp_servers.NAME]` in config.toml.
    Config,
    /// The agent's type's front matter; `own`: a type file of the
    /// person's own, not the repository's.
    AgentType { own: bool },
    /// The repository's `.mcp.json`.
    Repository,
}

impl McpOrigin {
    /// The person's own definition: it needs no approval, and no
    /// repository's definition takes its name.
    pub fn is_own(self) -> bool {
        matches!(self, McpOrigin::Config | McpOrigin::AgentType { own: true })
    }
}

/// The servers an agent type brings (its front matter's `mcpServers`).
#[derive(Clone, Debug, PartialEq)]
pub struct TypeServers {
    pub type_name: String,
    /// A type file of the person's own (or built in).
    pub own: bool,
    pub mcp: TypeMcp,
}

impl TypeServers {
    /// `t`'s servers; None when it has none.
    pub fn of(t: &AgentType) -> Option<TypeServers> {
        (!t.mcp.is_empty()).then(|| TypeServers {
            type_name: t.name.clone(),
            own: !matches!(t.origin, TypeOrigin::Repository(_)),
            mcp: t.mcp.clone(),
        })
    }

    /// The name the approval of its server `server` is kept under: no
    /// `.mcp.json` server's name is one (a server's name has no '/'), and
    /// two types' servers of one name are approved apart.
    pub fn approval_name(type_name: &str, server: &ServerName) -> String {
        format!("{type_name}/{}", server.as_str())
    }
}

/// A server a new agent would get (a repository's: once approved).
#[derive(Clone, Debug)]
pub struct Candidate {
    pub def: ServerDef,
    pub origin: McpOrigin,
    /// The person's own servers always; a repository's when the person
    /// approved this very definition for this repository.
    pub approved: bool,
}

/// The servers for a directory, with what was left out and why.
#[derive(Clone, Debug, Default)]
pub struct Candidates {
    pub servers: Vec<Candidate>,
    /// The root of the repository whose `.mcp.json` was looked for.
    pub repository: Option<PathBuf>,
    pub notes: Vec<String>,
    /// The type whose servers were gathered, if any.
    of_type: Option<TypeServers>,
}

impl Candidates {
    /// Config's servers, then `of_type`'s, then those of the `.mcp.json` of
    /// the repository holding `dir` (canonical), each marked approved or
    /// not. Reads files and the store; starts nothing.
    pub fn gather(
        store: &Store,
        config: &[ServerDef],
        of_type: Option<&TypeServers>,
        dir: &Path,
    ) -> Candidates {
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
            of_type: of_type.cloned(),
        };
        if let Some(t) = of_type {
            out.add_type(t);
        }
        if let Some(root) = out.repository.clone() {
            out.add_repository(&root);
        }
        out.judge(store);
        out
    }

    fn position(&self, name: &ServerName) -> Option<usize> {
        self.servers.iter().position(|c| &c.def.name == name)
    }

    fn add_type(&mut self, t: &TypeServers) {
        let origin = McpOrigin::AgentType { own: t.own };
        for def in &t.mcp.inline {
            if let Some(i) = self.position(&def.name) {
                if !t.own {
                    self.notes.push(format!(
                        "agent type {:?}'s MCP server {:?} is ignored: config.toml has a server \
                         of that name, which is the one used",
                        quote(&t.type_name),
                        def.name.as_str()
                    ));
                    continue;
                }
                self.servers.remove(i);
            }
            self.servers.push(Candidate {
                def: def.clone(),
                origin,
                approved: t.own,
            });
        }
    }

    fn add_repository(&mut self, root: &Path) {
        let mut file = repository::read(root);
        let own: Vec<ServerDef> = self
            .servers
            .iter()
            .filter(|c| c.origin.is_own())
            .map(|c| c.def.clone())
            .collect();
        file.yield_to(&own);
        self.notes.append(&mut file.notes);
        for def in file.servers {
            // Only a repository's type server can have the name by now.
            if let Some(i) = self.position(&def.name) {
                self.servers.remove(i);
            }
            self.servers.push(Candidate {
                def,
                origin: McpOrigin::Repository,
                approved: false,
            });
        }
    }

    /// Marks each of the repository's servers approved or not.
    fn judge(&mut self, store: &Store) {
        if self.servers.iter().all(|c| c.origin.is_own()) {
            return;
        }
        let Some(root) = self.repository.clone() else {
            return;
        };
        let approvals = match store.approvals(Approved::McpServers, &root) {
            Ok(approvals) => approvals,
            Err(e) => {
                // Fail closed: unknown approvals are none.
                self.notes.push(format!(
                    "the approvals of {}'s servers could not be read ({e}); none is started",
                    root.display()
                ));
                return;
            }
        };
        let type_name = self.of_type.as_ref().map(|t| t.type_name.clone());
        for c in self.servers.iter_mut().filter(|c| !c.origin.is_own()) {
            let key = match (c.origin, &type_name) {
                (McpOrigin::AgentType { .. }, Some(t)) => {
                    TypeServers::approval_name(t, &c.def.name)
                }
                _ => c.def.name.as_str().to_string(),
            };
            c.approved = is_approved(&approvals, &key, &c.def);
        }
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
                    McpOrigin::AgentType { .. } => McpSource::AgentType,
                    McpOrigin::Repository => McpSource::Repository,
                };
                let mut def = c.def.clone();
                // A repository's server runs confined whatever the agent's
                // mode: the repository's files are any agent's there to
                // change, and an approval covers the definition only.
                if !c.origin.is_own() {
                    def.sandbox = crate::mcp::SandboxChoice::Always;
                }
                (def, source)
            })
            .collect()
    }

    /// What an agent is told: the notes, each server left unapproved, and
    /// each server its type asks for that no source defines (`requested`:
    /// the servers its creation request passed).
    pub fn agent_notes(&self, requested: &[ServerDef]) -> Vec<String> {
        let mut notes = self.notes.clone();
        let root = match &self.repository {
            Some(root) => root.display().to_string(),
            None => "any repository (it is in none, and approvals are a repository's)".into(),
        };
        for c in self.servers.iter().filter(|c| !c.approved) {
            let (whose, approve) = match (c.origin, &self.of_type) {
                (McpOrigin::AgentType { .. }, Some(t)) => (
                    format!("agent type {:?}'s MCP", quote(&t.type_name)),
                    format!("--type {} ", t.type_name),
                ),
                _ => (FILE_NAME.to_string(), String::new()),
            };
            notes.push(format!(
                "{whose} server {:?} ({}) was not started: it is not approved for {root}; \
                 `agentctl mcp approve {approve}{}` there approves it for agents made afterwards",
                c.def.name.as_str(),
                c.def.transport.kind(),
                c.def.name.as_str()
            ));
        }
        notes.extend(self.missing_references(requested));
        notes
    }

    /// A note on each server the type asks for by name that no source
    /// defines (`requested`: the servers the creation request passed).
    pub fn missing_references(&self, requested: &[ServerDef]) -> Vec<String> {
        let Some(t) = &self.of_type else {
            return Vec::new();
        };
        t.mcp
            .references
            .iter()
            .filter(|name| {
                self.position(name).is_none() && !requested.iter().any(|d| &d.name == *name)
            })
            .map(|name| {
                format!(
                    "agent type {:?} asks for MCP server {:?}, which neither config.toml, \
                     the type, {FILE_NAME} nor the editor defines",
                    quote(&t.type_name),
                    name.as_str()
                )
            })
            .collect()
    }
}

pub(super) fn is_approved(approvals: &[Approval], key: &str, def: &ServerDef) -> bool {
    let fingerprint = def.fingerprint();
    approvals
        .iter()
        .any(|a| a.name == key && a.fingerprint == fingerprint)
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
    /// The servers for a new agent working in `dir` (canonical), of type
    /// `of_type`, as [`Candidates::gather`] finds them for the checkout
    /// `dir` counts as ([`Supervisor::mcp_home`]).
    pub(super) fn mcp_candidates(&self, dir: &Path, of_type: Option<&TypeServers>) -> Candidates {
        let home = self.mcp_home(dir);
        Candidates::gather(&self.store, &self.config().mcp_servers, of_type, &home)
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
    pub(super) fn mcp_home(&self, dir: &Path) -> PathBuf {
        super::worktrees::host_tree_name(dir)
            .and_then(|name| crate::domain::ShortId::from_stored(&name))
            .and_then(|s| self.store.agent_by_short_id(&s).ok().flatten())
            .and_then(|id| self.store.get_agent(id).ok().flatten())
            .and_then(|owner| owner.worktree)
            .filter(|w| w.owned && dir.starts_with(&w.path))
            .map_or_else(|| dir.to_path_buf(), |w| w.checkout)
    }

    /// The agent type `name` as a subagent working in `dir` (a client's
    /// directory, canonical) finds it.
    pub(super) fn agent_type_at(&self, dir: &Path, name: &str) -> Result<AgentType, AgentdError> {
        let home = self.mcp_home(dir);
        crate::config::agent_types::resolve(name, &home, &agentd_shared::paths::config_dir())
            .map_err(|e| match e {
                crate::config::agent_types::TypeError::Unknown(why) => AgentdError::NotFound(why),
                crate::config::agent_types::TypeError::Unusable(why) => AgentdError::refused(why),
            })
    }
}

#[cfg(test)]
mod tests;
