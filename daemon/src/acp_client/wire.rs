//! The ACP messages agentd sends as a client, and the typed reading of
//! what an agent sends back (protocol version 1). Reading is lenient where
//! the protocol is open (fields an agent leaves out, update kinds agentd
//! does not use) and strict where agentd acts on a value: an unknown tool
//! status or permission option kind is never read as one that grants
//! more.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::domain::{PlanItem, PlanStatus, Usage};
use crate::mcp::{ServerDef, Transport};

pub const PROTOCOL_VERSION: u64 = 1;

/// `initialize`'s params: agentd offers no file system or terminal of its
/// own — the agent works in its directory itself, under its sandbox.
pub fn initialize() -> Value {
    json!({
        "protocolVersion": PROTOCOL_VERSION,
        "clientCapabilities": {
            "fs": {"readTextFile": false, "writeTextFile": false},
            "terminal": false
        },
        "clientInfo": {"name": "agentd", "version": env!("CARGO_PKG_VERSION")}
    })
}

/// What an agent said of itself in `initialize`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AgentInfo {
    pub protocol_version: u64,
    pub load_session: bool,
    /// `session/resume` (reopens without replaying history).
    pub resume_session: bool,
    pub mcp_http: bool,
    /// Its `env_var` auth methods: logging in with a key the environment
    /// holds (codex-acp's `openai-api-key`: `OPENAI_API_KEY`).
    pub env_auth: Vec<EnvAuth>,
}

/// An auth method of type `env_var`: `authenticate {methodId: id}` works
/// when every one of `vars` is set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvAuth {
    pub id: String,
    pub vars: Vec<String>,
}

/// At most this many auth methods are read (an agent's list is short).
const MAX_AUTH_METHODS: usize = 16;

impl AgentInfo {
    pub fn read(result: &Value) -> AgentInfo {
        let caps = &result["agentCapabilities"];
        AgentInfo {
            protocol_version: result["protocolVersion"].as_u64().unwrap_or(0),
            load_session: caps["loadSession"].as_bool().unwrap_or(false),
            resume_session: caps["sessionCapabilities"]["resume"].is_object(),
            mcp_http: caps["mcpCapabilities"]["http"].as_bool().unwrap_or(false),
            env_auth: result["authMethods"]
                .as_array()
                .into_iter()
                .flatten()
                .take(MAX_AUTH_METHODS)
                .filter(|m| m["type"] == "env_var")
                .filter_map(EnvAuth::read)
                .collect(),
        }
    }

    /// The first `env_var` method whose variables `has` all says are set.
    pub fn env_login(&self, has: impl Fn(&str) -> bool) -> Option<&EnvAuth> {
        self.env_auth
            .iter()
            .find(|m| !m.vars.is_empty() && m.vars.iter().all(|v| has(v)))
    }

    /// Whether a session it opened can be reopened in a new process.
    pub fn can_reopen(&self) -> bool {
        self.load_session || self.resume_session
    }
}

impl EnvAuth {
    /// A method with an id and variables named as variables are; None for
    /// anything else.
    fn read(m: &Value) -> Option<EnvAuth> {
        let id = m["id"]
            .as_str()
            .filter(|s| !s.is_empty() && s.len() <= 128)?;
        let vars: Option<Vec<String>> = m["vars"]
            .as_array()?
            .iter()
            .take(MAX_AUTH_METHODS)
            .map(|v| {
                v["name"]
                    .as_str()
                    .filter(|n| {
                        !n.is_empty()
                            && n.len() <= 128
                            && n.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
                    })
                    .map(str::to_string)
            })
            .collect();
        Some(EnvAuth {
            id: id.to_string(),
            vars: vars?,
        })
    }
}

/// The agent's MCP servers as ACP passes them; HTTP servers only to an
/// agent that takes them (the rest are named in the returned notes).
pub fn mcp_servers(defs: &[ServerDef], cwd: &Path, http: bool) -> (Vec<Value>, Vec<String>) {
    let pairs = |map: &std::collections::BTreeMap<String, String>| -> Vec<Value> {
        map.iter()
            .map(|(k, v)| json!({"name": k, "value": v}))
            .collect()
    };
    let mut servers = Vec::new();
    let mut notes = Vec::new();
    for def in defs.iter().filter(|d| d.enabled) {
        match &def.transport {
            Transport::Stdio {
                command,
                args,
                env,
                cwd: dir,
            } => {
                // ACP has no cwd for a server: a relative command is
                // resolved here, against the agent's directory.
                let command = match dir {
                    Some(d) if command.contains('/') && Path::new(command).is_relative() => {
                        cwd.join(d).join(command).display().to_string()
                    }
                    _ => command.clone(),
                };
                servers.push(json!({
                    "name": def.name.as_str(),
                    "command": command,
                    "args": args,
                    "env": pairs(env),
                }));
            }
            Transport::Http { url, headers } if http => servers.push(json!({
                "type": "http",
                "name": def.name.as_str(),
                "url": url,
                "headers": pairs(headers),
            })),
            Transport::Http { .. } => notes.push(format!(
                "MCP server `{}` is an HTTP server, which this external agent does not take",
                def.name
            )),
        }
    }
    (servers, notes)
}

/// A tool call's state as ACP reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallStatus {
    Pending,
    InProgress,
    Completed,
    Failed,
}

impl CallStatus {
    fn parse(text: &str) -> Option<CallStatus> {
        match text {
            "pending" => Some(CallStatus::Pending),
            "in_progress" => Some(CallStatus::InProgress),
            "completed" => Some(CallStatus::Completed),
            "failed" => Some(CallStatus::Failed),
            _ => None,
        }
    }

    pub fn is_done(self) -> bool {
        matches!(self, CallStatus::Completed | CallStatus::Failed)
    }
}

/// What a tool call does (ACP's `ToolKind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallKind {
    Read,
    Edit,
    Delete,
    Move,
    Search,
    Execute,
    Think,
    Fetch,
    SwitchMode,
    /// `other`, or a kind this agentd does not know.
    Other,
}

impl CallKind {
    fn parse(text: &str) -> CallKind {
        match text {
            "read" => CallKind::Read,
            "edit" => CallKind::Edit,
            "delete" => CallKind::Delete,
            "move" => CallKind::Move,
            "search" => CallKind::Search,
            "execute" => CallKind::Execute,
            "think" => CallKind::Think,
            "fetch" => CallKind::Fetch,
            "switch_mode" => CallKind::SwitchMode,
            _ => CallKind::Other,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            CallKind::Read => "read",
            CallKind::Edit => "edit",
            CallKind::Delete => "delete",
            CallKind::Move => "move",
            CallKind::Search => "search",
            CallKind::Execute => "execute",
            CallKind::Think => "think",
            CallKind::Fetch => "fetch",
            CallKind::SwitchMode => "switch_mode",
            CallKind::Other => "other",
        }
    }
}

/// A diff in a tool call's content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diff {
    pub path: PathBuf,
    /// None: a new file.
    pub old_text: Option<String>,
    pub new_text: String,
}

/// The fields of a `tool_call` or `tool_call_update` (absent ones None).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CallFields {
    pub id: String,
    pub title: Option<String>,
    pub kind: Option<CallKind>,
    pub status: Option<CallStatus>,
    pub raw_input: Option<Value>,
    /// The text of its content blocks, joined.
    pub text: Option<String>,
    pub diffs: Vec<Diff>,
    pub locations: Vec<(PathBuf, Option<u64>)>,
}

impl CallFields {
    fn read(u: &Value) -> Result<CallFields, String> {
        let id = u["toolCallId"]
            .as_str()
            .filter(|s| !s.is_empty())
            .ok_or("a tool call without toolCallId")?
            .to_string();
        let status = match u["status"].as_str() {
            Some(s) => Some(CallStatus::parse(s).ok_or_else(|| {
                format!("tool call status `{}` is unknown", crate::error::quote(s))
            })?),
            None => None,
        };
        let mut text = Vec::new();
        let mut diffs = Vec::new();
        let content = u.get("content").and_then(Value::as_array);
        for block in content.into_iter().flatten() {
            match block["type"].as_str() {
                Some("content") => {
                    if let Some(t) = block["content"]["text"].as_str() {
                        text.push(t.to_string());
                    }
                }
                Some("diff") => {
                    if let (Some(path), Some(new_text)) =
                        (block["path"].as_str(), block["newText"].as_str())
                    {
                        diffs.push(Diff {
                            path: PathBuf::from(path),
                            old_text: block["oldText"].as_str().map(String::from),
                            new_text: new_text.to_string(),
                        });
                    }
                }
                Some("terminal") => text.push(format!(
                    "(terminal {})",
                    block["terminalId"].as_str().unwrap_or("?")
                )),
                _ => {}
            }
        }
        let locations = u
            .get("locations")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|l| {
                let path = l["path"].as_str()?;
                Some((PathBuf::from(path), l["line"].as_u64()))
            })
            .collect();
        Ok(CallFields {
            id,
            title: u["title"].as_str().map(String::from),
            kind: u["kind"].as_str().map(CallKind::parse),
            status,
            raw_input: u.get("rawInput").filter(|v| !v.is_null()).cloned(),
            text: (content.is_some()).then(|| text.join("\n")),
            diffs,
            locations,
        })
    }
}

/// One `session/update`, as agentd uses it.
#[derive(Debug, Clone, PartialEq)]
pub enum Update {
    Text(String),
    Thought(String),
    /// A `tool_call` (a new call).
    Call(CallFields),
    /// A `tool_call_update`.
    CallUpdate(CallFields),
    Plan(Vec<PlanItem>),
    /// The user's own message echoed (a load's replay): not agentd's to
    /// store again.
    UserText,
    /// A `usage_update`.
    Usage(UsageReport),
    /// An update agentd shows nothing of (commands, modes, titles…).
    Ignored(String),
}

impl Update {
    /// Reads `session/update`'s params.
    pub fn read(params: &Value) -> Result<Update, String> {
        let u = &params["update"];
        let kind = u["sessionUpdate"]
            .as_str()
            .ok_or("a session/update without sessionUpdate")?;
        Ok(match kind {
            "agent_message_chunk" => Update::Text(chunk_text(&u["content"])),
            "agent_thought_chunk" => Update::Thought(chunk_text(&u["content"])),
            "user_message_chunk" => Update::UserText,
            "tool_call" => Update::Call(CallFields::read(u)?),
            "tool_call_update" => Update::CallUpdate(CallFields::read(u)?),
            "plan" => Update::Plan(plan(u)?),
            "usage_update" => Update::Usage(UsageReport::read(u)?),
            other => Update::Ignored(crate::error::quote(other).to_string()),
        })
    }
}

fn chunk_text(content: &Value) -> String {
    match content["type"].as_str() {
        Some("text") => content["text"].as_str().unwrap_or("").to_string(),
        Some("resource_link") => format!("[{}]", content["uri"].as_str().unwrap_or("")),
        Some(other) => format!("[{other}]"),
        None => String::new(),
    }
}

fn plan(u: &Value) -> Result<Vec<PlanItem>, String> {
    let entries = u["entries"].as_array().ok_or("a plan without entries")?;
    entries
        .iter()
        .map(|e| {
            let content = e["content"].as_str().unwrap_or("").to_string();
            let status = match e["status"].as_str() {
                Some("pending") => PlanStatus::Pending,
                Some("in_progress") => PlanStatus::InProgress,
                Some("completed") => PlanStatus::Completed,
                other => {
                    return Err(format!(
                        "plan entry status `{}` is unknown",
                        crate::error::quote(other.unwrap_or(""))
                    ));
                }
            };
            Ok(PlanItem {
                active_form: content.clone(),
                content,
                status,
            })
        })
        .collect()
}

/// How a prompt turn ended (`session/prompt`'s result).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptEnd {
    /// ACP's stop reason as sent (`end_turn`, `cancelled`, …).
    pub stop_reason: String,
    pub usage: Option<Usage>,
}

impl PromptEnd {
    pub fn read(result: &Value) -> PromptEnd {
        let usage = result
            .get("usage")
            .filter(|u| u.is_object())
            .map(|u| Usage {
                input_tokens: u["inputTokens"].as_u64().unwrap_or(0),
                output_tokens: u["outputTokens"].as_u64().unwrap_or(0),
                cache_read_input_tokens: u["cachedReadTokens"].as_u64().unwrap_or(0),
                cache_creation_input_tokens: u["cachedWriteTokens"].as_u64().unwrap_or(0),
            });
        PromptEnd {
            stop_reason: result["stopReason"]
                .as_str()
                .unwrap_or("end_turn")
                .to_string(),
            usage,
        }
    }
}

/// A permission option's kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OptionKind {
    AllowOnce,
    AllowAlways,
    RejectOnce,
    RejectAlways,
}

/// `session/request_permission`'s params, read.
#[derive(Debug, Clone, PartialEq)]
pub struct PermissionRequest {
    pub call: CallFields,
    /// (optionId, kind) of the options whose kind agentd knows.
    pub options: Vec<(String, OptionKind)>,
}

impl PermissionRequest {
    pub fn read(params: &Value) -> Result<PermissionRequest, String> {
        let call = CallFields::read(&params["toolCall"])?;
        let options = params["options"]
            .as_array()
            .ok_or("a permission request without options")?
            .iter()
            .filter_map(|o| {
                let id = o["optionId"].as_str()?.to_string();
                let kind = match o["kind"].as_str()? {
                    "allow_once" => OptionKind::AllowOnce,
                    "allow_always" => OptionKind::AllowAlways,
                    "reject_once" => OptionKind::RejectOnce,
                    "reject_always" => OptionKind::RejectAlways,
                    _ => return None,
                };
                Some((id, kind))
            })
            .collect();
        Ok(PermissionRequest { call, options })
    }

    /// The option that answers with `wanted`, else the closest that grants
    /// no more: "always" falls back to "once", a reject to any reject.
    pub fn option(&self, wanted: OptionKind) -> Option<&str> {
        let order: &[OptionKind] = match wanted {
            OptionKind::AllowAlways => &[OptionKind::AllowAlways, OptionKind::AllowOnce],
            OptionKind::AllowOnce => &[OptionKind::AllowOnce],
            OptionKind::RejectOnce => &[OptionKind::RejectOnce, OptionKind::RejectAlways],
            OptionKind::RejectAlways => &[OptionKind::RejectAlways, OptionKind::RejectOnce],
        };
        order.iter().find_map(|k| {
            self.options
                .iter()
                .find(|(_, kind)| kind == k)
                .map(|(id, _)| id.as_str())
        })
    }
}

/// The answer to a permission request: an option, or `cancelled` when
/// none fits (or the turn was cancelled).
pub fn permission_outcome(option: Option<&str>) -> Value {
    match option {
        Some(id) => json!({"outcome": {"outcome": "selected", "optionId": id}}),
        None => json!({"outcome": {"outcome": "cancelled"}}),
    }
}

mod usage;
pub use usage::UsageReport;

#[cfg(test)]
mod tests;
