//! `agentd`: the per-user agent supervisor daemon.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;

use agentd::config::Config;
use agentd::server::{ServeOptions, serve};
use agentd_shared::paths;

/// The agentd daemon: owns every agent, its transcript, tools and model
/// connection, and serves agentctl over a Unix socket.
#[derive(Debug, Parser)]
#[command(name = "agentd", version)]
struct Args {
    /// Socket path [default: $AGENTD_SOCKET, $XDG_RUNTIME_DIR/agentd/agentd.sock, /tmp/agentd-<uid>/agentd.sock]
    #[arg(long)]
    socket: Option<PathBuf>,
    /// Data directory [default: $AGENTD_DATA_DIR, $XDG_STATE_HOME/agentd]
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// Config file [default: $XDG_CONFIG_HOME/agentd/config.toml]
    #[arg(long)]
    config: Option<PathBuf>,
}

fn init_logging() {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    // Under journald (JOURNAL_STREAM is set), the journal adds timestamps.
    let under_journal = std::env::var_os("JOURNAL_STREAM").is_some();
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false);
    if under_journal {
        builder.without_time().init();
    } else {
        builder.init();
    }
}

fn main() -> ExitCode {
    let args = Args::parse();
    init_logging();
    let config_path = args.config.unwrap_or_else(paths::config_file);
    let config = match Config::load(&config_path) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("agentd: {e:#}");
            return ExitCode::FAILURE;
        }
    };
    let opts = ServeOptions {
        socket: paths::absolute(&paths::socket_path(args.socket.as_deref())),
        data_dir: paths::absolute(&paths::data_dir(args.data_dir.as_deref())),
        config,
    };
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("agentd: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(serve(opts)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("{e:#}");
            eprintln!("agentd: {e:#}");
            ExitCode::FAILURE
        }
    }
}
