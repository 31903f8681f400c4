//! `agentctl`: the command-line client of agentd. A thin shell over the v1
//! API; every decision about agents is the daemon's.

#[macro_use]
mod say;

mod args;
mod commands;
mod process;

use std::process::ExitCode;

use agentctl_acp as acp;
use agentctl_core::{
    autostart, client_dir, exit, follow, permission_prompt, systemctl, systemd_units, view,
};
use agentctl_ui as ui;

use clap::{CommandFactory, Parser};

use args::{Cli, Command};
use exit::Failure;

/// Restores the default SIGPIPE action, so `agentctl log … | head` ends
/// quietly like any Unix tool instead of failing on a closed pipe — except
/// for the commands that stop the daemon: its socket closes under their
/// connection, and a write there must be an error, not a silent death.
#[allow(unsafe_code)]
fn sigpipe_for(command: &Command) {
    use nix::sys::signal::{SigHandler, Signal, signal};
    let handler = match command {
        // acp: an editor that closes its end is handled, not a signal.
        // ui: a daemon that goes away is waited for ("reconnecting"), and
        // the terminal must be given back, which a signal's death skips.
        Command::Daemon(_) | Command::Service(_) | Command::Acp(_) | Command::Ui(_) => {
            SigHandler::SigIgn
        }
        _ => SigHandler::SigDfl,
    };
    // SAFETY: called in main before any thread exists; neither disposition
    // installs handler code.
    let _ = unsafe { signal(Signal::SIGPIPE, handler) };
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    sigpipe_for(&cli.command);
    view::color::init(cli.color);
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
    let result = runtime.block_on(dispatch(cli));
    // Not a drop, which would wait for blocking reads of the terminal that
    // never return (a key reader of `attach` or `ui`): the process ends.
    runtime.shutdown_background();
    match result {
        Ok(code) => ExitCode::from(code),
        Err(Failure { code, message }) => {
            // A message may quote what was sent or what an agent chose
            // (a name, a type): made visible, lines kept.
            if !message.is_empty() {
                eprintln!("agentctl: {}", agentd_shared::visible::text(&message));
            }
            ExitCode::from(code)
        }
    }
}

async fn dispatch(cli: Cli) -> Result<u8, Failure> {
    // These need no daemon.
    match cli.command {
        Command::Completions(args) => return commands::completions::run(args, Cli::command()),
        Command::Man(args) => return commands::man::run(args, Cli::command()),
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
        Command::Compact(args) => commands::compact::run(&target, args).await,
        Command::Interrupt(args) => commands::interrupt::run(&target, args).await,
        Command::Bg(args) => commands::bg::run(&target, args).await,
        Command::Rm(args) => commands::rm::run(&target, args).await,
        Command::Worktrees(args) => commands::worktrees::run(&target, args).await,
        Command::Diff(args) => commands::diff::run(&target, args).await,
        Command::Merge(args) => commands::merge::run(&target, args).await,
        Command::Checkpoints(args) => commands::checkpoints::run(&target, args).await,
        Command::Rewind(args) => commands::rewind::run(&target, args).await,
        Command::Rules(args) => commands::rules::run(&target, args).await,
        Command::Budget(args) => commands::budget::run(&target, args).await,
        Command::Events(args) => commands::events::run(&target, args).await,
        Command::Ui(args) => ui::run(&target, args).await,
        Command::Status(args) => commands::status::run(&target, args).await,
        Command::Doctor(args) => commands::doctor::run(&target, args).await,
        Command::Usage(args) => commands::usage::run(&target, args).await,
        Command::Mcp(args) => commands::mcp::run(&target, args).await,
        Command::Network(args) => commands::network::run(&target, args).await,
        Command::Config(args) => commands::config::run(&target, args).await,
        Command::Daemon(args) => commands::daemon::run(&target, args).await,
        Command::Service(args) => commands::service::run(&target, args).await,
        Command::Acp(args) => acp::run(&target, args).await,
        Command::Completions(_) | Command::Man(_) => unreachable!("dispatched above"),
    }
}
