//! The daemon's MCP client (DESIGN §18): agents use the Model Context
//! Protocol servers people already run, through rmcp, the official Rust SDK.
//! This module does no protocol work of its own; it owns what agentd adds:
//!
//! - `def`: a server definition, checked, stored with an agent as JSON and
//!   fingerprinted for approvals; `sources` reads them from config.toml's
//!   `[mcp_servers.NAME]` and a repository's `.mcp.json`.
//! - `repository`: finding a repository's `.mcp.json` and reading it as a
//!   file a stranger may have written (its servers run only once approved).
//! - `naming`: the wire names `mcp__<server>__<tool>` the model sees.
//! - `tool`: a listed tool as an entry of the Anthropic tools array.
//! - `session`: one live connection (stdio pipes or streamable HTTP), with
//!   startup and call timeouts and cancellation.
//! - `result`: a call's result as `tool_result` content, capped like Bash's.
//! - `error`: what can go wrong, in words a model can act on.
//! - `setup`: which servers an agent gets (config.toml's, then its creation
//!   request's) and their tools, as frozen at its creation.
//! - `live`: one running server — started under the agent's sandbox, its
//!   tools listed at an agent's creation, ended gracefully; `pool`: servers
//!   shared between running agents; `servers`: the servers of one run,
//!   started when a call first needs them.

pub mod def;
pub mod error;
pub mod live;
pub mod naming;
pub mod pool;
pub mod repository;
pub mod result;
pub mod servers;
pub mod session;
pub mod setup;
pub mod sources;
pub mod tool;

pub use def::{SandboxChoice, ServerDef, ServerName, Transport};
pub use error::McpError;
pub use naming::{dedup, wire_name};
pub use repository::RepoServers;
pub use result::{CallOutput, cap};
pub use session::Session;
pub use setup::Setup;
pub use sources::{
    deserialize_toml_servers, parse_json_server, parse_mcp_json, parse_mcp_json_each,
    parse_toml_server, parse_toml_servers,
};
pub use tool::{ToolDecl, dedup_wire_names};
