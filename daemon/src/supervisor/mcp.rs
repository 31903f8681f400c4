//! A new agent's MCP servers (DESIGN §18): each enabled server is started
//! for it (as it would run for the agent: in its sandbox, in its working
//! directory), its tools listed, and the server ended again. The tools join
//! the agent's frozen tools array, so the prompt cache holds; a server that
//! does not start is recorded with the reason and offers nothing.

use std::path::Path;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::Supervisor;
use crate::agent::mcp_servers::list_tools;
use crate::domain::{AgentId, AgentRecord, McpToolName, PromptContext, SHORT_ID_LEN, now_ms};
use crate::error::AgentdError;
use crate::mcp::{ServerDef, ServerName, Setup};
use crate::tools::{AgentProcesses, ToolContext};

impl Supervisor {
    /// Lists the tools of the servers `record` gets into `prompt`. An agent
    /// whose tools are limited to a list (a typed subagent) gets only the
    /// MCP tools the list names.
    pub(super) async fn freeze_mcp(&self, record: &mut AgentRecord, prompt: &mut PromptContext) {
        if prompt.allowed_tools.as_ref().is_some_and(|a| !a.has_mcp()) {
            return;
        }
        let defs: Vec<_> = self
            .config()
            .mcp_servers
            .iter()
            .filter(|d| d.enabled)
            .cloned()
            .collect();
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
        let listed = futures::future::join_all(defs.iter().map(|d| list_tools(d, &ctx))).await;
        let allowed = |t: &crate::mcp::ToolDecl| {
            prompt.allowed_tools.as_ref().is_none_or(|a| {
                McpToolName::parse(&t.wire_name).is_some_and(|name| a.allows_mcp(&name))
            })
        };
        let listed = listed
            .into_iter()
            .map(|r| r.map(|tools| tools.into_iter().filter(allowed).collect()));
        let setup = Setup::build(defs.into_iter().zip(listed).collect());
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
}

/// One configured server, as `mcp list` reports it.
pub struct McpReport {
    pub def: ServerDef,
    /// The tools it listed (wire names), or why it did not; None when it is
    /// disabled (not started).
    pub listed: Option<Result<Vec<String>, String>>,
}

impl Supervisor {
    /// Starts each configured server as it would run for an agent working
    /// in `cwd` (under the default sandbox), lists its tools and ends it.
    pub async fn mcp_report(&self, cwd: &Path) -> Result<Vec<McpReport>, AgentdError> {
        if !cwd.is_absolute() || !cwd.is_dir() {
            return Err(AgentdError::invalid(format!(
                "cwd {} is not an absolute path to a directory",
                crate::error::quote(&cwd.display().to_string())
            )));
        }
        let defs = self.config().mcp_servers.clone();
        // A stand-in for an agent working there, for its sandbox policy.
        let id = AgentId::random();
        let mut probe = AgentRecord::new(id, id.short_prefix(SHORT_ID_LEN), now_ms());
        probe.cwd = cwd.to_path_buf();
        probe.sandbox = self.config().sandbox;
        probe.no_network = !self.config().network;
        let ctx = ToolContext {
            cwd: probe.cwd.clone(),
            cancel: CancellationToken::new(),
            spool: None,
            env: self.settings.tool_env().clone(),
            worktree_of: None,
            sandbox: crate::sandbox::Policy::for_agent(&probe),
            processes: Arc::new(AgentProcesses::default()),
        };
        let listed = futures::future::join_all(defs.iter().map(async |d| {
            if !d.enabled {
                return None;
            }
            Some(
                list_tools(d, &ctx)
                    .await
                    .map(|tools| tools.into_iter().map(|t| t.wire_name).collect()),
            )
        }))
        .await;
        drop(ctx);
        crate::sandbox::remove_tmpdir(probe.short_id.as_str());
        Ok(defs
            .into_iter()
            .zip(listed)
            .map(|(def, listed)| McpReport { def, listed })
            .collect())
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
