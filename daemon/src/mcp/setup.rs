//! An agent's MCP servers as frozen at its creation (DESIGN §18): each
//! server's definition and what listing it gave, and the tools offered, in
//! the order its tools array declares them. Stored with the agent's prompt
//! as JSON and read back through the definitions' own checks.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::def::{SandboxChoice, ServerDef, ServerName, Transport};
use super::tool::{ToolDecl, dedup_wire_names};
use crate::domain::{McpServerSummary, McpTransport};

/// One server of an agent.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerState {
    pub def: ServerDef,
    /// How many tools it offered at creation, or why it offered none.
    pub listed: Result<usize, String>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Setup {
    pub servers: Vec<ServerState>,
    pub tools: Vec<ToolDecl>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct StoredSetup {
    servers: Vec<StoredServer>,
    tools: Vec<StoredTool>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct StoredServer {
    def: ServerDef,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tools: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct StoredTool {
    server: ServerName,
    name: String,
    wire_name: String,
    description: String,
    input_schema: Value,
    read_only: bool,
}

impl Setup {
    /// The setup from each server's definition and listing. Tools whose
    /// wire names collide are told apart (`dedup_wire_names`).
    pub fn build(listed: Vec<(ServerDef, Result<Vec<ToolDecl>, String>)>) -> Setup {
        let mut setup = Setup::default();
        for (def, result) in listed {
            let listed = match result {
                Ok(tools) => {
                    let n = tools.len();
                    setup.tools.extend(tools);
                    Ok(n)
                }
                Err(why) => Err(why),
            };
            setup.servers.push(ServerState { def, listed });
        }
        dedup_wire_names(&mut setup.tools);
        setup
    }

    /// `tools_json` (a JSON array) with the MCP tools' declarations after
    /// the ones it has.
    pub fn extend_tools_json(&self, tools_json: &[u8]) -> Vec<u8> {
        let mut tools: Vec<Value> = serde_json::from_slice(tools_json).unwrap_or_default();
        tools.extend(self.tools.iter().map(ToolDecl::spec_json));
        serde_json::to_vec(&tools).unwrap_or_default()
    }

    /// What the agent's record says of each server.
    pub fn summaries(&self) -> Vec<McpServerSummary> {
        self.servers
            .iter()
            .map(|s| {
                let stdio = matches!(s.def.transport, Transport::Stdio { .. });
                McpServerSummary {
                    name: s.def.name.as_str().to_string(),
                    transport: if stdio {
                        McpTransport::Stdio
                    } else {
                        McpTransport::Http
                    },
                    tools: s.listed.as_ref().map_or(0, |n| *n as u32),
                    error: s.listed.as_ref().err().cloned(),
                    sandboxed: stdio && s.def.sandbox == SandboxChoice::Agent,
                }
            })
            .collect()
    }

    pub fn to_json(&self) -> Vec<u8> {
        let stored = StoredSetup {
            servers: self
                .servers
                .iter()
                .map(|s| StoredServer {
                    def: s.def.clone(),
                    tools: s.listed.as_ref().ok().copied(),
                    error: s.listed.as_ref().err().cloned(),
                })
                .collect(),
            tools: self
                .tools
                .iter()
                .map(|t| StoredTool {
                    server: t.server.clone(),
                    name: t.name.clone(),
                    wire_name: t.wire_name.clone(),
                    description: t.description.clone(),
                    input_schema: t.input_schema.clone(),
                    read_only: t.read_only,
                })
                .collect(),
        };
        serde_json::to_vec(&stored).unwrap_or_default()
    }

    /// A stored setup; malformed bytes are an error.
    pub fn parse(bytes: &[u8]) -> Result<Setup, String> {
        let stored: StoredSetup = serde_json::from_slice(bytes)
            .map_err(|e| format!("the agent's MCP servers cannot be read: {e}"))?;
        let servers = stored
            .servers
            .into_iter()
            .map(|s| ServerState {
                def: s.def,
                listed: match (s.tools, s.error) {
                    (Some(n), None) => Ok(n),
                    (_, Some(e)) => Err(e),
                    (None, None) => Ok(0),
                },
            })
            .collect();
        let tools = stored
            .tools
            .into_iter()
            .map(|t| ToolDecl {
                server: t.server,
                name: t.name,
                wire_name: t.wire_name,
                description: t.description,
                input_schema: t.input_schema,
                read_only: t.read_only,
            })
            .collect();
        Ok(Setup { servers, tools })
    }

    /// A stored setup (checked when the prompt was read); empty: none.
    pub fn from_json(bytes: &[u8]) -> Setup {
        if bytes.is_empty() {
            return Setup::default();
        }
        Setup::parse(bytes).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde_json::json;

    use super::*;

    #[test]
    fn a_setup_round_trips_and_extends_the_tools_array() {
        let name = ServerName::parse("fx").unwrap();
        let def = ServerDef::new(
            name.clone(),
            Transport::Stdio {
                command: "python3".into(),
                args: vec!["server.py".into()],
                env: BTreeMap::new(),
                cwd: None,
            },
        );
        let down = ServerDef::new(
            ServerName::parse("down").unwrap(),
            Transport::Http {
                url: "http://127.0.0.1:9/mcp".into(),
                headers: BTreeMap::new(),
            },
        );
        let tool = ToolDecl {
            server: name,
            name: "echo".into(),
            wire_name: "mcp__fx__echo".into(),
            description: "Echoes".into(),
            input_schema: json!({"type": "object"}),
            read_only: true,
        };
        let setup = Setup::build(vec![
            (def, Ok(vec![tool])),
            (down, Err("connection refused".into())),
        ]);
        assert_eq!(setup.servers[0].listed, Ok(1));
        assert_eq!(setup.servers[1].listed, Err("connection refused".into()));
        assert_eq!(Setup::parse(&setup.to_json()).unwrap(), setup);
        let tools: Vec<Value> =
            serde_json::from_slice(&setup.extend_tools_json(br#"[{"name":"Bash"}]"#)).unwrap();
        let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
        assert_eq!(names, ["Bash", "mcp__fx__echo"]);
        assert!(Setup::parse(b"{\"servers\": 3}").is_err());
        assert_eq!(Setup::from_json(b""), Setup::default());
    }
}
