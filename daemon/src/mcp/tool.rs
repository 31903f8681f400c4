//! A server's tool as an agent offers it to the model: the server's own name
//! (for `tools/call`), the wire name the model sees, and the schema as the
//! server gave it.

use serde_json::{Value, json};

use super::def::ServerName;
use super::naming::{dedup, wire_name};

/// One tool of one server.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolDecl {
    pub server: ServerName,
    /// The server's own name for the tool, sent in `tools/call`.
    pub name: String,
    /// What the model calls it: `mcp__<server>__<tool>` (see `naming`).
    pub wire_name: String,
    pub description: String,
    /// The server's `inputSchema` object, as given.
    pub input_schema: Value,
    /// The server marks the tool read-only (`annotations.readOnlyHint`).
    /// A hint from the server, used only to skip the permission ask.
    pub read_only: bool,
}

impl ToolDecl {
    /// The declaration from rmcp's listing. The description is the tool's
    /// own, or its title when it has none.
    pub fn from_listed(server: &ServerName, tool: rmcp::model::Tool) -> ToolDecl {
        let description = tool
            .description
            .map(|d| d.into_owned())
            .filter(|d| !d.trim().is_empty())
            .or(tool.title)
            .unwrap_or_default();
        let read_only = tool
            .annotations
            .as_ref()
            .and_then(|a| a.read_only_hint)
            .unwrap_or(false);
        ToolDecl {
            server: server.clone(),
            wire_name: wire_name(server, &tool.name),
            name: tool.name.into_owned(),
            description,
            input_schema: Value::Object((*tool.input_schema).clone()),
            read_only,
        }
    }

    /// The entry of the Anthropic `tools` array. A schema without `"type"`
    /// (MCP requires `"object"`; a few servers leave it out) is sent with
    /// `"type": "object"`, which the API insists on: one careless server
    /// must not make every request of the agent fail.
    pub fn spec_json(&self) -> Value {
        let mut schema = self.input_schema.clone();
        if let Value::Object(map) = &mut schema
            && !map.contains_key("type")
        {
            map.insert("type".to_string(), json!("object"));
        }
        json!({
            "name": self.wire_name,
            "description": self.description,
            "input_schema": schema,
        })
    }
}

/// Makes the wire names of `decls` unique, in order (see [`dedup`]); for a
/// caller joining the tools of several servers.
pub fn dedup_wire_names(decls: &mut [ToolDecl]) {
    let names = dedup(decls.iter().map(|d| d.wire_name.clone()).collect());
    for (decl, name) in decls.iter_mut().zip(names) {
        decl.wire_name = name;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listed(tool: Value) -> ToolDecl {
        let server = ServerName::parse("srv").unwrap();
        ToolDecl::from_listed(&server, serde_json::from_value(tool).unwrap())
    }

    #[test]
    fn listed_tool_becomes_an_anthropic_tool_spec() {
        let decl = listed(json!({
            "name": "read.file",
            "description": "Reads a file.",
            "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}},
            "annotations": {"readOnlyHint": true}
        }));
        assert_eq!(decl.name, "read.file");
        assert_eq!(decl.wire_name, "mcp__srv__read_file");
        assert!(decl.read_only);
        assert_eq!(
            decl.spec_json(),
            json!({
                "name": "mcp__srv__read_file",
                "description": "Reads a file.",
                "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}
            })
        );
    }

    #[test]
    fn schema_without_a_type_is_sent_as_an_object() {
        let decl = listed(json!({"name": "a", "inputSchema": {"properties": {}}}));
        assert_eq!(decl.input_schema, json!({"properties": {}}));
        assert_eq!(
            decl.spec_json()["input_schema"],
            json!({"properties": {}, "type": "object"})
        );
    }

    #[test]
    fn read_only_needs_the_hint_set_to_true() {
        let schema = json!({"type": "object"});
        let no_hint = listed(json!({"name": "a", "inputSchema": schema}));
        assert!(!no_hint.read_only);
        let hint_false = listed(
            json!({"name": "a", "inputSchema": schema, "annotations": {"readOnlyHint": false}}),
        );
        assert!(!hint_false.read_only);
        let other_hints = listed(
            json!({"name": "a", "inputSchema": schema, "annotations": {"destructiveHint": false}}),
        );
        assert!(!other_hints.read_only);
    }

    #[test]
    fn missing_description_falls_back_to_the_title() {
        let schema = json!({"type": "object"});
        let titled = listed(json!({"name": "a", "title": "Tool A", "inputSchema": schema}));
        assert_eq!(titled.description, "Tool A");
        let bare = listed(json!({"name": "a", "inputSchema": schema}));
        assert_eq!(bare.description, "");
    }

    #[test]
    fn joined_lists_get_unique_wire_names() {
        let schema = json!({"type": "object"});
        let mut decls = vec![
            listed(json!({"name": "a.b", "inputSchema": schema})),
            listed(json!({"name": "a_b", "inputSchema": schema})),
        ];
        dedup_wire_names(&mut decls);
        assert_eq!(decls[0].wire_name, "mcp__srv__a_b");
        assert_eq!(decls[1].wire_name, "mcp__srv__a_b_2");
        assert_eq!(decls[1].name, "a_b");
    }
}
