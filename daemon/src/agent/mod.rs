//! One agent's work: the context it is created with, its type, the tools
//! that reach other agents, and the turn loop that runs it.

pub mod context;
pub mod orchestration;
pub mod turn_loop;
pub mod types;

pub use turn_loop::{Finished, Outcome, StopSignals, TurnLoop};
