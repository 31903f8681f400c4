//! `agentctl daemon stop | restart | reload | logs [-f]`: the daemon
//! itself. Under the systemd user units these go through `systemctl
//! --user` and the journal; otherwise through the daemon's pid and the log
//! file an autostarted daemon writes. Agents that run across a restart
//! resume.

use std::io::{Read, Seek, SeekFrom, Write};
use std::time::{Duration, Instant};

use agentd_shared::proto as pb;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use crate::autostart::Target;
use crate::exit::{FAILURE, Failure, SUCCESS};
use crate::units;

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

/// How long a stopping daemon may take: its shutdown grace plus margin.
const STOP_TIMEOUT: Duration = Duration::from_secs(60);

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
    s.socket_activated && units::manager_runs()
}

/// The process exists and has not exited (a zombie waiting for its parent
/// to reap it has stopped serving).
fn alive(pid: Pid) -> bool {
    if kill(pid, None).is_err() {
        return false;
    }
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the parenthesised command name.
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_none_or(|state| state != "Z"),
        Err(_) => false,
    }
}

/// Sends SIGTERM to the daemon `pid` and waits until it is gone and its
/// socket no longer answers.
pub async fn terminate(pid: u32) -> Result<(), Failure> {
    let pid = Pid::from_raw(
        i32::try_from(pid).map_err(|_| Failure::failed(format!("bad daemon pid {pid}")))?,
    );
    match kill(pid, Signal::SIGTERM) {
        Ok(()) => {}
        Err(nix::Error::ESRCH) => return Ok(()),
        Err(e) => {
            return Err(Failure::failed(format!(
                "cannot signal agentd (pid {pid}): {e}"
            )));
        }
    }
    let start = Instant::now();
    while alive(pid) {
        if start.elapsed() > STOP_TIMEOUT {
            return Err(Failure::failed(format!(
                "agentd (pid {pid}) did not stop within {}s; `kill -9 {pid}` ends it (its agents resume at the next start)",
                STOP_TIMEOUT.as_secs()
            )));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(())
}

async fn stop(target: &Target) -> Result<u8, Failure> {
    let Some(s) = running_status(target).await? else {
        println!("agentd is not running");
        return Ok(SUCCESS);
    };
    if under_systemd(&s) {
        run_systemctl(&["stop", units::SERVICE_NAME])?;
        println!(
            "agentd stopped (pid {}); agentd.socket still listens and starts it for the next client",
            s.pid
        );
    } else {
        terminate(s.pid).await?;
        println!("agentd stopped (pid {})", s.pid);
    }
    Ok(SUCCESS)
}

fn run_systemctl(args: &[&str]) -> Result<(), Failure> {
    match units::systemctl(args) {
        Some((true, _)) => Ok(()),
        Some((false, text)) => Err(Failure::failed(format!(
            "systemctl --user {} failed: {text}",
            args.join(" ")
        ))),
        None => Err(Failure::failed("cannot run systemctl")),
    }
}

async fn restart(target: &Target) -> Result<u8, Failure> {
    let before = running_status(target).await?;
    if before.is_some() {
        // An invalid config.toml would keep the new daemon from starting:
        // find out while the old one still serves.
        if let Some(mut c) = target.running_client().await?
            && let Err(status) = c.reload_config(pb::ReloadConfigRequest {}).await
        {
            return Err(Failure::failed(format!(
                "not restarting: {}; fix it first (the running agentd keeps going)",
                status.message()
            )));
        }
    }
    if let Some(s) = &before {
        if under_systemd(s) {
            run_systemctl(&["restart", units::SERVICE_NAME])?;
            println!(
                "note: under systemd agentd's environment is the service manager's, not this shell's \
                 (provider keys go in ~/.config/agentd/env or config.toml)"
            );
        } else {
            terminate(s.pid).await?;
        }
    }
    let mut client = target.client().await?;
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
    match before {
        Some(old) => println!(
            "agentd restarted (pid {} → {}); {live} agent(s) running",
            old.pid, s.pid
        ),
        None => println!("agentd was not running; started it (pid {})", s.pid),
    }
    Ok(SUCCESS)
}

async fn reload(target: &Target) -> Result<u8, Failure> {
    let Some(mut client) = target.running_client().await? else {
        println!("agentd is not running; it reads config.toml when it starts");
        return Ok(SUCCESS);
    };
    let r = client
        .reload_config(pb::ReloadConfigRequest {})
        .await?
        .into_inner();
    if r.applied.is_empty() && r.needs_restart.is_empty() {
        println!("configuration reloaded: nothing changed");
    } else {
        if !r.applied.is_empty() {
            println!("in force now:     {}", r.applied.join(", "));
        }
        if !r.needs_restart.is_empty() {
            println!(
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
        None => units::installed() && units::manager_runs(),
    };
    if journal {
        let n = lines.to_string();
        let mut args = vec!["--user", "-u", units::SERVICE_NAME, "-n", n.as_str()];
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
    let mut text = String::new();
    file.read_to_string(&mut text)
        .map_err(|e| Failure::failed(format!("cannot read {}: {e}", path.display())))?;
    let all: Vec<&str> = text.lines().collect();
    let mut out = std::io::stdout().lock();
    for line in &all[all.len().saturating_sub(lines)..] {
        let _ = writeln!(out, "{line}");
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
            let _ = out.write_all(&buf);
            let _ = out.flush();
        }
    }
}
