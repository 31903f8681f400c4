//! The processes agentd starts for agents (tools, git hooks it must run,
//! sandbox keepers), below both `tools` and `worktree`: `adopt` keeps
//! them the daemon's descendants and reaps the orphans it inherits;
//! `reap` kills what a killed daemon left running.

pub mod adopt;
pub mod reap;
