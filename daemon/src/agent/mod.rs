//! One agent's work: the context it is created with, its type, its turn
//! loop, the events it publishes, and what it needs from around it.
//!
//! This layer never sees the supervisor: a loop gets a narrow [`AgentHost`]
//! for permission asks and the tools that reach other agents.

pub mod compaction;
pub mod context;
mod context_size;
mod conversation;
pub mod definitions;
pub mod external;
mod external_asks;
pub mod external_home;
pub mod external_live;
mod external_turn;
pub mod fanout;
pub mod foreground;
pub mod fork;
pub mod host;
pub mod hub;
pub mod instructions;
mod interrupted;
pub mod lifecycle;
mod mcp_call;
pub(crate) mod mcp_pool;
pub(crate) mod mcp_servers;
pub mod orchestration;
pub mod permission;
mod plan;
mod recording;
mod round;
pub mod runner;
pub mod slot;
pub mod turn_loop;
pub mod worktree_notice;

pub use definitions::{fork_profile, types};
pub use fanout::FanOutRole;
pub use foreground::{EndRoute, Foreground, Release, WaitEnd};
pub use host::{AgentHost, BoxFuture, OrchestrationCall};
pub use runner::Runner;
pub use turn_loop::{Finished, LoopSetup, RunEnd, StopSignals, TurnLoop};
