//! agentd: a per-user supervisor for AI coding agents.
//!
//! The daemon owns every agent's life: its record ([`store`]), its
//! transcript, its model connection ([`model`]) and tools ([`tools`]), and
//! runs its turn loop ([`agent`]). The [`supervisor`] keeps the live agents;
//! the [`server`] exposes them over gRPC on a Unix socket.

pub mod acp_client;
pub mod agent;
pub mod beneath;
pub mod config;
pub mod domain;
pub mod error;
pub mod logging;
pub mod mcp;
pub mod memory;
pub mod model;
pub mod network;
pub mod pricing;
pub mod process;
pub mod sandbox;
pub mod server;
pub mod store;
pub mod supervisor;
pub mod tools;
pub mod umask;
pub mod worktree;
