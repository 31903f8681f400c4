//! agentd as an ACP **client** (DESIGN §19): the protocol spoken to
//! another coding agent that agentd supervises — Claude Code through
//! claude-agent-acp, Codex through codex-acp, Gemini CLI — over its
//! standard input and output. `rpc` is the JSON-RPC connection, `wire` the
//! messages. What the agent's updates become (transcript entries, asks) is
//! `agent::external`'s.

pub mod rpc;
pub mod wire;

pub use rpc::{CallError, Connection, Incoming, RpcError};
