//! What an MCP server is, as the daemon keeps it (DESIGN §18): a checked
//! name, how it is reached (a command on stdio, or a streamable HTTP URL),
//! its timeouts and whether it runs under its agent's sandbox.
//!
//! Every value is checked where it is made ([`ServerName::parse`],
//! [`Transport`]'s own checks, the readers in `sources`), including when an
//! agent's stored record is read back as JSON, so the code that starts a
//! server never sees a malformed one. [`ServerDef::fingerprint`] names exactly
//! what would run, for approvals of a repository's servers.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

pub use super::sources::{
    deserialize_toml_servers, parse_mcp_json, parse_toml_server, parse_toml_servers,
};

/// How long a server may take to start and answer the MCP handshake.
pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(30);
/// How long one tool call may run.
pub const DEFAULT_TOOL_TIMEOUT: Duration = Duration::from_secs(600);
/// The longest timeout a definition may set (a day): longer is a mistake.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(24 * 3600);
const MAX_NAME_CHARS: usize = 64;
/// Headers rmcp sets itself and refuses from the caller.
const RESERVED_HEADERS: [&str; 4] = [
    "accept",
    "mcp-session-id",
    "mcp-protocol-version",
    "last-event-id",
];

/// A server's name: 1 to 64 of `[A-Za-z0-9_-]`. It is part of every tool's
/// wire name (`mcp__<server>__<tool>`), which allows nothing else.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct ServerName(String);

impl ServerName {
    pub fn parse(name: &str) -> Result<ServerName, String> {
        let chars = name.chars().count();
        if chars == 0 || chars > MAX_NAME_CHARS {
            return Err(format!(
                "MCP server name {:?} must have 1 to {MAX_NAME_CHARS} characters",
                crate::domain::text::quote(name)
            ));
        }
        if let Some(bad) = name
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '-'))
        {
            return Err(format!(
                "MCP server name {:?} has {bad:?}; use only letters, digits, '_' and '-'",
                crate::domain::text::quote(name)
            ));
        }
        Ok(ServerName(name.to_string()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for ServerName {
    type Error = String;
    fn try_from(name: String) -> Result<Self, String> {
        ServerName::parse(&name)
    }
}

impl From<ServerName> for String {
    fn from(name: ServerName) -> String {
        name.0
    }
}

impl fmt::Display for ServerName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// How the daemon reaches a server. Stored as JSON tagged by `"type"`
/// (`"stdio"` or `"http"`); read back through the same checks. Its `Debug`
/// leaves out the values of `env` and `headers`, which often hold tokens.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", try_from = "TransportRepr")]
pub enum Transport {
    /// A command the daemon starts (as the agent's child, in its sandbox)
    /// and speaks to over its stdin and stdout. A relative `cwd` is the
    /// caller's to resolve (against the agent's working directory).
    Stdio {
        command: String,
        args: Vec<String>,
        env: BTreeMap<String, String>,
        cwd: Option<PathBuf>,
    },
    /// A streamable HTTP endpoint; `headers` go with every request.
    Http {
        url: String,
        headers: BTreeMap<String, String>,
    },
}

impl fmt::Debug for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names = |map: &BTreeMap<String, String>| map.keys().cloned().collect::<Vec<_>>();
        match self {
            Transport::Stdio {
                command,
                args,
                env,
                cwd,
            } => f
                .debug_struct("Stdio")
                .field("command", command)
                .field("args", args)
                .field("env (names)", &names(env))
                .field("cwd", cwd)
                .finish(),
            Transport::Http { url, headers } => f
                .debug_struct("Http")
                .field("url", url)
                .field("headers (names)", &names(headers))
                .finish(),
        }
    }
}

/// The unchecked form a stored transport is read into.
#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
enum TransportRepr {
    Stdio {
        command: String,
        #[serde(default)]
        args: Vec<String>,
        #[serde(default)]
        env: BTreeMap<String, String>,
        #[serde(default)]
        cwd: Option<PathBuf>,
    },
    Http {
        url: String,
        #[serde(default)]
        headers: BTreeMap<String, String>,
    },
}

impl TryFrom<TransportRepr> for Transport {
    type Error = String;
    fn try_from(repr: TransportRepr) -> Result<Self, String> {
        let transport = match repr {
            TransportRepr::Stdio {
                command,
                args,
                env,
                cwd,
            } => Transport::Stdio {
                command,
                args,
                env,
                cwd,
            },
            TransportRepr::Http { url, headers } => Transport::Http { url, headers },
        };
        transport.check()?;
        Ok(transport)
    }
}

impl Transport {
    /// Refuses what could not be started or sent: an empty command, NUL
    /// bytes, environment names with `=`, a URL that is not http(s),
    /// headers HTTP cannot carry or that rmcp sets itself.
    pub fn check(&self) -> Result<(), String> {
        match self {
            Transport::Stdio {
                command,
                args,
                env,
                cwd,
            } => check_stdio(command, args, env, cwd.as_ref()),
            Transport::Http { url, headers } => check_http(url, headers),
        }
    }

    /// "stdio" or "http", for messages and listings.
    pub fn kind(&self) -> &'static str {
        match self {
            Transport::Stdio { .. } => "stdio",
            Transport::Http { .. } => "http",
        }
    }
}

fn check_stdio(
    command: &str,
    args: &[String],
    env: &BTreeMap<String, String>,
    cwd: Option<&PathBuf>,
) -> Result<(), String> {
    if command.trim().is_empty() {
        return Err("`command` is empty".to_string());
    }
    let has_nul = |s: &str| s.contains('\0');
    if has_nul(command) || args.iter().any(|a| has_nul(a)) {
        return Err("`command` and `args` cannot hold NUL characters".to_string());
    }
    for (name, value) in env {
        if name.is_empty() || name.contains('=') || has_nul(name) || has_nul(value) {
            return Err(format!(
                "environment variable {:?} cannot be set: a name is non-empty, without '=' \
                 or NUL, and a value has no NUL",
                crate::domain::text::quote(name)
            ));
        }
    }
    if cwd.is_some_and(|c| c.as_os_str().is_empty() || c.to_string_lossy().contains('\0')) {
        return Err("`cwd` is empty or holds NUL".to_string());
    }
    Ok(())
}

fn check_http(url: &str, headers: &BTreeMap<String, String>) -> Result<(), String> {
    let parsed = reqwest::Url::parse(url).map_err(|e| {
        format!(
            "`url` {:?} is not a URL: {e}",
            crate::domain::text::quote(url)
        )
    })?;
    if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none() {
        return Err(format!(
            "`url` {:?} must start with http:// or https:// and name a host",
            crate::domain::text::quote(url)
        ));
    }
    for (name, value) in headers {
        let header = http::HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
            format!(
                "header name {:?} is not valid in HTTP",
                crate::domain::text::quote(name)
            )
        })?;
        if RESERVED_HEADERS.contains(&header.as_str()) {
            return Err(format!(
                "header {name:?} is set by the MCP client itself and cannot be configured"
            ));
        }
        http::HeaderValue::from_str(value)
            .map_err(|_| format!("the value of header {name:?} is not valid in HTTP"))?;
    }
    Ok(())
}

/// Whether a server runs confined. Anything but these two words is refused
/// where it is read: an unknown value never becomes the choice that grants
/// more.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SandboxChoice {
    /// The server runs under its agent's sandbox and environment rules.
    #[default]
    Agent,
    /// The server runs unconfined (an explicit opt-out).
    Off,
    /// The server runs confined whatever its agent's sandbox: under the
    /// agent's, or, when the agent has none, writing only beneath the
    /// agent's workspace. A repository's servers are given this when an
    /// agent is made (never read from a file): an agent that worked in the
    /// repository may have changed what they run — the script the approved
    /// command names, or anything it loads — and an approval cannot cover
    /// all of that (docs/security.md).
    Always,
}

impl SandboxChoice {
    pub fn parse(value: &str) -> Result<SandboxChoice, String> {
        match value {
            "agent" => Ok(SandboxChoice::Agent),
            "off" => Ok(SandboxChoice::Off),
            other => Err(format!(
                "sandbox {:?} is not known; use \"agent\" (the default) or \"off\"",
                crate::domain::text::quote(other)
            )),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            SandboxChoice::Agent => "agent",
            SandboxChoice::Off => "off",
            SandboxChoice::Always => "always",
        }
    }
}

/// One configured MCP server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerDef {
    pub name: ServerName,
    pub transport: Transport,
    pub enabled: bool,
    #[serde(rename = "startup_timeout_ms", with = "millis")]
    pub startup_timeout: Duration,
    #[serde(rename = "tool_timeout_ms", with = "millis")]
    pub tool_timeout: Duration,
    pub sandbox: SandboxChoice,
    /// Whether running agents that would run the same server alike share
    /// one (`mcp::pool`); `shared = false` in config.toml gives each
    /// run its own, for a server that keeps state per client.
    #[serde(default = "shared_by_default")]
    pub shared: bool,
}

fn shared_by_default() -> bool {
    true
}

impl ServerDef {
    /// A definition with the defaults: enabled, 30 s to start, 600 s a
    /// call, under the agent's sandbox.
    pub fn new(name: ServerName, transport: Transport) -> ServerDef {
        ServerDef {
            name,
            transport,
            enabled: true,
            startup_timeout: DEFAULT_STARTUP_TIMEOUT,
            tool_timeout: DEFAULT_TOOL_TIMEOUT,
            sandbox: SandboxChoice::Agent,
            shared: true,
        }
    }

    /// A stdio server `name` running `command` with no arguments or
    /// environment, with the defaults (for tests).
    #[cfg(test)]
    #[allow(clippy::unwrap_used)]
    pub(crate) fn stdio_for_test(name: &str, command: &str) -> ServerDef {
        ServerDef::new(
            ServerName::parse(name).unwrap(),
            Transport::Stdio {
                command: command.into(),
                args: Vec::new(),
                env: std::collections::BTreeMap::new(),
                cwd: None,
            },
        )
    }

    /// The definition as stored in an agent's record.
    pub fn to_json(&self) -> String {
        // Every field is a string, map, list, bool or integer: this cannot fail.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// A stored definition, through the same checks as a configured one.
    pub fn from_json(text: &str) -> Result<ServerDef, String> {
        serde_json::from_str(text).map_err(|e| format!("invalid stored MCP server: {e}"))
    }

    /// SHA-256 (hex) of what would run and how confined: the transport and
    /// the sandbox choice, in a fixed serialisation of its own (not serde's,
    /// so reordering a struct cannot silently void approvals). The name,
    /// `enabled`, `shared` and the timeouts are left out: they do not change
    /// what runs.
    pub fn fingerprint(&self) -> String {
        let transport = match &self.transport {
            Transport::Stdio {
                command,
                args,
                env,
                cwd,
            } => serde_json::json!([
                "stdio",
                command,
                args,
                env.iter().collect::<Vec<_>>(),
                cwd.as_ref().map(|c| c.to_string_lossy()),
            ]),
            Transport::Http { url, headers } => {
                serde_json::json!(["http", url, headers.iter().collect::<Vec<_>>()])
            }
        };
        let canonical =
            serde_json::json!(["agentd-mcp-server/1", transport, self.sandbox.as_str()]);
        let digest = Sha256::digest(canonical.to_string().as_bytes());
        digest.iter().map(|b| format!("{b:02x}")).collect()
    }
}

/// A timeout, checked to be at least a millisecond and at most
/// [`MAX_TIMEOUT`].
pub fn check_timeout(what: &str, timeout: Duration) -> Result<Duration, String> {
    if timeout.is_zero() || timeout > MAX_TIMEOUT {
        return Err(format!(
            "{what} must be more than 0 and at most {} seconds",
            MAX_TIMEOUT.as_secs()
        ));
    }
    Ok(timeout)
}

/// Timeouts stored as whole milliseconds.
mod millis {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let ms = u64::deserialize(d)?;
        super::check_timeout("a timeout", Duration::from_millis(ms))
            .map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stdio(command: &str) -> Transport {
        Transport::Stdio {
            command: command.to_string(),
            args: vec!["--flag".to_string()],
            env: BTreeMap::from([("TOKEN".to_string(), "x".to_string())]),
            cwd: None,
        }
    }

    #[test]
    fn server_names_allow_only_the_wire_alphabet() {
        assert_eq!(
            ServerName::parse("git-hub_2").unwrap().as_str(),
            "git-hub_2"
        );
        assert!(ServerName::parse("").is_err());
        assert!(ServerName::parse(&"a".repeat(64)).is_ok());
        assert!(ServerName::parse(&"a".repeat(65)).is_err());
        for bad in ["a b", "a.b", "a/b", "é", "a__b\n"] {
            assert!(ServerName::parse(bad).is_err(), "{bad}");
        }
        let long = ServerName::parse(&"x".repeat(100_000)).unwrap_err();
        assert!(long.len() < 300, "{long}");
    }

    #[test]
    fn stored_definition_round_trips_through_json() {
        let mut def = ServerDef::new(ServerName::parse("fs").unwrap(), stdio("npx"));
        def.sandbox = SandboxChoice::Off;
        def.tool_timeout = Duration::from_millis(1500);
        let json = def.to_json();
        assert!(json.contains(r#""type":"stdio""#), "{json}");
        assert!(json.contains(r#""sandbox":"off""#), "{json}");
        assert!(json.contains(r#""tool_timeout_ms":1500"#), "{json}");
        assert_eq!(ServerDef::from_json(&json).unwrap(), def);

        let http = ServerDef::new(
            ServerName::parse("web").unwrap(),
            Transport::Http {
                url: "https://example.com/mcp".to_string(),
                headers: BTreeMap::from([("Authorization".into(), "Bearer t".into())]),
            },
        );
        assert_eq!(ServerDef::from_json(&http.to_json()).unwrap(), http);
    }

    #[test]
    fn stored_definitions_are_checked_when_read_back() {
        let def = ServerDef::new(ServerName::parse("fs").unwrap(), stdio("npx"));
        let json = def.to_json();
        for (from, to) in [
            (r#""name":"fs""#, r#""name":"f s""#),
            (r#""command":"npx""#, r#""command":"""#),
            (r#""sandbox":"agent""#, r#""sandbox":"none""#),
            (r#""tool_timeout_ms":600000"#, r#""tool_timeout_ms":0"#),
            (r#""type":"stdio""#, r#""type":"sse""#),
        ] {
            let bad = json.replace(from, to);
            assert_ne!(bad, json, "{from}");
            assert!(ServerDef::from_json(&bad).is_err(), "{bad}");
        }
        let extra = json.replacen('{', r#"{"extra":1,"#, 1);
        assert!(ServerDef::from_json(&extra).is_err(), "{extra}");
    }

    #[test]
    fn http_transport_wants_an_http_url_and_valid_headers() {
        let http = |url: &str, header: (&str, &str)| Transport::Http {
            url: url.to_string(),
            headers: BTreeMap::from([(header.0.to_string(), header.1.to_string())]),
        };
        assert!(
            http("http://127.0.0.1:8080/mcp", ("X-Key", "v"))
                .check()
                .is_ok()
        );
        assert!(
            http("https://h/mcp", ("Authorization", "Bearer t"))
                .check()
                .is_ok()
        );
        assert!(http("ftp://h/mcp", ("X", "v")).check().is_err());
        assert!(http("file:///tmp/x", ("X", "v")).check().is_err());
        assert!(http("not a url", ("X", "v")).check().is_err());
        assert!(http("https://h/", ("bad header", "v")).check().is_err());
        assert!(http("https://h/", ("X", "line\nbreak")).check().is_err());
        assert!(http("https://h/", ("Mcp-Session-Id", "s")).check().is_err());
    }

    #[test]
    fn stdio_transport_refuses_what_cannot_be_spawned() {
        assert!(stdio("server").check().is_ok());
        assert!(stdio("  ").check().is_err());
        assert!(stdio("a\0b").check().is_err());
        let bad_env = Transport::Stdio {
            command: "x".into(),
            args: vec![],
            env: BTreeMap::from([("A=B".to_string(), "v".to_string())]),
            cwd: None,
        };
        assert!(bad_env.check().is_err());
    }

    #[test]
    fn fingerprint_follows_what_runs_and_nothing_else() {
        let name = ServerName::parse("fs").unwrap();
        let def = ServerDef::new(name.clone(), stdio("npx"));
        let fp = def.fingerprint();
        assert_eq!(fp.len(), 64);
        assert!(fp.chars().all(|c| c.is_ascii_hexdigit()));
        assert_eq!(fp, def.clone().fingerprint());

        let mut same = def.clone();
        same.name = ServerName::parse("other").unwrap();
        same.enabled = false;
        same.tool_timeout = Duration::from_secs(5);
        assert_eq!(same.fingerprint(), fp);

        let mut unsandboxed = def.clone();
        unsandboxed.sandbox = SandboxChoice::Off;
        assert_ne!(unsandboxed.fingerprint(), fp);
        let other_command = ServerDef::new(name.clone(), stdio("npx2"));
        assert_ne!(other_command.fingerprint(), fp);
        let Transport::Stdio { env, .. } = &mut same.transport else {
            unreachable!()
        };
        env.insert("MORE".into(), "1".into());
        assert_ne!(same.fingerprint(), fp);
    }

    #[test]
    fn debug_output_leaves_out_secret_values() {
        let shown = format!("{:?}", stdio("npx"));
        assert!(
            shown.contains("TOKEN") && !shown.contains("\"x\""),
            "{shown}"
        );
        let http = Transport::Http {
            url: "https://h/mcp".into(),
            headers: BTreeMap::from([("Authorization".into(), "Bearer secret".into())]),
        };
        let shown = format!("{http:?}");
        assert!(
            shown.contains("Authorization") && !shown.contains("secret"),
            "{shown}"
        );
    }

    #[test]
    fn sandbox_values_other_than_agent_and_off_are_refused() {
        assert_eq!(SandboxChoice::parse("agent"), Ok(SandboxChoice::Agent));
        assert_eq!(SandboxChoice::parse("off"), Ok(SandboxChoice::Off));
        for bad in ["", "Off", "none", "workspace-write", "false"] {
            assert!(SandboxChoice::parse(bad).is_err(), "{bad}");
        }
    }
}
