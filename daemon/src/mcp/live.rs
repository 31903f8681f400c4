//! One live MCP server: starting it (a stdio process under the agent's
//! sandbox and namespace, or an HTTP session), listing its tools at an
//! agent's creation, and ending it gracefully.

use std::sync::Arc;
use std::time::Duration;

use super::{SandboxChoice, ServerDef, Session, ToolDecl, Transport};
use crate::tools::ToolProcess;
use crate::tools::server_process::{self, ServerCommand};
use crate::tools::{AgentProcesses, ToolContext};

/// How long an ended stdio server has to exit on its own once its stdin is
/// closed, before it is killed.
const END_GRACE: Duration = Duration::from_secs(2);

/// A live connection and, for stdio, the process behind it.
pub(crate) struct Live {
    pub(crate) session: Arc<Session>,
    /// Killed with its group when dropped.
    process: Option<ToolProcess>,
    /// The run's process namespace the server runs in, kept while it ends.
    _processes: Arc<AgentProcesses>,
}

impl Live {
    /// Closes the session (a stdio server's stdin) and gives the server
    /// [`END_GRACE`] to exit before it is killed.
    pub(crate) async fn end(self) {
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

pub(crate) async fn start(def: &ServerDef, ctx: &ToolContext) -> Result<Live, String> {
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
