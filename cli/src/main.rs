//! `agentctl`: the command-line client of agentd. A thin shell over the v1
//! API; every decision about agents is the daemon's.

mod acp;
mod autostart;
mod color;
mod commands;
mod cost;
mod exit;
mod follow;
mod list_json;
mod permission_prompt;
mod process;
mod render;
mod sandbox_view;
mod systemctl;
mod terminal;
mod transcript_view;
mod tree;
mod units;
mod worktree_view;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use exit::Failure;

/// Find, watch, steer and run AI coding agents supervised by agentd.
#[derive(Debug, Parser)]
#[command(name = "agentctl", version, propagate_version = true)]
pub struct Cli {
    /// Socket of the daemon [default: $AGENTD_SOCKET, $XDG_RUNTIME_DIR/agentd/agentd.sock, /tmp/agentd-<uid>/agentd.sock]
    #[arg(long, global = true)]
    socket: Option<PathBuf>,
    /// Data directory passed to an autostarted daemon [default: $AGENTD_DATA_DIR, $XDG_STATE_HOME/agentd]
    #[arg(long, global = true, hide = true)]
    data_dir: Option<PathBuf>,
    /// Fail with exit code 3 instead of starting agentd when none answers.
    #[arg(long, global = true)]
    no_autostart: bool,
    /// Colour: auto (on a terminal, unless NO_COLOR is set), always, never.
    #[arg(long, global = true, value_enum, default_value_t = color::ColorChoice::Auto)]
    color: color::ColorChoice,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
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
    /// Follow lifecycle events of all agents (created, status, notifications).
    Events(commands::events::Args),
    /// What agents cost: tokens, requests and USD, with what the prompt cache saved.
    Usage(commands::usage::Args),
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

/// Restores the default SIGPIPE action, so `agentctl log … | head` ends
/// quietly like any Unix tool instead of failing on a closed pipe — except
/// for the commands that stop the daemon: its socket closes under their
/// connection, and a write there must be an error, not a silent death.
#[allow(unsafe_code)]
fn sigpipe_for(command: &Command) {
    use nix::sys::signal::{SigHandler, Signal, signal};
    let handler = match command {
        // acp: an editor that closes its end is handled, not a signal.
        Command::Daemon(_) | Command::Service(_) | Command::Acp(_) => SigHandler::SigIgn,
        _ => SigHandler::SigDfl,
    };
    // SAFETY: called in main before any thread exists; neither disposition
    // installs handler code.
    let _ = unsafe { signal(Signal::SIGPIPE, handler) };
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    sigpipe_for(&cli.command);
    color::init(cli.color);
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("agentctl: cannot start the runtime: {e}");
            return ExitCode::from(exit::FAILURE);
        }
    };
    match runtime.block_on(dispatch(cli)) {
        Ok(code) => ExitCode::from(code),
        Err(Failure { code, message }) => {
            if !message.is_empty() {
                eprintln!("agentctl: {message}");
            }
            ExitCode::from(code)
        }
    }
}

async fn dispatch(cli: Cli) -> Result<u8, Failure> {
    // These need no daemon.
    match cli.command {
        Command::Completions(args) => return commands::completions::run(args),
        Command::Man(args) => return commands::man::run(args),
        _ => {}
    }
    let target = autostart::Target::new(
        cli.socket.as_deref(),
        cli.data_dir.as_deref(),
        !cli.no_autostart,
    );
    match cli.command {
        Command::Run(args) => commands::run::run(&target, args).await,
        Command::Fork(args) => commands::fork::run(&target, args).await,
        Command::List(args) => commands::list::run(&target, args).await,
        Command::Show(args) => commands::show::run(&target, args).await,
        Command::Log(args) => commands::log::run(&target, args).await,
        Command::Attach(args) => commands::attach::run(&target, args).await,
        Command::Wait(args) => commands::wait::run(&target, args).await,
        Command::Stop(args) => commands::stop::run(&target, args).await,
        Command::Send(args) => commands::send::run(&target, args).await,
        Command::Pause(args) => commands::pause::run(&target, args).await,
        Command::Interrupt(args) => commands::interrupt::run(&target, args).await,
        Command::Bg(args) => commands::bg::run(&target, args).await,
        Command::Rm(args) => commands::rm::run(&target, args).await,
        Command::Worktrees(args) => commands::worktrees::run(&target, args).await,
        Command::Diff(args) => commands::diff::run(&target, args).await,
        Command::Merge(args) => commands::merge::run(&target, args).await,
        Command::Events(args) => commands::events::run(&target, args).await,
        Command::Status(args) => commands::status::run(&target, args).await,
        Command::Doctor(args) => commands::doctor::run(&target, args).await,
        Command::Usage(args) => commands::usage::run(&target, args).await,
        Command::Config(args) => commands::config::run(&target, args).await,
        Command::Daemon(args) => commands::daemon::run(&target, args).await,
        Command::Service(args) => commands::service::run(&target, args).await,
        Command::Acp(args) => acp::run(&target, args).await,
        Command::Completions(_) | Command::Man(_) => unreachable!("dispatched above"),
    }
}
