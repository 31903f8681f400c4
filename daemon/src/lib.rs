//! agentd: a per-user supervisor for AI coding agents.
//!
//! The daemon owns every agent's life: its record ([`store`]), its
//! transcript, its model connection ([`model`]) and tools ([`tools`]), and
//! runs its turn loop ([`agent`]). The [`supervisor`] keeps the live agents;
//! the [`server`] exposes them over gRPC on a Unix socket.

pub mod acp_client;
pub mod agent;
pub mod config;
pub use agentd_domain as domain;
pub mod error;
pub mod logging;
pub mod mcp;
pub use agentd_model as model;
pub mod pricing;
pub use agentd_sandbox as sandbox;
pub use agentd_sandbox::{beneath, network, process, umask};
pub mod server;
pub use agentd_store as store;
pub use agentd_store::memory;
pub mod supervisor;
pub use agentd_tools as tools;
pub use agentd_worktree as worktree;
