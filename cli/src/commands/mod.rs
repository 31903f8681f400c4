//! One module per `agentctl` command.

pub mod list;
pub mod log;
pub mod run;
pub mod show;
pub mod status;
pub mod stop;
pub mod wait;
