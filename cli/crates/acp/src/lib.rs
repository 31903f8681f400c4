//! `agentctl acp`: an Agent Client Protocol (v1) agent on stdio, for
//! editors (Zed, JetBrains, Neovim, Emacs). A session is an agent in the
//! daemon: `sessionId` is its id, `agentctl list` shows it, a terminal can
//! attach to it at the same time, and closing the editor leaves it
//! running — `session/load` brings the conversation back.
//!
//! stdout carries only protocol messages; logs go to stderr (`RUST_LOG`).

use agentctl_core::{autostart, backoff, exit, permission_prompt, view};

mod backlog;
mod connections;
mod follow;
mod info;
mod lines;
mod mcp;
mod modes;
mod peer;
mod permission;
mod reconnect;
mod resume;
mod session;
mod subagents;
mod tool_calls;
mod updates;
mod usage;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use agentd_shared::proto as pb;
use serde_json::{Value, json};

use crate::autostart::Target;
use crate::exit::{Failure, SUCCESS};
use crate::permission_prompt::Mode;
use agentd_shared::sync::Unpoisoned as _;
use peer::{Peer, RequestId, RpcError, code};
use reconnect::Link;
use session::{Session, Start};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Model of new sessions [default: the daemon's default_model or AGENTD_MODEL].
    #[arg(long, conflicts_with = "agent")]
    model: Option<String>,
    /// Run new sessions with another coding agent over ACP, supervised by
    /// agentd (claude-code, codex, gemini, or an [agents.NAME] of config.toml).
    #[arg(long, value_name = "NAME")]
    agent: Option<String>,
    /// When tools ask first; asks go to the editor.
    #[arg(long, value_enum, default_value = "default")]
    permission_mode: Mode,
}

/// The protocol version spoken.
const PROTOCOL_VERSION: u64 = 1;

struct Bridge {
    /// The daemon, reached again when it went away.
    link: Arc<Link>,
    peer: Peer,
    args: Args,
    sessions: Mutex<HashMap<String, Arc<Session>>>,
}

pub async fn run(target: &Target, args: Args) -> Result<u8, Failure> {
    init_logging();
    let client = target.client().await?;
    let (peer, writer) = Peer::stdout();
    let bridge = Arc::new(Bridge {
        link: Arc::new(Link::new(target.clone(), client)),
        peer: peer.clone(),
        args,
        sessions: Mutex::new(HashMap::new()),
    });
    // While the daemon is waited for, every open session is told so.
    let told = Arc::downgrade(&bridge);
    bridge.link.on_wait(Box::new(move |text| {
        if let Some(bridge) = told.upgrade() {
            bridge.tell_sessions(text);
        }
    }));
    let mut stdin = tokio::io::BufReader::new(tokio::io::stdin());
    let mut line = Vec::new();
    loop {
        match lines::next(&mut stdin, &mut line, lines::MAX_LINE).await {
            lines::Line::End => break,
            lines::Line::TooLong(n) => {
                peer.respond(
                    &RequestId::null(),
                    Err(RpcError::new(
                        code::INVALID_REQUEST,
                        format!(
                            "a message of {n} bytes is over the limit of {} bytes; it was skipped",
                            lines::MAX_LINE
                        ),
                    )),
                );
                continue;
            }
            lines::Line::Message => {}
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        // Bytes, not text: a line that is not UTF-8 is a parse error like
        // any other, never the end of the conversation.
        let message: Value = match serde_json::from_slice(&line) {
            Ok(m) => m,
            Err(e) => {
                peer.respond(
                    &RequestId::null(),
                    Err(RpcError::new(
                        code::PARSE_ERROR,
                        format!("parse error: {e}"),
                    )),
                );
                continue;
            }
        };
        let method = message["method"].as_str().map(str::to_string);
        // The id as written, for the answer; the parsed one for matching.
        let id = message.get("id").cloned();
        let raw_id = || RequestId::of_line(&line).unwrap_or_else(RequestId::null);
        match (method, id) {
            (Some(method), Some(_)) => {
                let bridge = bridge.clone();
                let params = message.get("params").cloned().unwrap_or(Value::Null);
                let id = raw_id();
                tokio::spawn(async move {
                    let result = bridge.request(&method, params).await;
                    bridge.peer.respond(&id, result);
                });
            }
            (Some(method), None) => {
                let params = message.get("params").cloned().unwrap_or(Value::Null);
                bridge.clone().notification(&method, params).await;
            }
            (None, Some(_))
                if message.get("result").is_some() || message.get("error").is_some() =>
            {
                peer.answered(&message)
            }
            _ => peer.respond(
                &raw_id(),
                Err(RpcError::new(
                    code::INVALID_REQUEST,
                    "not a JSON-RPC 2.0 message",
                )),
            ),
        }
    }
    // The editor went away: sessions detach, agents go on.
    tracing::info!("stdin closed; leaving every session's agent running");
    peer.gone();
    let sessions: Vec<Arc<Session>> = bridge.sessions.locked().drain().map(|(_, s)| s).collect();
    for s in sessions {
        s.close().await;
    }
    drop(bridge);
    drop(peer);
    let _ = writer.await;
    Ok(SUCCESS)
}

fn init_logging() {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .try_init();
}

fn str_param<'a>(params: &'a Value, name: &str) -> Result<&'a str, RpcError> {
    params[name]
        .as_str()
        .ok_or_else(|| RpcError::invalid_params(format!("`{name}` (a string) is required")))
}

/// An optional string parameter: absent or null is None.
fn optional_str<'a>(params: &'a Value, name: &str) -> Result<Option<&'a str>, RpcError> {
    match &params[name] {
        Value::Null => Ok(None),
        Value::String(s) => Ok(Some(s)),
        _ => Err(RpcError::invalid_params(format!(
            "`{name}` must be a string"
        ))),
    }
}

/// A timestamp in ISO 8601 (UTC, seconds), as ACP's `updatedAt` wants it.
fn iso8601(t: Option<&prost_types::Timestamp>) -> Option<String> {
    let t = t?;
    Some(humantime::format_rfc3339_seconds(crate::view::render::system_time(Some(t))).to_string())
}

impl Bridge {
    /// A session this editor has open; one whose attachment ended (the
    /// daemon stopped) is gone: the editor loads it again.
    fn session(&self, params: &Value) -> Result<Arc<Session>, RpcError> {
        let id = str_param(params, "sessionId")?;
        let mut sessions = self.sessions.locked();
        match sessions.get(id) {
            Some(s) if s.is_alive() => Ok(s.clone()),
            Some(_) => {
                sessions.remove(id);
                Err(RpcError::session_not_found(id))
            }
            None => Err(RpcError::session_not_found(id)),
        }
    }

    /// A line of agentd's own to every open session, as a thought (a
    /// status an editor shows and the agent's answer does not carry).
    fn tell_sessions(&self, text: &str) {
        let ids: Vec<String> = self.sessions.locked().keys().cloned().collect();
        for id in ids {
            self.peer.notify(
                "session/update",
                json!({"sessionId": id, "update": updates::chunk("agent_thought_chunk", &format!("[agentd] {text}\n"))}),
            );
        }
    }

    async fn agent(&self, id: &str) -> Result<pb::Agent, RpcError> {
        self.link
            .client()
            .get_agent(pb::GetAgentRequest { id: id.to_string() })
            .await
            .map(|r| r.into_inner())
            .map_err(|s| {
                if s.code() == tonic::Code::NotFound {
                    RpcError::session_not_found(id)
                } else {
                    s.into()
                }
            })
    }

    async fn open(&self, agent: &pb::Agent, start: Start) -> Result<(), RpcError> {
        let old = self.sessions.locked().remove(&agent.id);
        if let Some(old) = old {
            old.close().await;
        }
        let session = Session::open(&self.link, self.peer.clone(), agent, start).await?;
        self.sessions.locked().insert(agent.id.clone(), session);
        Ok(())
    }

    async fn request(&self, method: &str, params: Value) -> Result<Value, RpcError> {
        match method {
            "initialize" => Ok(initialize(&params)),
            "authenticate" => Ok(json!({})),
            "session/new" => self.new_session(&params).await,
            "session/load" => {
                let agent = self.agent(str_param(&params, "sessionId")?).await?;
                keeps_its_servers(&agent, &params);
                // Before the history: the editor may not have the title.
                if let Some(title) = info::title(&agent) {
                    self.peer.notify(
                        "session/update",
                        json!({"sessionId": agent.id, "update": info::title_update(title, &agent)}),
                    );
                }
                self.open(&agent, Start::Replay).await?;
                Ok(modes::state(&agent))
            }
            "session/resume" => {
                let agent = self.agent(str_param(&params, "sessionId")?).await?;
                keeps_its_servers(&agent, &params);
                self.open(&agent, Start::Live).await?;
                Ok(modes::state(&agent))
            }
            "session/set_mode" => {
                let session = self.session(&params)?;
                let mode = modes::parse(str_param(&params, "modeId")?)?;
                session.between_turns("the mode")?;
                self.update(&session.id, mode as i32, String::new()).await?;
                Ok(json!({}))
            }
            "session/set_config_option" => {
                let session = self.session(&params)?;
                let config = str_param(&params, "configId")?;
                let value = str_param(&params, "value")?;
                let agent = match config {
                    modes::MODEL_OPTION => {
                        session.between_turns("the model")?;
                        self.update(&session.id, 0, value.to_string()).await?
                    }
                    modes::MODE_OPTION => {
                        let mode = modes::parse(value)?;
                        session.between_turns("the mode")?;
                        self.update(&session.id, mode as i32, String::new()).await?
                    }
                    other => {
                        return Err(RpcError::invalid_params(format!(
                            "no config option {:?} (model, mode)",
                            other.chars().take(32).collect::<String>()
                        )));
                    }
                };
                Ok(json!({"configOptions": modes::config_options(&agent)}))
            }
            "session/list" => self.list(&params).await,
            "session/close" => {
                let session = self.session(&params)?;
                self.sessions.locked().remove(&session.id);
                session.close().await;
                Ok(json!({}))
            }
            "session/prompt" => {
                let session = self.session(&params)?;
                let prompt = params["prompt"]
                    .as_array()
                    .ok_or_else(|| RpcError::invalid_params("`prompt` (an array) is required"))?;
                let text = updates::prompt_text(prompt).map_err(RpcError::invalid_params)?;
                let stop = session.prompt(text).await?;
                Ok(json!({"stopReason": stop}))
            }
            _ => Err(RpcError {
                code: code::METHOD_NOT_FOUND,
                message: format!(
                    "method not found: {}",
                    method.chars().take(64).collect::<String>()
                ),
                data: Some(json!({"method": method.chars().take(64).collect::<String>()})),
            }),
        }
    }

    async fn notification(self: Arc<Self>, method: &str, params: Value) {
        if method == "session/cancel"
            && let Ok(session) = self.session(&params)
        {
            tokio::spawn(async move { session.cancel().await });
        }
        // Unknown notifications are ignored, as JSON-RPC requires.
    }

    async fn new_session(&self, params: &Value) -> Result<Value, RpcError> {
        let cwd = str_param(params, "cwd")?;
        if !std::path::Path::new(cwd).is_absolute() {
            return Err(RpcError::invalid_params("`cwd` must be an absolute path"));
        }
        let mcp_servers = mcp::requested(params).map_err(RpcError::invalid_params)?;
        let agent = self
            .link
            .client()
            .create_agent(pb::CreateAgentRequest {
                idle: true,
                cwd: cwd.to_string(),
                model: self.args.model.clone().unwrap_or_default(),
                permission_mode: self.args.permission_mode.wire() as i32,
                // None: the daemon takes it from the first prompt, as it
                // does for `agentctl run`; the title follows it.
                description: String::new(),
                mcp_servers,
                executor: self.args.agent.clone().unwrap_or_default(),
                ..Default::default()
            })
            .await?
            .into_inner();
        self.open(&agent, Start::Live).await?;
        let mut response = modes::state(&agent);
        response["sessionId"] = json!(agent.id);
        Ok(response)
    }

    async fn update(&self, id: &str, mode: i32, model: String) -> Result<pb::Agent, RpcError> {
        Ok(self
            .link
            .client()
            .update_agent(pb::UpdateAgentRequest {
                id: id.to_string(),
                permission_mode: mode,
                model,
            })
            .await?
            .into_inner())
    }

    async fn list(&self, params: &Value) -> Result<Value, RpcError> {
        let cwd = optional_str(params, "cwd")?;
        let cursor = optional_str(params, "cursor")?;
        let agents = self
            .link
            .client()
            .list_agents(pb::ListAgentsRequest {
                all: true,
                parent_id: String::new(),
            })
            .await?
            .into_inner()
            .agents;
        info::page(&agents, cwd, cursor)
    }
}

/// A loaded or resumed session keeps the MCP servers it was created with
/// (its tools are frozen); servers the editor names now that it lacks are
/// logged, not started.
fn keeps_its_servers(agent: &pb::Agent, params: &Value) {
    let missing = mcp::not_in_session(agent, params);
    if !missing.is_empty() {
        tracing::warn!(
            session = %agent.id,
            servers = ?missing,
            "the session keeps the MCP servers it was created with; these are not started (open a new session to use them)"
        );
    }
}

/// `initialize`: version 1 whatever the editor asks (it disconnects if it
/// cannot speak it), and what the bridge does. MCP servers: stdio (always,
/// in ACP) and streamable HTTP; not the older HTTP+SSE transport.
fn initialize(_params: &Value) -> Value {
    json!({
        "protocolVersion": PROTOCOL_VERSION,
        "agentCapabilities": {
            "loadSession": true,
            "promptCapabilities": {"image": false, "audio": false, "embeddedContext": true},
            "mcpCapabilities": {"http": true, "sse": false},
            "sessionCapabilities": {"list": {}, "resume": {}, "close": {}},
        },
        "agentInfo": {"name": "agentd", "title": "agentd", "version": agentd_shared::VERSION},
        "authMethods": [],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_iso_8601() {
        let t = prost_types::Timestamp {
            seconds: 1_764_522_135,
            nanos: 0,
        };
        assert_eq!(iso8601(Some(&t)).unwrap(), "2025-11-30T17:02:15Z");
    }
}
