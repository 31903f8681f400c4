//! A new agent's MCP servers (DESIGN §18): config.toml's enabled servers,
//! the repository's `.mcp.json` ones the person approved, and those its
//! creation request passed (an editor's, which win a name) are each started
//! for it (as it would run for the agent: in its sandbox, in its working
//! directory), its tools listed, and the server ended again. The tools join
//! the agent's frozen tools array, so the prompt cache holds; a server that
//! does not start is recorded with the reason and offers nothing. Which
//! servers those are — config.toml's, and the repository's `.mcp.json`
//! ones the person approved — is `mcp_sources`' to say; a server not
//! approved is never started here, only named in a note.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::Supervisor;
use super::mcp_sources::{self, McpOrigin, TypeServers};
use crate::domain::{
    AgentId, AgentRecord, McpSource, McpToolName, PromptContext, SHORT_ID_LEN, now_ms,
};
use crate::error::AgentdError;
use crate::mcp::live::list_tools;
use crate::mcp::setup::chosen;
use crate::mcp::{ServerDef, ServerName, Setup};
use crate::tools::{AgentProcesses, ToolContext};

/// What a new agent's servers are chosen from, once it is placed.
pub(super) struct McpPending {
    /// The servers its creation request passed (an editor's).
    pub requested: Vec<ServerDef>,
    /// Its type's, if it has one with servers.
    pub of_type: Option<TypeServers>,
}

impl Supervisor {
    /// Lists the tools of the servers `record` gets into `prompt`, and
    /// `pending`'s (`chosen`). An agent whose tools are limited to a list
    /// (a typed subagent) gets only the MCP tools the list names (its
    /// type's own servers' are on it).
    pub(super) async fn freeze_mcp(
        &self,
        record: &mut AgentRecord,
        prompt: &mut PromptContext,
        pending: &McpPending,
    ) {
        if prompt.allowed_tools.as_ref().is_some_and(|a| !a.has_mcp()) {
            return;
        }
        let requested = &pending.requested;
        let candidates =
            self.mcp_candidates(Self::mcp_source_dir(record), pending.of_type.as_ref());
        record.mcp_notes = candidates.agent_notes(requested);
        for note in &record.mcp_notes {
            tracing::warn!(agent = %record.id, "MCP: {note}");
        }
        let defs = chosen(&candidates.to_start(), requested);
        if defs.is_empty() {
            return;
        }
        let ctx = ToolContext {
            cwd: record.cwd.clone(),
            cancel: CancellationToken::new(),
            spool: None,
            env: self.settings.tool_env().clone(),
            worktree_of: None,
            sandbox: crate::sandbox::Policy::for_agent(record),
            // Its own namespace, killed (with the servers) when dropped.
            processes: Arc::new(AgentProcesses::default()),
        };
        let listed = futures::future::join_all(defs.iter().map(|(d, _)| list_tools(d, &ctx))).await;
        let allowed = |t: &crate::mcp::ToolDecl| {
            prompt.allowed_tools.as_ref().is_none_or(|a| {
                McpToolName::parse(&t.wire_name).is_some_and(|name| a.allows_mcp(&name))
            })
        };
        let listed = listed
            .into_iter()
            .map(|r| r.map(|tools| tools.into_iter().filter(allowed).collect()));
        let setup = Setup::build(
            defs.into_iter()
                .zip(listed)
                .map(|((def, source), listed)| (def, source, listed))
                .collect(),
        );
        for s in &setup.servers {
            match &s.listed {
                Ok(n) => {
                    tracing::info!(agent = %record.id, server = %s.def.name, tools = n, "MCP server listed")
                }
                Err(why) => {
                    tracing::warn!(agent = %record.id, server = %s.def.name, "MCP server offers no tools: {why}")
                }
            }
        }
        prompt.tools_json = setup.extend_tools_json(&prompt.tools_json);
        prompt.mcp_json = setup.to_json();
        record.mcp_servers = setup.summaries();
    }

    /// The servers `parent` was given with its creation request (or
    /// inherited so), which a subagent it starts gets too: they are part of
    /// the session the editor opened (its own tools, often), and the
    /// subagent does a share of that session's work.
    pub(super) fn requested_servers_of(&self, parent: &AgentRecord) -> Vec<ServerDef> {
        if !parent
            .mcp_servers
            .iter()
            .any(|s| s.source == McpSource::Editor)
        {
            return Vec::new();
        }
        match self.store.get_prompt(parent.id) {
            Ok(Some(prompt)) => Setup::from_json(&prompt.mcp_json).editor_defs(),
            Ok(None) => Vec::new(),
            Err(e) => {
                tracing::warn!(agent = %parent.id, error = %e, "its MCP servers cannot be read; its subagent gets config.toml's only");
                Vec::new()
            }
        }
    }
}

/// What `mcp list` says of a server.
#[derive(Clone, Debug)]
pub enum ReportState {
    /// `enabled = false`: not started.
    Disabled,
    /// A repository's server the person has not approved (as defined now):
    /// not started.
    Unapproved,
    /// Started: the tools it listed (wire names), or why it did not.
    Listed(Result<Vec<String>, String>),
}

/// One server, as `mcp list` reports it.
pub struct McpReport {
    pub def: ServerDef,
    pub origin: McpOrigin,
    pub state: ReportState,
}

/// Every server a new agent in a directory would get, and the notes on
/// what was left out.
pub struct McpListing {
    pub servers: Vec<McpReport>,
    /// The root of the repository whose `.mcp.json` was looked for.
    pub repository: Option<PathBuf>,
    pub notes: Vec<String>,
}

impl Supervisor {
    /// Starts each server a new agent working in `cwd` would get (of type
    /// `agent_type`, with its servers: under the default sandbox), lists
    /// its tools and ends it. A disabled server, or a repository's server
    /// not approved, is reported without starting.
    pub async fn mcp_report(
        &self,
        cwd: &Path,
        agent_type: Option<&str>,
    ) -> Result<McpListing, AgentdError> {
        let cwd = mcp_sources::client_dir(cwd)?;
        let of_type = match agent_type {
            Some(name) => TypeServers::of(&self.agent_type_at(&cwd, name)?),
            None => None,
        };
        let candidates = self.mcp_candidates(&cwd, of_type.as_ref());
        let notes = [candidates.notes.clone(), candidates.missing_references(&[])].concat();
        // A stand-in for an agent working there, for its sandbox policy.
        let id = AgentId::random();
        let mut probe = AgentRecord::new(id, id.short_prefix(SHORT_ID_LEN), now_ms());
        probe.cwd = cwd;
        probe.sandbox = self.config().sandbox.mode;
        probe.network = self.config().network.mode;
        let ctx = ToolContext {
            cwd: probe.cwd.clone(),
            cancel: CancellationToken::new(),
            spool: None,
            env: self.settings.tool_env().clone(),
            worktree_of: None,
            sandbox: crate::sandbox::Policy::for_agent(&probe),
            processes: Arc::new(AgentProcesses::default()),
        };
        let states = futures::future::join_all(candidates.servers.iter().map(async |c| {
            if !c.approved {
                return ReportState::Unapproved;
            }
            if !c.def.enabled {
                return ReportState::Disabled;
            }
            ReportState::Listed(
                list_tools(&c.def, &ctx)
                    .await
                    .map(|tools| tools.into_iter().map(|t| t.wire_name).collect()),
            )
        }))
        .await;
        drop(ctx);
        crate::sandbox::remove_tmpdir(probe.short_id.as_str());
        Ok(McpListing {
            servers: candidates
                .servers
                .into_iter()
                .zip(states)
                .map(|(c, state)| McpReport {
                    def: c.def,
                    origin: c.origin,
                    state,
                })
                .collect(),
            notes,
            repository: candidates.repository,
        })
    }
}

impl Supervisor {
    /// `mcp restart NAME`: ends the server's session in every running
    /// agent that has it (a stdio server is killed); each starts it afresh
    /// at its next call. How many sessions were ended.
    pub async fn restart_mcp(&self, name: &str) -> Result<u32, AgentdError> {
        let name = ServerName::parse(name).map_err(AgentdError::invalid)?;
        let configured = self.config().mcp_servers.iter().any(|d| d.name == name);
        let runs: Vec<_> = self
            .registry
            .handles()
            .into_iter()
            .filter_map(|(_, h)| h.run().as_ref().map(|r| r.mcp.clone()))
            .filter(|m| m.has_server(&name))
            .collect();
        if !configured && runs.is_empty() {
            return Err(AgentdError::NotFound(format!(
                "no MCP server named {name}: none is configured and no running agent has one"
            )));
        }
        let mut ended = 0;
        for servers in runs {
            if servers.restart(&name).await {
                ended += 1;
            }
        }
        tracing::info!(server = %name, ended, "MCP server restarted");
        Ok(ended)
    }
}
