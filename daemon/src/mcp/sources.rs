//! Where server definitions are read from (DESIGN §18): `[mcp_servers.NAME]`
//! tables of config.toml, and a repository's `.mcp.json` in Claude Code's
//! format. Both are read strictly: an unknown key, both or neither of
//! `command` and `url`, an unknown `sandbox` or transport type is refused
//! with the server's name in the message, never guessed at. Values are kept
//! as written (no `${VAR}` expansion).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;

use super::def::{
    DEFAULT_STARTUP_TIMEOUT, DEFAULT_TOOL_TIMEOUT, SandboxChoice, ServerDef, ServerName, Transport,
    check_timeout,
};

/// One `[mcp_servers.NAME]` table as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TomlServer {
    command: Option<String>,
    args: Option<Vec<String>>,
    env: Option<BTreeMap<String, String>>,
    cwd: Option<PathBuf>,
    url: Option<String>,
    headers: Option<BTreeMap<String, String>>,
    enabled: Option<bool>,
    startup_timeout_secs: Option<u64>,
    tool_timeout_secs: Option<u64>,
    sandbox: Option<String>,
    shared: Option<bool>,
}

/// The definition in `[mcp_servers.<name>]`.
pub fn parse_toml_server(name: &str, table: &toml::Table) -> Result<ServerDef, String> {
    let at = format!("mcp_servers.{name}");
    let server = ServerName::parse(name).map_err(|e| format!("{at}: {e}"))?;
    let raw: TomlServer = toml::Value::Table(table.clone())
        .try_into()
        .map_err(|e: toml::de::Error| format!("{at}: {}", e.message()))?;
    toml_def(server, raw).map_err(|e| format!("{at}: {e}"))
}

/// Every server of an `[mcp_servers]` table, in name order.
pub fn parse_toml_servers(servers: &toml::Table) -> Result<Vec<ServerDef>, String> {
    servers
        .iter()
        .map(|(name, value)| match value {
            toml::Value::Table(table) => parse_toml_server(name, table),
            _ => Err(format!("mcp_servers.{name} must be a table")),
        })
        .collect()
}

/// For `#[serde(deserialize_with = "...")]` on a config field holding the
/// `[mcp_servers]` table, so that errors carry the file's line.
pub fn deserialize_toml_servers<'de, D>(d: D) -> Result<Vec<ServerDef>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    let table = toml::Table::deserialize(d)?;
    parse_toml_servers(&table).map_err(serde::de::Error::custom)
}

fn toml_def(name: ServerName, raw: TomlServer) -> Result<ServerDef, String> {
    let transport = match (raw.command, raw.url) {
        (Some(_), Some(_)) => {
            return Err("set either `command` (stdio) or `url` (streamable HTTP), not both".into());
        }
        (None, None) => {
            return Err(
                "set `command` (a stdio server) or `url` (a streamable HTTP server)".into(),
            );
        }
        (Some(command), None) => {
            if raw.headers.is_some() {
                return Err(
                    "`headers` is for `url` servers; a `command` server takes `env`".into(),
                );
            }
            Transport::Stdio {
                command,
                args: raw.args.unwrap_or_default(),
                env: raw.env.unwrap_or_default(),
                cwd: raw.cwd,
            }
        }
        (None, Some(url)) => {
            if raw.args.is_some() || raw.env.is_some() || raw.cwd.is_some() {
                return Err("`args`, `env` and `cwd` are for `command` servers, not `url`".into());
            }
            Transport::Http {
                url,
                headers: raw.headers.unwrap_or_default(),
            }
        }
    };
    transport.check()?;
    let secs = |key: &str, value: Option<u64>, default: Duration| match value {
        None => Ok(default),
        Some(s) => check_timeout(key, Duration::from_secs(s)),
    };
    Ok(ServerDef {
        name,
        transport,
        enabled: raw.enabled.unwrap_or(true),
        startup_timeout: secs(
            "startup_timeout_secs",
            raw.startup_timeout_secs,
            DEFAULT_STARTUP_TIMEOUT,
        )?,
        tool_timeout: secs(
            "tool_timeout_secs",
            raw.tool_timeout_secs,
            DEFAULT_TOOL_TIMEOUT,
        )?,
        sandbox: match raw.sandbox {
            None => SandboxChoice::Agent,
            Some(value) => SandboxChoice::parse(&value)?,
        },
        shared: raw.shared.unwrap_or(true),
    })
}

/// One server of a `.mcp.json` as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct JsonServer {
    #[serde(rename = "type")]
    kind: Option<String>,
    command: Option<String>,
    args: Option<Vec<String>>,
    env: Option<BTreeMap<String, String>>,
    url: Option<String>,
    headers: Option<BTreeMap<String, String>>,
}

/// A `.mcp.json` file: `{"mcpServers": {"<name>": {...}}}`, servers in the
/// file's order. A server is `{"command", "args"?, "env"?}` (its `"type"`
/// absent or `"stdio"`) or `{"type": "http" | "streamable-http", "url",
/// "headers"?}`. Every server gets the defaults of [`ServerDef::new`]: the
/// file has no way to turn the sandbox off.
pub fn parse_mcp_json(text: &str) -> Result<Vec<ServerDef>, String> {
    parse_mcp_json_each(text)?.into_iter().collect()
}

/// A `.mcp.json` file read as [`parse_mcp_json`] reads it, but each server
/// on its own: Err only when the file as a whole is not one (not JSON, no
/// `"mcpServers"` object); a server that is not valid is its own Err, with
/// its name in the message, and the others are still read.
pub fn parse_mcp_json_each(text: &str) -> Result<Vec<Result<ServerDef, String>>, String> {
    let file: serde_json::Value =
        serde_json::from_str(text).map_err(|e| format!(".mcp.json is not valid JSON: {e}"))?;
    let Some(top) = file.as_object() else {
        return Err(".mcp.json must hold an object with \"mcpServers\"".to_string());
    };
    if let Some(key) = top.keys().find(|k| *k != "mcpServers") {
        return Err(format!(
            ".mcp.json: unknown key {:?}; only \"mcpServers\" is read",
            crate::domain::text::quote(key)
        ));
    }
    let Some(servers) = top.get("mcpServers").and_then(|s| s.as_object()) else {
        return Err(".mcp.json: \"mcpServers\" must be an object of servers by name".to_string());
    };
    Ok(servers
        .iter()
        .map(|(name, value)| {
            let at = format!(".mcp.json: server {:?}", crate::domain::text::quote(name));
            parse_json_server(name, value).map_err(|e| format!("{at}: {e}"))
        })
        .collect())
}

/// One server in Claude Code's format (as a `.mcp.json` or an agent type's
/// front matter has it): `{"command", "args"?, "env"?}` or `{"type": "http",
/// "url", "headers"?}`, with the defaults of [`ServerDef::new`]. The error
/// does not name the server; the caller says where it is.
pub fn parse_json_server(name: &str, value: &serde_json::Value) -> Result<ServerDef, String> {
    let server = ServerName::parse(name)?;
    let raw: JsonServer = serde_json::from_value(value.clone()).map_err(|e| e.to_string())?;
    json_transport(raw).map(|transport| ServerDef::new(server, transport))
}

fn json_transport(raw: JsonServer) -> Result<Transport, String> {
    let transport = match raw.kind.as_deref() {
        None | Some("stdio") => {
            if raw.url.is_some() || raw.headers.is_some() {
                return Err(
                    "a server with \"url\" needs \"type\": \"http\"; a stdio server \
                     has \"command\" and no \"url\" or \"headers\""
                        .to_string(),
                );
            }
            let Some(command) = raw.command else {
                return Err("a stdio server needs \"command\"".to_string());
            };
            Transport::Stdio {
                command,
                args: raw.args.unwrap_or_default(),
                env: raw.env.unwrap_or_default(),
                cwd: None,
            }
        }
        Some("http" | "streamable-http") => {
            if raw.command.is_some() || raw.args.is_some() || raw.env.is_some() {
                return Err(
                    "an http server has \"url\" and \"headers\", not \"command\", \"args\" or \"env\""
                        .to_string(),
                );
            }
            let Some(url) = raw.url else {
                return Err("an http server needs \"url\"".to_string());
            };
            Transport::Http {
                url,
                headers: raw.headers.unwrap_or_default(),
            }
        }
        Some("sse") => {
            return Err(
                "the SSE transport is not supported: agentd speaks to MCP servers \
                 over stdio and streamable HTTP only (if the server also serves \
                 streamable HTTP, give that URL with \"type\": \"http\")"
                    .to_string(),
            );
        }
        Some(other) => {
            return Err(format!(
                "transport type {:?} is not known; use \"stdio\" or \"http\"",
                crate::domain::text::quote(other)
            ));
        }
    };
    transport.check()?;
    Ok(transport)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toml_servers(text: &str) -> Result<Vec<ServerDef>, String> {
        let table: toml::Table = text.parse().unwrap();
        let servers = table["mcp_servers"].as_table().unwrap();
        parse_toml_servers(servers)
    }

    #[test]
    fn config_tables_give_typed_definitions_with_defaults() {
        let defs = toml_servers(
            r#"
            [mcp_servers.github]
            url = "https://api.example.com/mcp"
            headers = { Authorization = "Bearer t" }
            tool_timeout_secs = 60

            [mcp_servers.fs]
            command = "npx"
            args = ["-y", "server-fs", "."]
            env = { DEBUG = "1" }
            cwd = "tools"
            enabled = false
            startup_timeout_secs = 5
            sandbox = "off"
            "#,
        )
        .unwrap();
        assert_eq!(defs.len(), 2);
        let fs = &defs[0];
        assert_eq!(fs.name.as_str(), "fs");
        assert!(!fs.enabled);
        assert_eq!(fs.startup_timeout, Duration::from_secs(5));
        assert_eq!(fs.tool_timeout, DEFAULT_TOOL_TIMEOUT);
        assert_eq!(fs.sandbox, SandboxChoice::Off);
        assert_eq!(
            fs.transport,
            Transport::Stdio {
                command: "npx".into(),
                args: vec!["-y".into(), "server-fs".into(), ".".into()],
                env: BTreeMap::from([("DEBUG".into(), "1".into())]),
                cwd: Some(PathBuf::from("tools")),
            }
        );
        let github = &defs[1];
        assert!(github.enabled);
        assert_eq!(github.sandbox, SandboxChoice::Agent);
        assert_eq!(github.startup_timeout, DEFAULT_STARTUP_TIMEOUT);
        assert_eq!(github.tool_timeout, Duration::from_secs(60));
        assert!(matches!(&github.transport, Transport::Http { url, .. } if url.ends_with("/mcp")));
    }

    #[test]
    fn config_tables_are_read_strictly() {
        let cases = [
            ("command = \"x\"\ncolor = \"red\"", "color"),
            ("command = \"x\"\nurl = \"http://h/\"", "not both"),
            ("enabled = true", "`command`"),
            ("command = \"x\"\nsandbox = \"none\"", "sandbox"),
            ("command = \"x\"\nsandbox = \"workspace-write\"", "sandbox"),
            ("url = \"http://h/\"\nargs = [\"a\"]", "`args`"),
            ("command = \"x\"\nheaders = { A = \"b\" }", "`headers`"),
            ("url = \"ws://h/\"", "http://"),
            (
                "command = \"x\"\ntool_timeout_secs = 0",
                "tool_timeout_secs",
            ),
            (
                "command = \"x\"\nstartup_timeout_secs = 100000000",
                "startup_timeout_secs",
            ),
        ];
        for (body, expect) in cases {
            let err = toml_servers(&format!("[mcp_servers.s]\n{body}")).unwrap_err();
            assert!(err.starts_with("mcp_servers.s: "), "{err}");
            assert!(err.contains(expect), "{body}: {err}");
        }
        let err = toml_servers("[mcp_servers.\"bad name\"]\ncommand = \"x\"").unwrap_err();
        assert!(err.contains("bad name"), "{err}");
        let err = toml_servers("[mcp_servers]\ns = 3").unwrap_err();
        assert!(err.contains("must be a table"), "{err}");
    }

    #[test]
    fn config_field_deserializes_through_the_same_checks() {
        #[derive(Deserialize)]
        struct Config {
            #[serde(deserialize_with = "deserialize_toml_servers")]
            mcp_servers: Vec<ServerDef>,
        }
        let ok: Config = toml::from_str("[mcp_servers.a]\ncommand = \"x\"").unwrap();
        assert_eq!(ok.mcp_servers[0].name.as_str(), "a");
        let bad = toml::from_str::<Config>("[mcp_servers.a]\ncommand = \"x\"\nsandbox = \"no\"");
        let msg = bad.err().unwrap().to_string();
        assert!(msg.contains("sandbox"), "{msg}");
    }

    #[test]
    fn claude_code_mcp_json_is_read_in_file_order() {
        let defs = parse_mcp_json(
            r#"{"mcpServers": {
                "zeta": {"command": "node", "args": ["s.js"], "env": {"K": "v"}},
                "alpha": {"type": "http", "url": "https://h/mcp", "headers": {"X-Key": "k"}},
                "beta": {"type": "streamable-http", "url": "http://127.0.0.1:3000/mcp"},
                "gamma": {"type": "stdio", "command": "srv"}
            }}"#,
        )
        .unwrap();
        let names: Vec<_> = defs.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names, ["zeta", "alpha", "beta", "gamma"]);
        assert!(
            defs.iter()
                .all(|d| d.sandbox == SandboxChoice::Agent && d.enabled)
        );
        assert_eq!(
            defs[0].transport,
            Transport::Stdio {
                command: "node".into(),
                args: vec!["s.js".into()],
                env: BTreeMap::from([("K".into(), "v".into())]),
                cwd: None,
            }
        );
        assert_eq!(defs[1].transport.kind(), "http");
        assert_eq!(defs[2].transport.kind(), "http");
    }

    #[test]
    fn mcp_json_refuses_sse_and_what_it_does_not_know() {
        let err =
            parse_mcp_json(r#"{"mcpServers": {"old": {"type": "sse", "url": "http://h/sse"}}}"#)
                .unwrap_err();
        assert!(err.contains("\"old\""), "{err}");
        assert!(err.contains("SSE transport is not supported"), "{err}");
        assert!(err.contains("stdio and streamable HTTP"), "{err}");
        let cases = [
            (
                r#"{"mcpServers": {"s": {"command": "x", "sandbox": "off"}}}"#,
                "sandbox",
            ),
            (
                r#"{"mcpServers": {"s": {"type": "ws", "url": "http://h/"}}}"#,
                "not known",
            ),
            (
                r#"{"mcpServers": {"s": {"url": "http://h/"}}}"#,
                "\"type\": \"http\"",
            ),
            (
                r#"{"mcpServers": {"s": {"type": "http"}}}"#,
                "needs \"url\"",
            ),
            (r#"{"mcpServers": {"s": {}}}"#, "needs \"command\""),
            (
                r#"{"mcpServers": {"s": {"type": "http", "url": "x", "command": "y"}}}"#,
                "not",
            ),
            (r#"{"mcpServers": {"a b": {"command": "x"}}}"#, "a b"),
            (r#"{"servers": {}}"#, "unknown key"),
            (r#"{"mcpServers": []}"#, "must be an object"),
            ("[1]", "must hold an object"),
            ("{", "not valid JSON"),
        ];
        for (text, expect) in cases {
            let err = parse_mcp_json(text).unwrap_err();
            assert!(err.contains(expect), "{text}: {err}");
        }
        assert_eq!(parse_mcp_json(r#"{"mcpServers": {}}"#).unwrap(), vec![]);
    }

    #[test]
    fn one_bad_server_in_mcp_json_leaves_the_others_readable() {
        let each = parse_mcp_json_each(
            r#"{"mcpServers": {"good": {"command": "srv"}, "bad": {"command": "x", "cwd": "/"}}}"#,
        )
        .unwrap();
        assert_eq!(each.len(), 2);
        assert_eq!(each[0].as_ref().unwrap().name.as_str(), "good");
        let err = each[1].as_ref().unwrap_err();
        assert!(err.contains("\"bad\"") && err.contains("cwd"), "{err}");
        assert!(parse_mcp_json_each("{").is_err());
    }
}
