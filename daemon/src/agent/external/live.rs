//! An external agent's process and its open ACP session: started in the
//! agent's working directory or worktree, under its sandbox unless the
//! entry says `sandbox = "off"`, initialized, and given a session — a new
//! one, or the one the record names, reopened with `session/resume` or
//! `session/load`.
//!
//! It outlives a run: an agent that completes keeps its process for
//! [`IDLE_KEEP`] (its `ParkedProcess`), so the next message does not pay
//! for a start; after that, or when the parked process is dropped (the agent
//! removed, the daemon gone), the process is killed with its namespace.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::AsyncReadExt;
use tokio::sync::mpsc;

use crate::acp_client::wire::{self, AgentInfo};
use crate::acp_client::{CallError, Connection, Incoming, RpcError};
use crate::config::external_agents::{ExternalAgentDef, ExternalSandbox};
use crate::tools::server_process::{self, ServerCommand};
use crate::tools::{AgentProcesses, ToolContext, ToolProcess};
use agentd_shared::sync::Unpoisoned as _;

/// How long a completed external agent keeps its process.
pub const IDLE_KEEP: Duration = Duration::from_secs(600);
/// How long `initialize` and opening a session may take (Claude Code
/// starts in seconds; a first `npx` can take longer).
const START_TIMEOUT: Duration = Duration::from_secs(120);
/// How long an ended agent has to exit before it is killed.
const END_GRACE: Duration = Duration::from_secs(3);
/// The end of the agent's standard error kept for error messages.
const STDERR_TAIL: usize = 4096;
/// After a load's answer, updates keep being dropped until none has come
/// for this long: agents that answer before their replay is written
/// (Gemini CLI 0.61) send the rest of the history just after.
const REPLAY_QUIET: Duration = Duration::from_millis(500);
/// The longest a replay after the answer is waited for.
const REPLAY_LATE_MAX: Duration = Duration::from_secs(10);

/// A running external agent with its session open.
pub struct LiveAgent {
    pub conn: Connection,
    pub incoming: mpsc::Receiver<Incoming>,
    pub info: AgentInfo,
    pub session_id: String,
    stderr: Arc<std::sync::Mutex<Vec<u8>>>,
    process: ToolProcess,
    /// The namespace it runs in, ended with it.
    _processes: Arc<AgentProcesses>,
}

/// Why an external agent could not be started or its session opened.
#[derive(Debug)]
pub enum StartError {
    /// The session it had cannot be reopened (no load or resume on
    /// offer, or the agent refused it): the agent is blocked.
    CannotReopen(String),
    /// Anything else (the command failed, the handshake broke, no login).
    Failed(String),
}

impl LiveAgent {
    /// Starts `def` for the agent of `ctx` and opens its session:
    /// `session_id` (the record's) is reopened, empty makes a new one.
    pub async fn start(
        def: &ExternalAgentDef,
        ctx: &ToolContext,
        session_id: &str,
        mcp_servers: &[crate::mcp::ServerDef],
    ) -> Result<(LiveAgent, Vec<String>), StartError> {
        let processes = ctx.processes.clone();
        let mut env = def.env.clone();
        if let Some(policy) = ctx
            .sandbox
            .as_ref()
            .filter(|_| def.sandbox == ExternalSandbox::Agent)
        {
            for var in &def.tmpdir_vars {
                env.entry(var.clone())
                    .or_insert_with(|| policy.tmpdir.display().to_string());
            }
            // Its model API goes through the proxy even on loopback (a
            // local gateway): nothing is sent around it.
            if policy.network == crate::domain::NetworkMode::Proxy {
                for var in crate::network::NO_PROXY_VARS {
                    env.entry(var.to_string()).or_default();
                }
            }
        }
        let (mut process, stdin, stdout) = server_process::spawn(
            &ServerCommand {
                program: &def.command,
                args: &def.args,
                env: &env,
                cwd: None,
                confined: def.sandbox == ExternalSandbox::Agent,
                capture_stderr: true,
            },
            ctx,
        )
        .await
        .map_err(|e| StartError::Failed(format!("cannot start `{}`: {e}", def.command)))?;
        let stderr = Arc::new(std::sync::Mutex::new(Vec::new()));
        if let Some(pipe) = process.child.stderr.take() {
            tokio::spawn(keep_tail(pipe, stderr.clone()));
        }
        let (conn, incoming) = Connection::start(stdout, stdin);
        let mut live = LiveAgent {
            conn,
            incoming,
            info: AgentInfo::default(),
            session_id: String::new(),
            stderr,
            process,
            _processes: processes,
        };
        let opened = tokio::time::timeout(
            START_TIMEOUT,
            live.handshake(def, ctx, session_id, mcp_servers),
        )
        .await
        .unwrap_or_else(|_| {
            Err(StartError::Failed(format!(
                "`{}` did not answer within {} s",
                def.name,
                START_TIMEOUT.as_secs()
            )))
        });
        match opened {
            Ok(notes) => Ok((live, notes)),
            Err(e) => {
                live.end().await;
                Err(e)
            }
        }
    }

    async fn handshake(
        &mut self,
        def: &ExternalAgentDef,
        ctx: &ToolContext,
        session_id: &str,
        mcp_servers: &[crate::mcp::ServerDef],
    ) -> Result<Vec<String>, StartError> {
        let failed = |what: &str, e: CallError, live: &LiveAgent| {
            StartError::Failed(format!(
                "{} {what}: {}{}",
                def.name,
                explain(&e),
                live.stderr_hint()
            ))
        };
        let init = self
            .conn
            .request("initialize", wire::initialize())
            .await
            .map_err(|e| failed("did not initialize", e, self))?;
        self.info = AgentInfo::read(&init);
        if self.info.protocol_version != wire::PROTOCOL_VERSION {
            return Err(StartError::Failed(format!(
                "{} speaks ACP version {}, agentd speaks {}",
                def.name,
                self.info.protocol_version,
                wire::PROTOCOL_VERSION
            )));
        }
        let cwd = ctx.cwd.display().to_string();
        let (servers, notes) = wire::mcp_servers(mcp_servers, &ctx.cwd, self.info.mcp_http);
        let params = json!({"cwd": cwd, "mcpServers": servers});
        if session_id.is_empty() {
            let opened = self
                .open_session(def, ctx, "session/new", params, false)
                .await
                .map_err(|e| failed("did not open a session", e, self))?;
            self.session_id = opened["sessionId"]
                .as_str()
                .filter(|s| !s.is_empty())
                .ok_or_else(|| {
                    StartError::Failed(format!("{} opened a session without an id", def.name))
                })?
                .to_string();
            return Ok(notes);
        }
        let mut params = params;
        params["sessionId"] = Value::from(session_id);
        let method = if self.info.resume_session {
            "session/resume"
        } else if self.info.load_session {
            "session/load"
        } else {
            return Err(StartError::CannotReopen(format!(
                "{} offers neither session/load nor session/resume, so its session {session_id} cannot be reopened in a new process",
                def.name
            )));
        };
        let answer = self.open_session(def, ctx, method, params, true).await;
        answer.map_err(|e| match e {
            CallError::Rpc(e) if e.code != agentd_shared::jsonrpc::code::AUTH_REQUIRED => {
                StartError::CannotReopen(format!(
                    "{} refused to reopen its session {session_id} ({method}): {e}",
                    def.name
                ))
            }
            e => failed("did not reopen its session", e, self),
        })?;
        if method == "session/load" {
            self.drop_late_replay().await;
        }
        self.drain();
        self.session_id = session_id.to_string();
        Ok(notes)
    }

    /// `method` (session/new, load or resume). An agent that answers
    /// "authentication required" is logged in, once, with a key its
    /// environment holds — an `env_var` auth method whose variables are
    /// all set (codex-acp's `openai-api-key`) — and asked again.
    async fn open_session(
        &mut self,
        def: &ExternalAgentDef,
        ctx: &ToolContext,
        method: &str,
        params: Value,
        replay: bool,
    ) -> Result<Value, CallError> {
        let first = self.request_draining(method, params.clone(), replay).await;
        let needs_login = matches!(&first, Err(CallError::Rpc(e)) if e.code == agentd_shared::jsonrpc::code::AUTH_REQUIRED);
        let has = |name: &str| {
            let given = def.env.get(name).is_some_and(|v| !v.is_empty());
            let inherited = !ctx.env.secrets.iter().any(|s| s == name)
                && std::env::var_os(name).is_some_and(|v| !v.is_empty());
            given || inherited
        };
        let Some(login) = self.info.env_login(has).filter(|_| needs_login) else {
            return first;
        };
        self.conn
            .request("authenticate", json!({"methodId": login.id}))
            .await?;
        self.request_draining(method, params, replay).await
    }

    /// `method`'s answer; with `replay`, the updates that arrive meanwhile
    /// are read and dropped (a load replays the history, which agentd has
    /// already; the queue is bounded, and a long replay must not stall it).
    async fn request_draining(
        &mut self,
        method: &str,
        params: Value,
        replay: bool,
    ) -> Result<Value, CallError> {
        let conn = self.conn.clone();
        let answer = conn.request(method, params);
        if !replay {
            return answer.await;
        }
        tokio::pin!(answer);
        loop {
            tokio::select! {
                answer = &mut answer => return answer,
                Some(_) = self.incoming.recv() => {}
            }
        }
    }

    /// The end of what it wrote to standard error, for a message.
    pub fn stderr_hint(&self) -> String {
        let tail = self.stderr.locked();
        let text = String::from_utf8_lossy(&tail);
        let last = text.trim().lines().last().unwrap_or("").trim();
        if last.is_empty() {
            String::new()
        } else {
            format!(" (its last words: {})", crate::error::quote(last))
        }
    }

    /// Drops what comes after a load's answer until the agent has been
    /// quiet for [`REPLAY_QUIET`] (at most [`REPLAY_LATE_MAX`]): ACP has
    /// the replay before the answer, but an agent that writes it after
    /// would otherwise have the history taken for the next turn's words.
    async fn drop_late_replay(&mut self) {
        let until = tokio::time::Instant::now() + REPLAY_LATE_MAX;
        while tokio::time::Instant::now() < until {
            match tokio::time::timeout(REPLAY_QUIET, self.incoming.recv()).await {
                Ok(Some(message)) => self.refuse_request(message),
                Ok(None) | Err(_) => return,
            }
        }
    }

    /// Answers a request of the agent's that came outside a turn; drops
    /// anything else.
    fn refuse_request(&self, message: Incoming) {
        if let Incoming::Request { id, .. } = message {
            self.conn.respond(
                id,
                Err(RpcError::new(-32603, "the turn this was asked in is over")),
            );
        }
    }

    /// Drops the replay and other updates queued before a prompt.
    pub fn drain(&mut self) {
        while let Ok(message) = self.incoming.try_recv() {
            self.refuse_request(message);
        }
    }

    /// Asks it to end (SIGTERM to its group: agents such as Claude Code
    /// do not end when their input closes, and write their session's last
    /// message on the way out), gives it [`END_GRACE`], then kills it.
    pub async fn end(self) {
        let LiveAgent {
            conn,
            incoming,
            mut process,
            ..
        } = self;
        drop(incoming);
        drop(conn);
        process.terminate();
        if tokio::time::timeout(END_GRACE, process.wait())
            .await
            .is_err()
        {
            process.kill();
            process.reap().await;
        }
    }
}

/// An error of a request in words.
pub fn explain(e: &CallError) -> String {
    match e {
        CallError::Rpc(r) if r.code == agentd_shared::jsonrpc::code::AUTH_REQUIRED => format!(
            "it needs you to log in first ({r}); log in with the agent itself, or give it a key in [agents.NAME] env (agentd logs it in with a key its `env_var` auth methods name)"
        ),
        e => e.to_string(),
    }
}

async fn keep_tail(mut pipe: tokio::process::ChildStderr, tail: Arc<std::sync::Mutex<Vec<u8>>>) {
    let mut buf = vec![0u8; 4096];
    while let Ok(n) = pipe.read(&mut buf).await {
        if n == 0 {
            break;
        }
        let mut kept = tail.locked();
        kept.extend_from_slice(&buf[..n]);
        if kept.len() > STDERR_TAIL {
            let cut = kept.len() - STDERR_TAIL;
            kept.drain(..cut);
        }
    }
}

/// Where an agent's live external process waits between runs.
#[derive(Default)]
pub struct ParkedProcess {
    live: tokio::sync::Mutex<Option<LiveAgent>>,
    /// Bumped at each take and put, so an idle timer only ends the
    /// process it was armed for.
    generation: AtomicU64,
}

impl ParkedProcess {
    /// The live process, if one waits (and is still connected).
    pub async fn take(&self) -> Option<LiveAgent> {
        self.generation.fetch_add(1, Ordering::SeqCst);
        let live = self.live.lock().await.take()?;
        if live.conn.is_closed() {
            live.end().await;
            return None;
        }
        Some(live)
    }

    /// Keeps `live` for the next run, for [`IDLE_KEEP`] at most.
    pub async fn put(self: &Arc<Self>, live: LiveAgent) {
        let armed = self.generation.fetch_add(1, Ordering::SeqCst) + 1;
        *self.live.lock().await = Some(live);
        let slot = Arc::downgrade(self);
        tokio::spawn(async move {
            tokio::time::sleep(IDLE_KEEP).await;
            let Some(slot) = slot.upgrade() else { return };
            if slot.generation.load(Ordering::SeqCst) != armed {
                return;
            }
            let idle = slot.live.lock().await.take();
            if let Some(live) = idle {
                tracing::info!(
                    "ending an external agent idle for {} s",
                    IDLE_KEEP.as_secs()
                );
                live.end().await;
            }
        });
    }

    /// Whether a live process waits.
    pub fn has_live(&self) -> bool {
        self.live.try_lock().map(|l| l.is_some()).unwrap_or(true)
    }

    /// Ends the waiting process now (the agent was cancelled or removed).
    pub async fn end(&self) {
        self.generation.fetch_add(1, Ordering::SeqCst);
        let live = self.live.lock().await.take();
        if let Some(live) = live {
            live.end().await;
        }
    }
}
