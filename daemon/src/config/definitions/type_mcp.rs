//! An agent type's own MCP servers (DESIGN §18): the front matter's
//! `mcpServers`, in either of the two shapes people write it in.
//!
//! - Claude Code's: a list whose entries are a server's name (a server some
//!   other source defines, which the type wants) or a one-key mapping
//!   `NAME: {definition}` (a server of the type's own).
//! - Qwen Code's and Gemini CLI's: a mapping `NAME: {definition}`.
//!
//! A definition is Claude Code's server format, as in `.mcp.json`
//! (`command`, `args`, `env`; or `type: http`, `url`, `headers`); Gemini's
//! `httpUrl` is read as `type: http` with that `url`. Everything else is
//! refused with the server's name, as `.mcp.json` is: a type file that says
//! something agentd would not do is an error, not a guess.
//!
//! Whether a type's server may run (a repository's type file is the
//! repository's, so its servers wait for approval like `.mcp.json`'s) is
//! decided where the servers are gathered (`supervisor::mcp_sources`).

use serde_norway::Value;

use crate::domain::text::quote;
use crate::mcp::{ServerDef, ServerName, parse_json_server};

/// What a type's `mcpServers` says.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TypeMcp {
    /// Servers the type defines, in its order.
    pub inline: Vec<ServerDef>,
    /// Servers it names without defining them: another source's.
    pub references: Vec<ServerName>,
}

impl TypeMcp {
    pub fn is_empty(&self) -> bool {
        self.inline.is_empty() && self.references.is_empty()
    }

    /// Reads the front matter's `mcpServers` value.
    pub fn parse(value: &Value) -> Result<TypeMcp, String> {
        let mut out = TypeMcp::default();
        match value {
            Value::Null => {}
            Value::Mapping(map) => {
                for (name, def) in map {
                    out.add_inline(key_name(name)?, def)?;
                }
            }
            Value::Sequence(entries) => {
                for entry in entries {
                    out.add_entry(entry)?;
                }
            }
            _ => {
                return Err(
                    "`mcpServers` must be a list of server names and `NAME: {definition}` \
                     entries, or a mapping of definitions by name"
                        .to_string(),
                );
            }
        }
        Ok(out)
    }

    fn add_entry(&mut self, entry: &Value) -> Result<(), String> {
        match entry {
            Value::String(name) => {
                let name = ServerName::parse(name).map_err(|e| format!("`mcpServers`: {e}"))?;
                self.check_new(name.as_str())?;
                self.references.push(name);
                Ok(())
            }
            Value::Mapping(map) if map.len() == 1 => {
                let (name, def) = map.iter().next().ok_or("an empty entry")?;
                self.add_inline(key_name(name)?, def)
            }
            _ => Err(
                "`mcpServers`: each entry of the list is a server's name or one \
                 `NAME: {definition}`"
                    .to_string(),
            ),
        }
    }

    fn add_inline(&mut self, name: &str, def: &Value) -> Result<(), String> {
        let at = format!("`mcpServers`: server {:?}", quote(name));
        self.check_new(name)?;
        let json = as_json(def).map_err(|e| format!("{at}: {e}"))?;
        let def = parse_json_server(name, &json).map_err(|e| format!("{at}: {e}"))?;
        self.inline.push(def);
        Ok(())
    }

    fn check_new(&self, name: &str) -> Result<(), String> {
        let taken = self.inline.iter().any(|d| d.name.as_str() == name)
            || self.references.iter().any(|r| r.as_str() == name);
        if taken {
            return Err(format!(
                "`mcpServers`: server {:?} is given twice",
                quote(name)
            ));
        }
        Ok(())
    }
}

fn key_name(key: &Value) -> Result<&str, String> {
    key.as_str()
        .ok_or_else(|| "`mcpServers`: a server's name must be a string".to_string())
}

/// A definition as the JSON `.mcp.json` would hold, with Gemini's `httpUrl`
/// made Claude Code's `type: http` + `url`.
fn as_json(def: &Value) -> Result<serde_json::Value, String> {
    let mut json =
        serde_json::to_value(def).map_err(|e| format!("it cannot be read as a definition: {e}"))?;
    let Some(object) = json.as_object_mut() else {
        return Err(
            "a definition is a mapping (`command` and `args`, or `type: http` and `url`)"
                .to_string(),
        );
    };
    if let Some(url) = object.remove("httpUrl") {
        if object.contains_key("url") || object.contains_key("type") {
            return Err("give `httpUrl` alone, or `type: http` with `url`".to_string());
        }
        object.insert("type".into(), "http".into());
        object.insert("url".into(), url);
    }
    Ok(json)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::Transport;

    fn parse(yaml: &str) -> Result<TypeMcp, String> {
        let value: Value = serde_norway::from_str(yaml).unwrap();
        TypeMcp::parse(&value)
    }

    fn names(defs: &[ServerDef]) -> Vec<&str> {
        defs.iter().map(|d| d.name.as_str()).collect()
    }

    #[test]
    fn claude_codes_list_holds_references_and_definitions() {
        let mcp = parse(
            "- github\n- playwright:\n    type: stdio\n    command: npx\n    args: [\"-y\", \"@playwright/mcp\"]\n- docs:\n    type: http\n    url: https://example.com/mcp\n    headers: {Authorization: Bearer x}\n",
        )
        .unwrap();
        assert_eq!(mcp.references, [ServerName::parse("github").unwrap()]);
        assert_eq!(names(&mcp.inline), ["playwright", "docs"]);
        match &mcp.inline[0].transport {
            Transport::Stdio { command, args, .. } => {
                assert_eq!(command, "npx");
                assert_eq!(args, &["-y", "@playwright/mcp"]);
            }
            other => panic!("{other:?}"),
        }
        match &mcp.inline[1].transport {
            Transport::Http { url, headers } => {
                assert_eq!(url, "https://example.com/mcp");
                assert_eq!(headers["Authorization"], "Bearer x");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_mapping_by_name_is_read_and_gemini_http_url_is_http() {
        let mcp = parse(
            "local:\n  command: ./server\n  env: {TOKEN: t}\nremote:\n  httpUrl: http://127.0.0.1:9/mcp\n",
        )
        .unwrap();
        assert!(mcp.references.is_empty());
        assert_eq!(names(&mcp.inline), ["local", "remote"]);
        assert!(
            matches!(&mcp.inline[1].transport, Transport::Http { url, .. } if url == "http://127.0.0.1:9/mcp")
        );
        assert!(parse("~").unwrap().is_empty());
    }

    #[test]
    fn what_agentd_would_not_do_is_refused_with_the_servers_name() {
        for (yaml, says) in [
            (
                "- x:\n    command: a\n    sandbox: off\n",
                "unknown field `sandbox`",
            ),
            ("- x:\n    type: sse\n    url: http://h/\n", "SSE"),
            ("- x:\n    url: http://h/\n", "\"type\": \"http\""),
            (
                "- x:\n    httpUrl: http://h/\n    type: http\n",
                "`httpUrl` alone",
            ),
            ("- x: just-a-string\n", "a mapping"),
            ("- x\n- x\n", "given twice"),
            ("- x\n- x:\n    command: a\n", "given twice"),
            ("- \"bad name\"\n", "use only letters"),
            (
                "- {a: {command: x}, b: {command: y}}\n",
                "one `NAME: {definition}`",
            ),
            ("42\n", "must be a list"),
            ("- x:\n    command: a\n    args: [1]\n", "server \"x\""),
        ] {
            let err = parse(yaml).unwrap_err();
            assert!(err.contains(says), "{yaml:?}: {err}");
        }
    }
}
