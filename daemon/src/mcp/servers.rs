//! The MCP servers of one agent's run (DESIGN §18): the tools frozen in
//! its prompt, and the sessions, started when a call first needs one and
//! ended when no run needs them any more: a server is shared with the other
//! running agents that would run it alike, else it is a process of the run,
//! in its sandbox and namespace (`pool`). A session whose server died
//! is started again at the next call, after a pause that grows with each
//! failed start.
//!
//! Ending a server is MCP's stdio shutdown, in the background so the run's
//! end does not wait: its stdin is closed, it has [`END_GRACE`] to exit, then
//! it is killed. The grace is what lets a server read what it was sent last
//! — the `notifications/cancelled` of a call an interrupt cut short — rather
//! than die with it unread; the run's process namespace is kept until then.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::live::server_context;
use super::pool::{McpPool, SharedServer};
use super::{McpError, ServerDef, ServerName, Setup, ToolDecl};
use crate::domain::McpToolName;
use crate::tools::ToolContext;

/// How an MCP call ended.
pub(crate) enum McpCallEnd {
    /// The result blocks (text, images) and whether it is an error.
    Done { content: Vec<Value>, is_error: bool },
    /// `cancel` fired: the server was told to cancel.
    Cancelled,
}

#[derive(Default)]
pub struct McpServers {
    defs: HashMap<ServerName, ServerDef>,
    tools: HashMap<McpToolName, ToolDecl>,
    /// Where its servers are shared from.
    pool: Arc<McpPool>,
    /// The slot of each server it called, held while the run lasts.
    slots: tokio::sync::Mutex<HashMap<ServerName, Arc<SharedServer>>>,
}

impl McpServers {
    pub fn new(setup: &Setup, pool: Arc<McpPool>) -> McpServers {
        McpServers {
            defs: setup
                .servers
                .iter()
                .map(|s| (s.def.name.clone(), s.def.clone()))
                .collect(),
            tools: setup
                .tools
                .iter()
                .filter_map(|t| Some((McpToolName::parse(&t.wire_name)?, t.clone())))
                .collect(),
            pool,
            slots: tokio::sync::Mutex::default(),
        }
    }

    /// The frozen MCP tool the model calls by `name`, if any.
    pub(crate) fn tool(&self, name: &str) -> Option<McpToolName> {
        let name = McpToolName::parse(name)?;
        self.tools.contains_key(&name).then_some(name)
    }

    /// Whether its server marks the tool read-only.
    pub(crate) fn is_read_only(&self, tool: &McpToolName) -> bool {
        self.tools.get(tool).is_some_and(|t| t.read_only)
    }

    /// Ends the session of the server `name` (killing a stdio server, for
    /// every agent sharing it) and forgets its failed starts: the next call
    /// starts it afresh. Whether one was live.
    pub async fn restart(&self, name: &ServerName) -> bool {
        let slot = self.slots.lock().await.remove(name);
        match slot {
            Some(slot) => slot.restart().await,
            None => false,
        }
    }

    /// Whether `name` is one of its servers.
    pub fn has_server(&self, name: &ServerName) -> bool {
        self.defs.contains_key(name)
    }

    /// Calls `tool` with `input`; every failure is an error result the
    /// model can act on, never a failed agent.
    pub(crate) async fn call(
        &self,
        tool: &McpToolName,
        input: &Value,
        ctx: &ToolContext,
        cancel: CancellationToken,
        spool: &Path,
    ) -> McpCallEnd {
        let Some(decl) = self.tools.get(tool) else {
            return error(format!("{tool} is not one of this agent's tools"));
        };
        let Some(def) = self.defs.get(&decl.server) else {
            return error(format!(
                "{tool}: its server {} is not configured for this agent",
                decl.server
            ));
        };
        let ctx = &*server_context(def, ctx);
        let slot = self.slot(def, ctx).await;
        let session = tokio::select! {
            biased;
            () = cancel.cancelled() => return McpCallEnd::Cancelled,
            s = slot.session(def, ctx) => s,
        };
        let session = match session {
            Ok(s) => s,
            Err(why) => return error(why),
        };
        match session
            .call(&decl.name, input.clone(), def.tool_timeout, cancel)
            .await
        {
            Ok(output) => {
                let output = crate::mcp::cap(output, spool);
                McpCallEnd::Done {
                    content: output.content,
                    is_error: output.is_error,
                }
            }
            Err(McpError::Cancelled) => McpCallEnd::Cancelled,
            Err(e) => {
                if session.is_closed() {
                    slot.forget_if_closed().await;
                }
                error(format!("MCP server {}: {e}", def.name))
            }
        }
    }

    /// The slot `def`'s server runs in for this run, from the pool the
    /// first time.
    async fn slot(&self, def: &ServerDef, ctx: &ToolContext) -> Arc<SharedServer> {
        let mut slots = self.slots.lock().await;
        slots
            .entry(def.name.clone())
            .or_insert_with(|| self.pool.slot(def, ctx))
            .clone()
    }
}

fn error(text: String) -> McpCallEnd {
    McpCallEnd::Done {
        content: vec![json!({"type": "text", "text": text})],
        is_error: true,
    }
}
