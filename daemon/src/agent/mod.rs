//! One agent's work: the context it is created with and the turn loop that
//! runs it.

pub mod context;
pub mod turn_loop;

pub use turn_loop::{StopSignals, TurnLoop};
