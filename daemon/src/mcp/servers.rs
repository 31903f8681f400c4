//! The MCP servers of one agent's run (DESIGN §18): the tools frozen in
//! its prompt, and the sessions, started when a call first needs one and
//! ended when no run needs them any more: a server is shared with the other
//! running agents that would run it alike, else it is a process of the run,
//! in its sandbox and namespace (`mcp_pool`). A session whose server died
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
use std::time::Duration;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::mcp_pool::{McpPool, ServerSlot};
use crate::domain::McpToolName;
use crate::mcp::{
    McpError, SandboxChoice, ServerDef, ServerName, Session, Setup, ToolDecl, Transport,
};
use crate::tools::ToolProcess;
use crate::tools::server_process::{self, ServerCommand};
use crate::tools::{AgentProcesses, ToolContext};

/// How long an ended stdio server has to exit on its own once its stdin is
/// closed, before it is killed.
const END_GRACE: Duration = Duration::from_secs(2);

/// A live connection and, for stdio, the process behind it.
pub(super) struct Live {
    pub(super) session: Arc<Session>,
    /// Killed with its group when dropped.
    process: Option<ToolProcess>,
    /// The run's process namespace the server runs in, kept while it ends.
    _processes: Arc<AgentProcesses>,
}

impl Live {
    /// Closes the session (a stdio server's stdin) and gives the server
    /// [`END_GRACE`] to exit before it is killed.
    pub(super) async fn end(self) {
        let Live {
            session,
            process,
            _processes,
        } = self;
        let deadline = tokio::time::Instant::now() + END_GRACE;
        if let Ok(session) = Arc::try_unwrap(session) {
            let _ = tokio::time::timeout_at(deadline, session.close()).await;
        }
        if let Some(mut process) = process
            && tokio::time::timeout_at(deadline, process.wait())
                .await
                .is_err()
        {
            process.kill();
            process.reap().await;
        }
    }
}

/// How an MCP call ended.
pub(super) enum McpCallEnd {
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
    slots: tokio::sync::Mutex<HashMap<ServerName, Arc<ServerSlot>>>,
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
    pub(super) fn tool(&self, name: &str) -> Option<McpToolName> {
        let name = McpToolName::parse(name)?;
        self.tools.contains_key(&name).then_some(name)
    }

    /// Whether its server marks the tool read-only.
    pub(super) fn is_read_only(&self, tool: &McpToolName) -> bool {
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
    pub(super) async fn call(
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
    async fn slot(&self, def: &ServerDef, ctx: &ToolContext) -> Arc<ServerSlot> {
        let mut slots = self.slots.lock().await;
        slots
            .entry(def.name.clone())
            .or_insert_with(|| self.pool.slot(def, ctx))
            .clone()
    }
}

/// The context `def`'s server runs in: the agent's `ctx`, except that a
/// server that must always be confined (a repository's) gets, when the
/// agent has no sandbox, a workspace-write one over the agent's workspace
/// (its own tree, else its working directory) with a private temp dir.
pub(crate) fn server_context<'a>(
    def: &ServerDef,
    ctx: &'a ToolContext,
) -> std::borrow::Cow<'a, ToolContext> {
    if def.sandbox != SandboxChoice::Always || ctx.sandbox.is_some() {
        return std::borrow::Cow::Borrowed(ctx);
    }
    let workspace = ctx
        .worktree_of
        .as_ref()
        .map_or_else(|| ctx.cwd.clone(), |(_, tree)| tree.clone());
    let mut confined = ctx.clone();
    confined.sandbox = crate::sandbox::Policy::workspace_for_server(&workspace);
    std::borrow::Cow::Owned(confined)
}

/// Starts `def`'s server for the agent of `ctx`, lists its tools and
/// ends it (at an agent's creation, DESIGN §18).
pub(crate) async fn list_tools(
    def: &ServerDef,
    ctx: &ToolContext,
) -> Result<Vec<ToolDecl>, String> {
    let live = start(def, &server_context(def, ctx)).await?;
    let listed = tokio::time::timeout(def.startup_timeout, live.session.list_tools()).await;
    // Nothing is pending on it: closed and killed at once, not waited for.
    let Live {
        session, process, ..
    } = live;
    if let Ok(session) = Arc::try_unwrap(session) {
        session.close().await;
    }
    drop(process);
    match listed {
        Ok(Ok(tools)) => Ok(tools),
        Ok(Err(e)) => Err(format!(
            "MCP server {} did not list its tools: {e}",
            def.name
        )),
        Err(_) => Err(format!(
            "MCP server {} did not list its tools within {} s",
            def.name,
            def.startup_timeout.as_secs()
        )),
    }
}

pub(super) async fn start(def: &ServerDef, ctx: &ToolContext) -> Result<Live, String> {
    if def.sandbox == SandboxChoice::Always && ctx.sandbox.is_none() {
        // Fail closed: `server_context` gives such a server a sandbox.
        return Err(format!(
            "MCP server {} must run confined and no sandbox was made for it",
            def.name
        ));
    }
    match &def.transport {
        Transport::Http { .. } => Session::over_http(def, def.startup_timeout)
            .await
            .map(|session| Live {
                session: Arc::new(session),
                process: None,
                _processes: ctx.processes.clone(),
            })
            .map_err(|e| format!("MCP server {} could not be reached: {e}", def.name)),
        Transport::Stdio {
            command,
            args,
            env,
            cwd,
        } => {
            let spawned = server_process::spawn(
                &ServerCommand {
                    program: command,
                    args,
                    env,
                    cwd: cwd.as_deref(),
                    confined: def.sandbox != SandboxChoice::Off,
                    capture_stderr: false,
                },
                ctx,
            )
            .await
            .map_err(|e| {
                format!(
                    "MCP server {} could not be started ({command}): {e}",
                    def.name
                )
            })?;
            let (mut process, stdin, stdout) = spawned;
            match Session::over_stdio(def.name.clone(), stdout, stdin, def.startup_timeout).await {
                Ok(session) => Ok(Live {
                    session: Arc::new(session),
                    process: Some(process),
                    _processes: ctx.processes.clone(),
                }),
                Err(e) => {
                    process.kill();
                    Err(format!("MCP server {} did not start: {e}", def.name))
                }
            }
        }
    }
}

fn error(text: String) -> McpCallEnd {
    McpCallEnd::Done {
        content: vec![json!({"type": "text", "text": text})],
        is_error: true,
    }
}
