//! One module per `agentctl` command.

pub mod attach;
pub mod bg;
pub mod completions;
pub mod config;
pub mod daemon;
pub mod diff;
pub mod doctor;
pub mod events;
pub mod fork;
pub mod interrupt;
pub mod list;
pub mod log;
pub mod man;
pub mod merge;
pub mod one_shot;
pub mod pause;
pub mod rm;
pub mod run;
pub mod send;
pub mod service;
pub mod show;
pub mod status;
pub mod stop;
pub mod usage;
pub mod wait;
pub mod worktrees;
