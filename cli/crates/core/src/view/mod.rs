//! What people see: how agents, plans, transcripts, worktrees, sandboxes and
//! costs read on a terminal and as JSON. Nothing here talks to the daemon; the
//! commands fetch, these files render.

pub mod change;
pub mod color;
pub mod cost;
pub mod list_json;
pub mod network;
pub mod outcome;
pub mod plan;
pub mod render;
pub mod rule_decision;
pub mod sandbox;
pub mod status;
pub mod transcript;
pub mod tree;
pub mod worktree;
