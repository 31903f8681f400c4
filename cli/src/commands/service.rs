//! `agentctl service install [--now] [--force] | uninstall | status`:
//! agentd as a systemd user service started by its socket. Where no user
//! service manager runs (a container, a CI box), the files are still
//! written and the exact commands to run are printed.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::autostart::{self, Target};
use crate::exit::{FAILURE, Failure, SUCCESS};
use crate::{process, systemctl, systemd_units};

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    action: Action,
}

#[derive(Debug, clap::Subcommand)]
enum Action {
    /// Write agentd.socket and agentd.service to the user unit directory and enable the socket.
    Install {
        /// Also start the socket now (stopping an autostarted agentd first; its agents resume).
        #[arg(long)]
        now: bool,
        /// Replace unit files that exist and differ.
        #[arg(long)]
        force: bool,
    },
    /// Disable and stop the units, then remove their files.
    Uninstall,
    /// Whether the units are installed, enabled and active, and who serves the socket.
    Status,
}

pub async fn run(target: &Target, args: Args) -> Result<u8, Failure> {
    match args.action {
        Action::Install { now, force } => install(target, now, force).await,
        Action::Uninstall => uninstall(),
        Action::Status => status(target).await,
    }
}

/// The binaries the units run: agentd (beside agentctl or on PATH) and
/// this agentctl, both absolute.
fn binaries() -> Result<(PathBuf, PathBuf), Failure> {
    let agentd = autostart::find_daemon().ok_or_else(|| {
        Failure::failed(
            "cannot find agentd next to agentctl or in an absolute PATH directory (an executable \
             file owned by you or root that no one else can write); install it first",
        )
    })?;
    let agentctl = std::env::current_exe()
        .and_then(|p| p.canonicalize())
        .map_err(|e| Failure::failed(format!("cannot tell where this agentctl is: {e}")))?;
    Ok((agentd, agentctl))
}

/// Writes `text` to `path` through a temporary file of its own, synced
/// before it takes the name.
fn write_atomically(path: &Path, text: &str) -> Result<(), Failure> {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("unit");
    let tmp = path.with_file_name(format!(".{name}.agentctl-new"));
    let written = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(text.as_bytes())?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    written.map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        Failure::failed(format!("cannot write {}: {e}", path.display()))
    })
}

/// Runs `systemctl --user ARGS`, printing it.
fn announce(args: &[&str]) -> Result<(), Failure> {
    say!("$ systemctl --user {}", args.join(" "));
    systemctl::must(args).map_err(Failure::failed)
}

async fn install(target: &Target, now: bool, force: bool) -> Result<u8, Failure> {
    let (agentd, agentctl) = binaries()?;
    let files = systemd_units::render(&agentd, &agentctl).map_err(Failure::failed)?;
    let dir = systemd_units::user_unit_dir();
    // Refuse before writing anything: both files or neither.
    let mut differing = String::new();
    let mut unchanged = 0;
    for (name, text) in &files {
        match std::fs::read_to_string(dir.join(name)) {
            Ok(old) if old == *text => unchanged += 1,
            Ok(old) => differing.push_str(&format!(
                "--- {}\n{}",
                dir.join(name).display(),
                systemd_units::diff(&old, text)
            )),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                return Err(Failure::failed(format!(
                    "cannot read {}: {e}",
                    dir.join(name).display()
                )));
            }
        }
    }
    if !differing.is_empty() && !force {
        print!("{differing}");
        return Err(Failure::failed(format!(
            "unit files in {} exist and differ from what would be installed (above); \
             rerun with --force to replace them",
            dir.display()
        )));
    }
    if now && systemd_units::unit_socket().as_deref() != Some(target.socket.as_path()) {
        return Err(Failure::failed(format!(
            "the units listen on $XDG_RUNTIME_DIR/agentd/agentd.sock, but this agentctl uses {}; \
             --now works with the default socket only (unset AGENTD_SOCKET and --socket)",
            target.socket.display()
        )));
    }
    if unchanged == files.len() {
        say!("units already installed in {}, unchanged", dir.display());
    } else {
        std::fs::create_dir_all(&dir)
            .map_err(|e| Failure::failed(format!("cannot create {}: {e}", dir.display())))?;
        for (name, text) in &files {
            write_atomically(&dir.join(name), text)?;
            say!("wrote {}", dir.join(name).display());
        }
    }
    say!("ExecStart: {}", agentd.display());

    let enable: &[&str] = if now {
        &["enable", "--now", systemd_units::SOCKET_NAME]
    } else {
        &["enable", systemd_units::SOCKET_NAME]
    };
    if !systemctl::manager_runs() {
        say!("no user service manager answers here (systemctl --user); run these where one does:");
        say!("  systemctl --user daemon-reload");
        say!("  systemctl --user {}", enable.join(" "));
        return Ok(SUCCESS);
    }
    if now {
        // A daemon agentctl started itself holds the socket's path: stop
        // it (its agents resume under the service) so the socket can bind.
        if let Some(mut client) = target.running_client().await? {
            let s = client
                .get_status(agentd_shared::proto::GetStatusRequest {})
                .await?
                .into_inner();
            if !s.socket_activated {
                say!(
                    "stopping the agentd agentctl started (pid {}) so the socket unit can take over",
                    s.pid
                );
                process::terminate(s.pid, super::daemon::stop_limit(&mut client).await)
                    .await
                    .map_err(Failure::failed)?;
            }
        }
    }
    announce(&["daemon-reload"])?;
    announce(enable)?;
    if now {
        say!("agentd.socket is listening; the first client starts agentd.service");
    } else {
        say!(
            "agentd.socket starts at your next login (or now: systemctl --user start agentd.socket)"
        );
    }
    Ok(SUCCESS)
}

fn uninstall() -> Result<u8, Failure> {
    let dir = systemd_units::user_unit_dir();
    let manager = systemctl::manager_runs();
    if manager && systemd_units::installed() {
        announce(&[
            "disable",
            "--now",
            systemd_units::SOCKET_NAME,
            systemd_units::SERVICE_NAME,
        ])?;
    }
    let mut removed = 0;
    for name in [systemd_units::SOCKET_NAME, systemd_units::SERVICE_NAME] {
        let path = dir.join(name);
        match std::fs::remove_file(&path) {
            Ok(()) => {
                say!("removed {}", path.display());
                removed += 1;
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                return Err(Failure::failed(format!(
                    "cannot remove {}: {e}",
                    path.display()
                )));
            }
        }
    }
    if removed == 0 {
        say!("no agentd units in {}", dir.display());
    } else if manager {
        announce(&["daemon-reload"])?;
    } else {
        say!("no user service manager answers here; where one runs, also run:");
        say!(
            "  systemctl --user disable --now {} {}",
            systemd_units::SOCKET_NAME,
            systemd_units::SERVICE_NAME
        );
        say!("  systemctl --user daemon-reload");
    }
    Ok(SUCCESS)
}

async fn status(target: &Target) -> Result<u8, Failure> {
    let dir = systemd_units::user_unit_dir();
    let installed = systemd_units::installed();
    say!(
        "units:    {} ({})",
        if installed {
            "installed"
        } else {
            "not installed"
        },
        dir.display()
    );
    if installed
        && let Ok((agentd, agentctl)) = binaries()
        && let Ok(files) = systemd_units::render(&agentd, &agentctl)
    {
        for (name, text) in files {
            if std::fs::read_to_string(dir.join(name)).is_ok_and(|old| old != text) {
                say!(
                    "          {name} differs from what this agentctl installs (service install --force updates it)"
                );
            }
        }
    }
    if systemctl::manager_runs() {
        for unit in [systemd_units::SOCKET_NAME, systemd_units::SERVICE_NAME] {
            say!(
                "{unit}: {}, {}",
                if systemctl::enabled(unit) {
                    "enabled"
                } else {
                    "not enabled"
                },
                systemctl::activity(unit)
            );
        }
    } else {
        say!("manager:  no user service manager answers (systemctl --user)");
    }
    match target.running_client().await? {
        Some(mut client) => {
            let s = client
                .get_status(agentd_shared::proto::GetStatusRequest {})
                .await?
                .into_inner();
            say!(
                "daemon:   running, pid {}, {}",
                s.pid,
                if s.socket_activated {
                    "started by its socket unit"
                } else {
                    "started by agentctl or by hand"
                }
            );
        }
        None => say!("daemon:   not running"),
    }
    Ok(if installed { SUCCESS } else { FAILURE })
}
