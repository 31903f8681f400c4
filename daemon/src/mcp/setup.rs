//! An agent's MCP servers as frozen at its creation (DESIGN §18): each
//! server's definition, where it came from and what listing it gave, and
//! the tools offered, in the order its tools array declares them. Stored
//! with the agent's prompt as JSON and read back through the definitions'
//! own checks.
//!
//! Which servers an agent gets ([`chosen`]): config.toml's enabled ones,
//! then those passed with its creation request (an editor's). A request's
//! server replaces a config server of the same name — the editor's list is
//! the more specific choice, made for this session — and is listed last,
//! like every server of the request.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::def::{SandboxChoice, ServerDef, ServerName, Transport};
use super::tool::{ToolDecl, dedup_wire_names};
use crate::domain::{McpServerSummary, McpSource, McpTransport};

/// One server of an agent.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerState {
    pub def: ServerDef,
    pub source: McpSource,
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
    /// Absent: config.toml (the only source before requests could pass
    /// servers, so older records read the same).
    #[serde(default, skip_serializing_if = "StoredSource::is_config")]
    source: StoredSource,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tools: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

#[derive(Clone, Copy, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum StoredSource {
    #[default]
    Config,
    Editor,
    Repository,
    AgentType,
}

impl StoredSource {
    fn is_config(&self) -> bool {
        matches!(self, StoredSource::Config)
    }
}

impl From<McpSource> for StoredSource {
    fn from(source: McpSource) -> StoredSource {
        match source {
            McpSource::Config => StoredSource::Config,
            McpSource::Editor => StoredSource::Editor,
            McpSource::Repository => StoredSource::Repository,
            McpSource::AgentType => StoredSource::AgentType,
        }
    }
}

impl From<StoredSource> for McpSource {
    fn from(source: StoredSource) -> McpSource {
        match source {
            StoredSource::Config => McpSource::Config,
            StoredSource::Editor => McpSource::Editor,
            StoredSource::Repository => McpSource::Repository,
            StoredSource::AgentType => McpSource::AgentType,
        }
    }
}

/// The servers an agent gets, in order, each with its source: `base`'s
/// enabled ones (config.toml's, a repository's) whose names `requested`
/// does not take, then `requested` (names unique, checked where the request
/// was read).
pub fn chosen(
    base: &[(ServerDef, McpSource)],
    requested: &[ServerDef],
) -> Vec<(ServerDef, McpSource)> {
    let taken = |name: &ServerName| requested.iter().any(|r| &r.name == name);
    base.iter()
        .filter(|(d, _)| d.enabled && !taken(&d.name))
        .cloned()
        .chain(requested.iter().map(|d| (d.clone(), McpSource::Editor)))
        .collect()
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
    /// The setup from each server's definition, source and listing. Tools
    /// whose wire names collide are told apart (`dedup_wire_names`).
    pub fn build(listed: Vec<(ServerDef, McpSource, Result<Vec<ToolDecl>, String>)>) -> Setup {
        let mut setup = Setup::default();
        for (def, source, result) in listed {
            let listed = match result {
                Ok(tools) => {
                    let n = tools.len();
                    setup.tools.extend(tools);
                    Ok(n)
                }
                Err(why) => Err(why),
            };
            setup.servers.push(ServerState {
                def,
                source,
                listed,
            });
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

    /// The definitions passed with the agent's creation request (or
    /// inherited so), for a subagent it starts.
    pub fn editor_defs(&self) -> Vec<ServerDef> {
        self.servers
            .iter()
            .filter(|s| s.source == McpSource::Editor)
            .map(|s| s.def.clone())
            .collect()
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
                    sandboxed: stdio && s.def.sandbox != SandboxChoice::Off,
                    source: s.source,
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
                    source: s.source.into(),
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
                source: s.source.into(),
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
            (def, McpSource::Config, Ok(vec![tool])),
            (down, McpSource::Editor, Err("connection refused".into())),
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
        assert_eq!(setup.editor_defs(), vec![setup.servers[1].def.clone()]);
        assert_eq!(setup.summaries()[1].source, McpSource::Editor);
        // A config server is stored as before sources existed.
        let json = String::from_utf8(setup.to_json()).unwrap();
        assert_eq!(json.matches(r#""source":"editor""#).count(), 1, "{json}");
        assert_eq!(json.matches(r#""source""#).count(), 1, "{json}");
    }

    fn http(name: &str, url: &str) -> ServerDef {
        ServerDef::new(
            ServerName::parse(name).unwrap(),
            Transport::Http {
                url: url.into(),
                headers: BTreeMap::new(),
            },
        )
    }

    #[test]
    fn a_requested_server_comes_last_and_replaces_a_config_server_of_its_name() {
        let mut off = http("off", "http://h/off");
        off.enabled = false;
        let config = vec![
            http("a", "http://h/config-a"),
            http("b", "http://h/config-b"),
            off,
        ];
        let config: Vec<(ServerDef, McpSource)> =
            config.into_iter().map(|d| (d, McpSource::Config)).collect();
        let requested = vec![http("b", "http://h/editor-b"), http("c", "http://h/c")];
        let got: Vec<(String, String, McpSource)> = chosen(&config, &requested)
            .into_iter()
            .map(|(d, source)| {
                let Transport::Http { url, .. } = d.transport else {
                    unreachable!()
                };
                (d.name.to_string(), url, source)
            })
            .collect();
        let want = |n: &str, u: &str, s| (n.to_string(), u.to_string(), s);
        assert_eq!(
            got,
            vec![
                want("a", "http://h/config-a", McpSource::Config),
                want("b", "http://h/editor-b", McpSource::Editor),
                want("c", "http://h/c", McpSource::Editor),
            ]
        );
        // A disabled config server is not run; a request may still name it.
        let mut reuse = http("off", "http://h/editor-off");
        reuse.enabled = true;
        assert_eq!(chosen(&config, &[reuse]).len(), 3);
        assert_eq!(chosen(&[], &[]).len(), 0);
    }
}
