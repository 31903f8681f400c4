//! `agentctl daemon stop | restart | reload | logs [-f]`: the daemon
//! itself. Under the systemd user units these go through `systemctl
//! --user` and the journal; otherwise through the daemon's pid and the log
//! file an autostarted daemon writes. Agents that run across a restart
//! resume.

use std::io::{Read, Seek, SeekFrom, Write};
use std::time::Duration;

use agentd_shared::proto as pb;

use crate::autostart::Target;
use crate::exit::{FAILURE, Failure, SUCCESS};
use crate::{process, systemctl, systemd_units};

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    action: Action,
}

#[derive(Debug, clap::Subcommand)]
enum Action {
    /// Stop agentd: running turns get their grace period, then stop as interrupted (they resume at the next start).
    Stop,
    /// Stop agentd and start it again (with this shell's environment, unless systemd runs it); running agents resume.
    Restart,
    /// Re-read config.toml now and say which changes took effect.
    Reload,
    /// Print the daemon's log (the journal under systemd, else agentd.log in the data directory).
    Logs {
        /// Keep printing as the log grows.
        #[arg(short, long)]
        follow: bool,
        /// Lines from the end to print first.
        #[arg(short = 'n', long, default_value_t = 200)]
        lines: usize,
    },
}

/// How long a stopping daemon may take beyond its shutdown grace.
const STOP_MARGIN: Duration = Duration::from_secs(30);

/// How long to wait for the daemon behind `client` to stop: its
/// configured shutdown grace plus a margin.
pub async fn stop_limit(client: &mut crate::autostart::Client) -> Duration {
    let grace = match client.get_config(pb::GetConfigRequest {}).await {
        Ok(r) => r
            .into_inner()
            .entries
            .iter()
            .find(|e| e.key == "shutdown_grace_secs")
            .and_then(|e| e.value.parse::<u64>().ok())
            .unwrap_or(10),
        Err(_) => 10,
    };
    Duration::from_secs(grace) + STOP_MARGIN
}

pub async fn run(target: &Target, args: Args) -> Result<u8, Failure> {
    match args.action {
        Action::Stop => stop(target).await,
        Action::Restart => restart(target).await,
        Action::Reload => reload(target).await,
        Action::Logs { follow, lines } => logs(target, follow, lines).await,
    }
}

async fn running_status(target: &Target) -> Result<Option<pb::DaemonStatus>, Failure> {
    match target.running_client().await? {
        Some(mut c) => Ok(Some(
            c.get_status(pb::GetStatusRequest {}).await?.into_inner(),
        )),
        None => Ok(None),
    }
}

/// The daemon runs under the user's service manager.
fn under_systemd(s: &pb::DaemonStatus) -> bool {
    s.socket_activated && systemctl::manager_runs()
}

async fn stop(target: &Target) -> Result<u8, Failure> {
    let Some(mut client) = target.running_client().await? else {
        say!("agentd is not running");
        return Ok(SUCCESS);
    };
    let s = client
        .get_status(pb::GetStatusRequest {})
        .await?
        .into_inner();
    if under_systemd(&s) {
        // systemctl waits for the daemon, which drains its connections
        // first: this one must not be left open meanwhile.
        drop(client);
        systemctl::must(&["stop", systemd_units::SERVICE_NAME]).map_err(Failure::failed)?;
        say!(
            "agentd stopped (pid {}); agentd.socket still listens and starts it for the next client",
            s.pid
        );
    } else {
        let limit = stop_limit(&mut client).await;
        process::terminate(s.pid, limit)
            .await
            .map_err(Failure::failed)?;
        say!("agentd stopped (pid {})", s.pid);
    }
    Ok(SUCCESS)
}

async fn restart(target: &Target) -> Result<u8, Failure> {
    let Some(mut old) = target.running_client().await? else {
        let mut client = target.client().await?;
        let s = client
            .get_status(pb::GetStatusRequest {})
            .await?
            .into_inner();
        say!("agentd was not running; started it (pid {})", s.pid);
        return Ok(SUCCESS);
    };
    // An invalid config.toml would keep the new daemon from starting:
    // find out while the old one still serves.
    if let Err(status) = old.reload_config(pb::ReloadConfigRequest {}).await {
        return Err(Failure::failed(format!(
            "not restarting: {}; fix it first (the running agentd keeps going)",
            status.message()
        )));
    }
    let before = old.get_status(pb::GetStatusRequest {}).await?.into_inner();
    // The new daemon gets the old one's data directory and config file.
    let next = target.with_daemon_paths(
        before.data_dir.clone().into(),
        before.config_path.clone().into(),
    );
    if under_systemd(&before) {
        drop(old);
        systemctl::must(&["restart", systemd_units::SERVICE_NAME]).map_err(Failure::failed)?;
        say!(
            "note: under systemd agentd's environment is the service manager's, not this shell's \
             (provider keys go in ~/.config/agentd/env or config.toml)"
        );
    } else {
        let limit = stop_limit(&mut old).await;
        drop(old);
        process::terminate(before.pid, limit)
            .await
            .map_err(Failure::failed)?;
    }
    let mut client = next.client().await?;
    let s = client
        .get_status(pb::GetStatusRequest {})
        .await?
        .into_inner();
    let live: u64 = s
        .agents
        .iter()
        .filter(|c| {
            [pb::AgentStatus::Running, pb::AgentStatus::Pending]
                .iter()
                .any(|st| *st as i32 == c.status)
        })
        .map(|c| c.count)
        .sum();
    say!(
        "agentd restarted (pid {} → {}); {live} agent(s) running",
        before.pid,
        s.pid
    );
    Ok(SUCCESS)
}

async fn reload(target: &Target) -> Result<u8, Failure> {
    let Some(mut client) = target.running_client().await? else {
        say!("agentd is not running; it reads config.toml when it starts");
        return Ok(SUCCESS);
    };
    let r = client
        .reload_config(pb::ReloadConfigRequest {})
        .await?
        .into_inner();
    if r.applied.is_empty() && r.needs_restart.is_empty() {
        say!("configuration reloaded: nothing changed");
    } else {
        if !r.applied.is_empty() {
            say!("in force now:     {}", r.applied.join(", "));
        }
        if !r.needs_restart.is_empty() {
            say!(
                "needs a restart:  {} (agentctl daemon restart)",
                r.needs_restart.join(", ")
            );
        }
    }
    Ok(SUCCESS)
}

async fn logs(target: &Target, follow: bool, lines: usize) -> Result<u8, Failure> {
    let status = running_status(target).await?;
    let journal = match &status {
        Some(s) => under_systemd(s),
        None => systemd_units::installed() && systemctl::manager_runs(),
    };
    if journal {
        let n = lines.to_string();
        let mut args = vec![
            "--user",
            "-u",
            systemd_units::SERVICE_NAME,
            "-n",
            n.as_str(),
        ];
        if follow {
            args.push("-f");
        }
        let ok = std::process::Command::new("journalctl")
            .args(&args)
            .status()
            .map_err(|e| Failure::failed(format!("cannot run journalctl: {e}")))?
            .success();
        return Ok(if ok { SUCCESS } else { FAILURE });
    }
    let data_dir = status
        .map(|s| std::path::PathBuf::from(s.data_dir))
        .unwrap_or_else(|| target.data_dir.clone());
    let path = data_dir.join("agentd.log");
    let mut file = std::fs::File::open(&path).map_err(|e| {
        Failure::failed(format!(
            "no log at {} ({e}): agentd logs there when agentctl starts it; \
             started by hand, it logs to its stderr",
            path.display()
        ))
    })?;
    // The log quotes what clients and agents sent: it is shown made
    // visible, like everything else that reaches the terminal.
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)
        .map_err(|e| Failure::failed(format!("cannot read {}: {e}", path.display())))?;
    let text = String::from_utf8_lossy(&bytes);
    let all: Vec<&str> = text.lines().collect();
    let mut out = std::io::stdout().lock();
    for line in &all[all.len().saturating_sub(lines)..] {
        let _ = writeln!(out, "{}", agentd_shared::visible::text(line));
    }
    let _ = out.flush();
    drop(out);
    if !follow {
        return Ok(SUCCESS);
    }
    let mut pos = file
        .stream_position()
        .map_err(|e| Failure::failed(e.to_string()))?;
    let mut buf = Vec::new();
    loop {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let len = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
        if len < pos {
            pos = 0; // truncated or replaced
        }
        if len > pos {
            file.seek(SeekFrom::Start(pos))
                .map_err(|e| Failure::failed(e.to_string()))?;
            buf.clear();
            file.read_to_end(&mut buf)
                .map_err(|e| Failure::failed(e.to_string()))?;
            pos += buf.len() as u64;
            let mut out = std::io::stdout().lock();
            let text = String::from_utf8_lossy(&buf);
            let _ = out.write_all(agentd_shared::visible::text(&text).as_bytes());
            let _ = out.flush();
        }
    }
}
