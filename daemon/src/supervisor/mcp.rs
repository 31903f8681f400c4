//! A new agent's MCP servers (DESIGN §18): config.toml's enabled servers
//! and those its creation request passed (an editor's) are each started
//! for it (as it would run for the agent: in its sandbox, in its working
//! directory), their tools listed, and the server ended again. The tools
//! join the agent's frozen tools array, so the prompt cache holds; a server
//! that does not start is recorded with the reason and offers nothing.

use std::path::Path;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::Supervisor;
use crate::agent::mcp_servers::list_tools;
use crate::domain::{AgentId, AgentRecord, McpSource, PromptContext, SHORT_ID_LEN, now_ms};
use crate::error::AgentdError;
use crate::mcp::setup::chosen;
use crate::mcp::{ServerDef, Setup};
use crate::tools::{AgentProcesses, ToolContext};

impl Supervisor {
    /// Lists the tools of the servers `record` gets into `prompt`: the
    /// config's enabled ones and `requested` (`mcp::setup::chosen`). An
    /// agent whose tools are limited to a list (a typed subagent) gets none.
    pub(super) async fn freeze_mcp(
        &self,
        record: &mut AgentRecord,
        prompt: &mut PromptContext,
        requested: &[ServerDef],
    ) {
        if prompt.allowed_tools.is_some() {
            return;
        }
        let chosen = chosen(&self.config().mcp_servers, requested);
        if chosen.is_empty() {
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
        let listed =
            futures::future::join_all(chosen.iter().map(|(d, _)| list_tools(d, &ctx))).await;
        let setup = Setup::build(
            chosen
                .into_iter()
                .zip(listed)
                .map(|((def, source), listed)| (def, source, listed))
                .collect(),
        );
        for s in &setup.servers {
            match &s.listed {
                Ok(n) => {
                    tracing::info!(agent = %record.id, server = %s.def.name, source = ?s.source, tools = n, "MCP server listed")
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
