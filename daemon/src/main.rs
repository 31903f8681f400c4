//! `agentd`: the per-user agent supervisor daemon.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;

use agentd::config::Config;
use agentd::sandbox::pid_namespace;
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

/// Takes the secrets out of the daemon's own environment, once they are
/// read, so that no tool can find them there: a tool's parent is this
/// process, and `/proc/<ppid>/environ` shows the environment block the
/// process started with, whatever `unsetenv` does afterwards. Their bytes
/// are overwritten in place, then the variables removed; the process is
/// made non-dumpable, so that other processes of this user cannot read its
/// memory either.
#[allow(unsafe_code)]
fn forget_secrets(names: &[String]) {
    // SAFETY: called from main before any other thread exists, so nothing
    // reads or changes the environment concurrently. `environ` is the
    // process's NULL-terminated array of NUL-terminated "NAME=value"
    // strings; only bytes of the values are written, never past their NUL.
    unsafe {
        let mut entry = nix::libc::environ;
        while !entry.is_null() && !(*entry).is_null() {
            let text = std::ffi::CStr::from_ptr(*entry).to_bytes();
            if let Some(eq) = text.iter().position(|b| *b == b'=')
                && names.iter().any(|n| n.as_bytes() == &text[..eq])
            {
                let value = (*entry).add(eq + 1);
                std::ptr::write_bytes(value, 0, text.len() - eq - 1);
            }
            entry = entry.add(1);
        }
        for name in names {
            std::env::remove_var(name);
        }
    }
    if let Err(e) = nix::sys::prctl::set_dumpable(false) {
        tracing::warn!(error = %e, "cannot make agentd non-dumpable");
    }
    // Tools' processes stay the daemon's descendants (see tools::adopt).
    if let Err(e) = agentd::process::adopt::become_subreaper() {
        tracing::warn!(error = %e, "cannot become the subreaper of tool processes");
    }
}

fn main() -> ExitCode {
    // A keeper or init of an agent's process namespace execs this binary
    // to shed the daemon's memory; it runs nothing else.
    if let Some(mode) = std::env::args()
        .nth(1)
        .as_deref()
        .and_then(pid_namespace::helper_mode)
    {
        pid_namespace::helper_main(mode);
    }
    // The daemon's own files (the store) are private from the start.
    agentd::umask::make_private();
    agentd::memory::limit_arenas();
    let args = Args::parse();
    agentd::logging::init();
    // Before any thread: these take LISTEN_* and NOTIFY_SOCKET out of the
    // environment.
    let notifier = agentd::server::notify::Notifier::take();
    let inherited = match agentd::server::activation::take() {
        Ok(i) => i,
        Err(e) => {
            tracing::error!("socket activation: {e}");
            eprintln!("agentd: socket activation: {e}");
            return ExitCode::FAILURE;
        }
    };
    let config_path = args.config.unwrap_or_else(paths::config_file);
    let config_path = paths::absolute(&config_path);
    let config = match Config::load(&config_path) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("agentd: {e:#}");
            return ExitCode::FAILURE;
        }
    };
    // The keys are read here, before any thread exists, and then forgotten
    // by the environment.
    let models = match config.model_settings() {
        Ok(m) => m,
        Err(e) => {
            eprintln!("agentd: {e}");
            return ExitCode::FAILURE;
        }
    };
    forget_secrets(&config.secret_env_names());
    // From the main thread, which lives as long as the daemon.
    if let Err(e) = pid_namespace::set_helper() {
        tracing::warn!(error = %e, "cannot open the daemon's own binary; namespace helpers stay forks of the daemon");
    }
    match pid_namespace::support() {
        Ok(mode) => tracing::info!("sandboxed commands run in {}", mode.describe()),
        Err(why) => tracing::warn!("sandboxed agents will be refused: {why}"),
    }
    let opts = ServeOptions {
        socket: paths::absolute(&paths::socket_path(args.socket.as_deref())),
        inherited,
        config_path,
        notifier,
        data_dir: paths::absolute(&paths::data_dir(args.data_dir.as_deref())),
        config,
        models,
    };
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("agentd: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let served = runtime.block_on(serve(opts));
    // A blocking call that never returns (a read the kernel does not
    // interrupt) must not keep the daemon from exiting, nor the next one
    // from taking the store.
    runtime.shutdown_timeout(std::time::Duration::from_secs(5));
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!("{e:#}");
            eprintln!("agentd: {e:#}");
            ExitCode::FAILURE
        }
    }
}
