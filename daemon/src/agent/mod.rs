//! One agent's work: the context it is created with, its type, its run
//! (a core every run has, `run`, and one of two drivers: agentd's own model
//! loop, `turn`, or an external agent over ACP, `external`, picked in
//! `runner`), the events it publishes, and what it needs from around it.
//!
//! This layer never sees the supervisor: a run gets a narrow [`AgentHost`]
//! for permission asks and the tools that reach other agents.

pub mod context;
pub mod events;
pub mod external;
pub mod fanout;
pub mod foreground;
pub mod fork;
pub mod host;
pub mod hub;
pub mod instructions;
pub mod orchestration;
pub mod permission;
pub mod run;
pub mod run_permit;
pub mod runner;
pub mod turn;
pub mod worktree_notice;

pub use fanout::FanOutRole;
pub use foreground::{EndRoute, Foreground, Release, WaitEnd};
pub use host::{AgentHost, BoxFuture, OrchestrationCall};
pub use run::{CoreSetup, Finished, RunEnd, StopSignals};
pub use runner::{RunSetup, Runner};
pub use turn::ModelSetup;
