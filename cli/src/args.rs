//! The command line as clap parses it: the global options and one
//! variant per command, each with the `Args` of its module in `commands/`.
//! Kept apart from `main` so that `completions` and `man` can be handed the
//! whole definition without importing the program that dispatches them.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

use crate::view::color;
use crate::{acp, commands, ui};

/// Find, watch, steer and run AI coding agents supervised by agentd.
#[derive(Debug, Parser)]
#[command(name = "agentctl", version, propagate_version = true)]
pub struct Cli {
    /// Socket of the daemon [default: $AGENTD_SOCKET, $XDG_RUNTIME_DIR/agentd/agentd.sock, /tmp/agentd-<uid>/agentd.sock]
    #[arg(long, global = true)]
    pub socket: Option<PathBuf>,
    /// Data directory passed to an autostarted daemon [default: $AGENTD_DATA_DIR, $XDG_STATE_HOME/agentd]
    #[arg(long, global = true, hide = true)]
    pub data_dir: Option<PathBuf>,
    /// Fail with exit code 3 instead of starting agentd when none answers.
    #[arg(long, global = true)]
    pub no_autostart: bool,
    /// Colour: auto (on a terminal, unless NO_COLOR is set), always, never.
    #[arg(long, global = true, value_enum, default_value_t = color::ColorChoice::Auto)]
    pub color: color::ColorChoice,
    #[command(subcommand)]
    pub command: Command,
}

/// The commands; each variant's doc is its one-line help.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Start an agent on a prompt; stream its output until it ends.
    Run(commands::run::Args),
    /// Fork an agent: a child with its whole context (cache-warm) working on a directive.
    Fork(commands::fork::Args),
    /// List agents (live ones and those that ended in the last day).
    List(commands::list::Args),
    /// Show one agent.
    Show(commands::show::Args),
    /// Print an agent's transcript.
    Log(commands::log::Args),
    /// Follow an agent: recent history, then live output (Ctrl-B background, Ctrl-D detach, Ctrl-C cancel).
    Attach(commands::attach::Args),
    /// Wait for an agent to end: exit 0 if it completed, 1 if not, 124 on timeout.
    Wait(commands::wait::Args),
    /// Cancel an agent and all of its subagents.
    Stop(commands::stop::Args),
    /// Message an agent: queued if it runs, revives it if it is idle.
    Send(commands::send::Args),
    /// Pause an agent at its next safe point (continue it with send).
    Pause(commands::pause::Args),
    /// Compact an agent's context now: the model summarises the conversation, and its later requests start from the summary (the history stays in `log`).
    Compact(commands::compact::Args),
    /// Stop an agent now (the model call or tool in flight is aborted), leaving it paused; send continues it.
    Interrupt(commands::interrupt::Args),
    /// Move a foreground agent to the background; it keeps running.
    Bg(commands::bg::Args),
    /// Remove an agent's record and transcript (and its worktree if it holds no work).
    Rm(commands::rm::Args),
    /// List agentd's git worktrees (agent, branch, base, state); `prune` removes orphans without work.
    Worktrees(commands::worktrees::Args),
    /// Show an agent's change against its worktree's base (committed, uncommitted and untracked).
    Diff(commands::diff::Args),
    /// Merge an agent's branch into the checkout its worktree came from (only a clean checkout).
    Merge(commands::merge::Args),
    /// An agent's user turns with their checkpoints: its workspace as each turn began, however it was changed.
    Checkpoints(commands::checkpoints::Args),
    /// Put an agent back to how things were when a turn began: its files, its conversation, or both.
    Rewind(commands::rewind::Args),
    /// The permission rules (Claude Code's settings.json syntax) an agent started here is put to.
    Rules(commands::rules::Args),
    /// Show, set, raise or remove the cap on what an agent and every descendant spend.
    Budget(commands::budget::Args),
    /// A terminal dashboard: every agent as a tree, the selected one's live output, keys to steer them (see --help for the keys).
    Ui(ui::Args),
    /// Follow lifecycle events of all agents (created, status, notifications).
    Events(commands::events::Args),
    /// What agents cost: tokens, requests and USD, with what the prompt cache saved.
    Usage(commands::usage::Args),
    /// The MCP servers agents get: `list` starts each and shows its tools; `approve` lets a repository's .mcp.json servers run.
    Mcp(commands::mcp::Args),
    /// An agent's connections through its network proxy, each allowed or refused and why; `network defaults`: the hosts allowed without asking.
    Network(commands::network::Args),
    /// Show the daemon's version, socket, data directory, uptime and agent counts.
    Status(commands::status::Args),
    /// Check what this machine offers agentd: the daemon, Landlock (the tool sandbox), git.
    Doctor(commands::doctor::Args),
    /// The configuration in force, with where each value came from.
    Config(commands::config::Args),
    /// The daemon itself: stop, restart (agents resume), reload config, logs.
    Daemon(commands::daemon::Args),
    /// agentd as a systemd user service started by its socket: install, uninstall, status.
    Service(commands::service::Args),
    /// Speak the Agent Client Protocol on stdio, for editors (Zed, JetBrains, Neovim, Emacs).
    Acp(acp::Args),
    /// Print a shell completion script (bash, zsh, fish).
    Completions(commands::completions::Args),
    /// Print the manual page (roff), or write one per command with --dir.
    Man(commands::man::Args),
}
