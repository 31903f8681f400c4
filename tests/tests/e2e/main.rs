//! The end-to-end tests: the real `agentd` and `agentctl` against the mock
//! model, one module per behaviour, linked into one test binary: as 29
//! binaries they took 435 MiB and half again the link time (BENCHMARKS.md).
//! The tests share this process, so none may change its state
//! (environment, umask, working directory, signal dispositions): a daemon
//! gets its settings through `Env`.
//!
//! One module's tests: `cargo test --test e2e race::`; one test:
//! `cargo test --test e2e -- --exact race::backgrounding_at_random_points_never_disturbs_the_child`.
//! `tests/torture.rs` stays a binary of its own: its runs want the machine
//! to themselves.

mod acp;
mod agent_messages;
mod attach;
mod attach_half_close;
mod bad_input;
mod budgets;
mod checkpoints;
mod claude_code_probe;
mod cli_extras;
mod compaction;
mod containment;
mod disk_full;
mod documented_codes;
mod durability;
mod events;
mod external;
mod family_limits;
mod fork_rules;
mod forks;
mod fuzz_api;
mod git_quarantine;
mod grpc_wire;
mod guardrails;
mod hooks;
mod hostile_repo;
mod hostile_text;
mod instructions;
mod interop;
mod interrupt;
mod mcp;
mod merge_kill;
mod moved_checkout;
mod network;
mod permissions;
mod plans;
mod providers;
mod race;
mod run;
mod sandbox;
mod secrets;
mod security;
mod service;
mod socket;
mod supervision;
mod ui;
mod usage;
mod watch_buffer;
mod worktree_agents;
mod worktrees;
