//! The MCP servers an editor passes (DESIGN §15, §18): `session/new`'s
//! `mcpServers`, read from ACP's shapes into `CreateAgentRequest.mcp_servers`
//! — stdio `{name, command, args, env: [{name, value}]}` and streamable
//! HTTP `{type: "http", name, url, headers: [{name, value}]}`. ACP's `sse`
//! transport (the older HTTP+SSE one) is refused: `initialize` says
//! `mcpCapabilities.sse` is false. The daemon checks the rest (names, URLs,
//! headers) as it checks config.toml's servers.
//!
//! A session's servers are frozen with its tools when it is created, so the
//! prompt cache holds across turns and restarts; `session/load` and
//! `session/resume` keep the servers the session was created with, and a
//! server they name that the session does not have is only logged
//! ([`not_in_session`]).

use std::collections::HashMap;

use agentd_shared::proto as pb;
use pb::mcp_server_definition::Transport;
use serde_json::Value;

/// How much of a value the editor sent an error message quotes.
const QUOTED: usize = 64;

fn quoted(s: &str) -> String {
    let head: String = s.chars().take(QUOTED).collect();
    if head.len() < s.len() {
        format!("{head}…")
    } else {
        head
    }
}

/// `mcpServers` of `session/new` (absent or null: none), or why it cannot
/// be used, in words for the editor's user.
pub fn requested(params: &Value) -> Result<Vec<pb::McpServerDefinition>, String> {
    let servers = match params.get("mcpServers") {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(servers)) => servers,
        Some(_) => return Err("`mcpServers` must be an array".to_string()),
    };
    servers
        .iter()
        .enumerate()
        .map(|(i, server)| {
            server_definition(server).map_err(|why| format!("mcpServers[{i}]: {why}"))
        })
        .collect()
}

fn server_definition(server: &Value) -> Result<pb::McpServerDefinition, String> {
    let name = server
        .get("name")
        .and_then(Value::as_str)
        .ok_or("`name` (a string) is required")?;
    let named = |why: String| format!("MCP server {:?}: {why}", quoted(name));
    let transport = match server.get("type") {
        None | Some(Value::Null) => stdio(server),
        Some(Value::String(kind)) => match kind.as_str() {
            "stdio" => stdio(server),
            "http" => http(server),
            "sse" => Err(
                "the SSE transport is not supported (agentd's mcpCapabilities has sse: false); \
                 give the server's streamable HTTP endpoint as type \"http\""
                    .to_string(),
            ),
            other => Err(format!(
                "`type` {:?} is not an MCP transport; use \"http\", or leave it out for stdio",
                quoted(other)
            )),
        },
        Some(_) => Err("`type` must be a string".to_string()),
    }
    .map_err(named)?;
    Ok(pb::McpServerDefinition {
        name: name.to_string(),
        transport: Some(transport),
    })
}

fn stdio(server: &Value) -> Result<Transport, String> {
    let command = server
        .get("command")
        .and_then(Value::as_str)
        .ok_or("`command` (a string) is required for a stdio server")?;
    let args = match server.get("args") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(args)) => args
            .iter()
            .map(|a| a.as_str().map(str::to_string))
            .collect::<Option<Vec<_>>>()
            .ok_or("`args` must be an array of strings")?,
        Some(_) => return Err("`args` must be an array of strings".to_string()),
    };
    Ok(Transport::Stdio(pb::McpStdioServer {
        command: command.to_string(),
        args,
        env: pairs(server, "env", "environment variable")?,
        cwd: String::new(),
    }))
}

fn http(server: &Value) -> Result<Transport, String> {
    let url = server
        .get("url")
        .and_then(Value::as_str)
        .ok_or("`url` (a string) is required for an http server")?;
    Ok(Transport::Http(pb::McpHttpServer {
        url: url.to_string(),
        headers: pairs(server, "headers", "header")?,
    }))
}

/// ACP's `[{name, value}]` lists (`env`, `headers`) as a map; a name given
/// twice is refused rather than one of its values dropped.
fn pairs(server: &Value, field: &str, what: &str) -> Result<HashMap<String, String>, String> {
    let list = match server.get(field) {
        None | Some(Value::Null) => return Ok(HashMap::new()),
        Some(Value::Array(list)) => list,
        Some(_) => return Err(format!("`{field}` must be an array of {{name, value}}")),
    };
    let mut map = HashMap::with_capacity(list.len());
    for pair in list {
        let (Some(name), Some(value)) = (
            pair.get("name").and_then(Value::as_str),
            pair.get("value").and_then(Value::as_str),
        ) else {
            return Err(format!(
                "each of `{field}` must be {{\"name\": string, \"value\": string}}"
            ));
        };
        if map.insert(name.to_string(), value.to_string()).is_some() {
            return Err(format!("{what} {:?} is given twice", quoted(name)));
        }
    }
    Ok(map)
}

/// The names of `session/load`'s or `session/resume`'s `mcpServers` that
/// `agent` does not have (its servers were fixed when it was created).
pub fn not_in_session(agent: &pb::Agent, params: &Value) -> Vec<String> {
    params
        .get("mcpServers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|s| s.get("name").and_then(Value::as_str))
        .filter(|name| !agent.mcp_servers.iter().any(|s| s.name == *name))
        .map(quoted)
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn stdio_and_http_servers_are_read_from_acps_shapes() {
        let servers = requested(&json!({"mcpServers": [
            {"name": "fx", "command": "/usr/bin/python3", "args": ["server.py", "stdio"],
             "env": [{"name": "TOKEN", "value": "t"}]},
            {"type": "http", "name": "web", "url": "http://127.0.0.1:9/mcp",
             "headers": [{"name": "Authorization", "value": "Bearer t"}]},
        ]}))
        .unwrap();
        assert_eq!(servers.len(), 2);
        let Some(Transport::Stdio(s)) = &servers[0].transport else {
            panic!("{servers:?}")
        };
        assert_eq!(
            (servers[0].name.as_str(), s.command.as_str()),
            ("fx", "/usr/bin/python3")
        );
        assert_eq!(s.args, ["server.py", "stdio"]);
        assert_eq!(s.env.get("TOKEN").map(String::as_str), Some("t"));
        let Some(Transport::Http(h)) = &servers[1].transport else {
            panic!("{servers:?}")
        };
        assert_eq!(h.url, "http://127.0.0.1:9/mcp");
        assert_eq!(h.headers.len(), 1);
        assert!(requested(&json!({})).unwrap().is_empty());
        assert!(requested(&json!({"mcpServers": []})).unwrap().is_empty());
    }

    #[test]
    fn sse_servers_and_malformed_ones_are_refused_with_a_reason() {
        let refused = |server: Value| requested(&json!({"mcpServers": [server]})).unwrap_err();
        let sse =
            refused(json!({"type": "sse", "name": "old", "url": "http://h/sse", "headers": []}));
        assert!(sse.contains("\"old\"") && sse.contains("SSE"), "{sse}");
        assert!(refused(json!({"command": "x"})).contains("`name`"));
        assert!(refused(json!({"name": "a", "args": []})).contains("`command`"));
        assert!(refused(json!({"name": "a", "command": "x", "args": [1]})).contains("`args`"));
        assert!(refused(json!({"name": "a", "command": "x", "env": {"A": "1"}})).contains("`env`"));
        let twice = refused(json!({"name": "a", "command": "x",
            "env": [{"name": "A", "value": "1"}, {"name": "A", "value": "2"}]}));
        assert!(twice.contains("given twice"), "{twice}");
        assert!(refused(json!({"type": "http", "name": "a"})).contains("`url`"));
        let other = refused(json!({"type": "ws", "name": "a", "url": "ws://h"}));
        assert!(other.contains("\"ws\""), "{other}");
        assert!(requested(&json!({"mcpServers": {}})).is_err());
        let long = refused(json!({"type": "sse", "name": "n".repeat(100_000)}));
        assert!(
            long.len() < 400,
            "quotes only a prefix: {} bytes",
            long.len()
        );
    }

    #[test]
    fn servers_a_loaded_session_does_not_have_are_named() {
        let agent = pb::Agent {
            mcp_servers: vec![pb::McpServerStatus {
                name: "fx".into(),
                ..Default::default()
            }],
            ..Default::default()
        };
        let params = json!({"mcpServers": [{"name": "fx"}, {"name": "new"}]});
        assert_eq!(not_in_session(&agent, &params), ["new"]);
        assert!(not_in_session(&agent, &json!({})).is_empty());
    }
}
