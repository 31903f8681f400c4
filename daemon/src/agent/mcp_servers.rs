//! The MCP servers of one agent's run (DESIGN §18): the tools frozen in
//! its prompt, and the sessions, started when a call first needs one and
//! ended with the run (a stdio server is a process of the run, in its
//! sandbox and namespace). A session whose server died is started again at
//! the next call, after a pause that grows with each failed start.
//!
//! Ending a server is MCP's stdio shutdown, in the background so the run's
//! end does not wait: its stdin is closed, it has [`END_GRACE`] to exit, then
//! it is killed. The grace is what lets a server read what it was sent last
//! — the `notifications/cancelled` of a call an interrupt cut short — rather
//! than die with it unread; the run's process namespace is kept until then.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::domain::McpToolName;
use crate::mcp::{
    McpError, SandboxChoice, ServerDef, ServerName, Session, Setup, ToolDecl, Transport,
};
use crate::tools::ToolProcess;
use crate::tools::server_process::{self, ServerCommand};
use crate::tools::{AgentProcesses, ToolContext};

/// The longest pause before a failed server is started again.
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// How long an ended stdio server has to exit on its own once its stdin is
/// closed, before it is killed.
const END_GRACE: Duration = Duration::from_secs(2);

/// A live connection and, for stdio, the process behind it.
struct Live {
    session: Arc<Session>,
    /// Killed with its group when dropped.
    process: Option<ToolProcess>,
    /// The run's process namespace the server runs in, kept while it ends.
    _processes: Arc<AgentProcesses>,
}

impl Live {
    /// Closes the session (a stdio server's stdin) and gives the server
    /// [`END_GRACE`] to exit before it is killed.
    async fn end(self) {
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

/// Failed starts of one server in a row, and when the last was.
struct Failures {
    count: u32,
    at: Instant,
    why: String,
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
    live: tokio::sync::Mutex<HashMap<ServerName, Live>>,
    failures: std::sync::Mutex<HashMap<ServerName, Failures>>,
}

impl McpServers {
    pub fn new(setup: &Setup) -> McpServers {
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
            live: tokio::sync::Mutex::default(),
            failures: std::sync::Mutex::default(),
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

    /// Ends the session of the server `name` (killing a stdio server) and
    /// forgets its failed starts: the next call starts it afresh. Whether
    /// one was live.
    pub async fn restart(&self, name: &ServerName) -> bool {
        self.failures_mut().remove(name);
        let ended = self.live.lock().await.remove(name);
        match ended {
            Some(live) => {
                live.end().await;
                true
            }
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
        let session = tokio::select! {
            biased;
            () = cancel.cancelled() => return McpCallEnd::Cancelled,
            s = self.session(def, ctx) => s,
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
                    self.live.lock().await.remove(&def.name);
                }
                error(format!("MCP server {}: {e}", def.name))
            }
        }
    }

    /// The live session of `def`'s server, started now if there is none
    /// or it died.
    async fn session(&self, def: &ServerDef, ctx: &ToolContext) -> Result<Arc<Session>, String> {
        let mut live = self.live.lock().await;
        if let Some(l) = live.get(&def.name) {
            if !l.session.is_closed() {
                return Ok(l.session.clone());
            }
            tracing::info!(server = %def.name, "MCP server gone; starting it again");
            live.remove(&def.name);
        }
        if let Some(wait) = self.backoff(&def.name) {
            return Err(wait);
        }
        match start(def, ctx).await {
            Ok(started) => {
                self.failures_mut().remove(&def.name);
                let session = started.session.clone();
                live.insert(def.name.clone(), started);
                Ok(session)
            }
            Err(why) => {
                let mut failures = self.failures_mut();
                let f = failures.entry(def.name.clone()).or_insert(Failures {
                    count: 0,
                    at: Instant::now(),
                    why: String::new(),
                });
                f.count += 1;
                f.at = Instant::now();
                f.why.clone_from(&why);
                Err(why)
            }
        }
    }

    fn failures_mut(&self) -> std::sync::MutexGuard<'_, HashMap<ServerName, Failures>> {
        self.failures.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Why the server is not started again yet, if its last starts failed
    /// and the pause after them (1 s, doubling, at most 30 s) is not over.
    fn backoff(&self, name: &ServerName) -> Option<String> {
        let failures = self.failures_mut();
        let f = failures.get(name)?;
        let pause = Duration::from_secs(1 << f.count.saturating_sub(1).min(5)).min(MAX_BACKOFF);
        let left = pause.checked_sub(f.at.elapsed())?;
        Some(format!(
            "MCP server {name} failed to start {} time(s) in a row ({}); it is tried again in {} s",
            f.count,
            f.why,
            left.as_secs().max(1)
        ))
    }
}

impl Drop for McpServers {
    /// The run is over: its servers end in the background (`Live::end`).
    fn drop(&mut self) {
        let live: Vec<Live> = self.live.get_mut().drain().map(|(_, l)| l).collect();
        if live.is_empty() {
            return;
        }
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                for l in live {
                    runtime.spawn(l.end());
                }
            }
            // No runtime to end them in: killed now, as they are dropped.
            Err(_) => drop(live),
        }
    }
}

/// Starts `def`'s server for the agent of `ctx`, lists its tools and
/// ends it (at an agent's creation, DESIGN §18).
pub(crate) async fn list_tools(
    def: &ServerDef,
    ctx: &ToolContext,
) -> Result<Vec<ToolDecl>, String> {
    let live = start(def, ctx).await?;
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

async fn start(def: &ServerDef, ctx: &ToolContext) -> Result<Live, String> {
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
                    confined: def.sandbox == SandboxChoice::Agent,
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
