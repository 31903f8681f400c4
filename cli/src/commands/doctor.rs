//! `agentctl doctor`: is this machine set up for agentd? One line per
//! check — ok, warn or fail — with what to do about anything not ok: the
//! daemon and its version, the socket and directories (owner, mode), the
//! provider keys (never shown), git, the kernel's Landlock (the tool
//! sandbox), the systemd user units. Exit 1 when any check fails.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

use agentd_shared::proto as pb;
use serde_json::json;

use crate::autostart::Target;
use crate::exit::{FAILURE, Failure, SUCCESS};
use crate::systemctl::{self, Activity};
use crate::systemd_units;
use crate::view::{color, sandbox};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Level {
    Ok,
    Warn,
    Fail,
}

impl Level {
    fn name(self) -> &'static str {
        match self {
            Level::Ok => "ok",
            Level::Warn => "warn",
            Level::Fail => "fail",
        }
    }
}

struct Check {
    name: &'static str,
    level: Level,
    detail: String,
    /// What to do; empty when ok.
    fix: String,
}

fn check(name: &'static str, level: Level, detail: String, fix: &str) -> Check {
    Check {
        name,
        level,
        detail,
        fix: fix.to_string(),
    }
}

/// A private path of this user: owned by us, no access for others
/// beyond `allowed` mode bits.
fn ownership(name: &'static str, path: &Path, want: u32, what_to_do: &str) -> Check {
    let me = nix::unistd::getuid().as_raw();
    match std::fs::metadata(path) {
        Ok(meta) => {
            let mode = meta.permissions().mode() & 0o777;
            let detail = format!("{} (uid {}, mode {mode:o})", path.display(), meta.uid());
            if meta.uid() != me {
                check(name, Level::Fail, detail, what_to_do)
            } else if mode & 0o077 & !want != 0 {
                check(
                    name,
                    Level::Warn,
                    detail,
                    &format!("chmod {want:o} {}", path.display()),
                )
            } else {
                check(name, Level::Ok, detail, "")
            }
        }
        Err(e) => check(
            name,
            Level::Warn,
            format!("{}: {e}", path.display()),
            "it is created when agentd first starts",
        ),
    }
}

async fn daemon_checks(target: &Target, checks: &mut Vec<Check>) -> Option<pb::DaemonStatus> {
    let mut client = match target.client().await {
        Ok(c) => c,
        Err(e) => {
            checks.push(check(
                "daemon",
                Level::Fail,
                e.message,
                "agentctl daemon logs shows why; agentd --help lists its options",
            ));
            return None;
        }
    };
    let status = match client.get_status(pb::GetStatusRequest {}).await {
        Ok(s) => s.into_inner(),
        Err(status) => {
            checks.push(check(
                "daemon",
                Level::Fail,
                format!("it answered GetStatus with an error: {}", status.message()),
                "agentctl daemon logs shows what the daemon says",
            ));
            return None;
        }
    };
    let mine = agentd_shared::VERSION;
    checks.push(if status.version == mine {
        check(
            "daemon",
            Level::Ok,
            format!("agentd {} running (pid {})", status.version, status.pid),
            "",
        )
    } else {
        check(
            "daemon",
            Level::Warn,
            format!(
                "agentd {} running (pid {}), agentctl is {mine}",
                status.version, status.pid
            ),
            "agentctl daemon restart (running agents resume)",
        )
    });
    if let Ok(config) = client.get_config(pb::GetConfigRequest {}).await {
        let config = config.into_inner();
        let keys: Vec<String> = config
            .entries
            .iter()
            .filter(|e| e.key.ends_with(".api_key") && e.value == "set")
            .map(|e| e.key.trim_end_matches(".api_key").to_string())
            .collect();
        checks.push(if keys.is_empty() {
            check(
                "provider keys",
                Level::Warn,
                "none set (only scripted models work)".into(),
                "export ANTHROPIC_API_KEY or OPENAI_API_KEY, then agentctl daemon restart \
                 (under systemd: put them in ~/.config/agentd/env)",
            )
        } else {
            check(
                "provider keys",
                Level::Ok,
                format!("set for {}", keys.join(", ")),
                "",
            )
        });
    }
    Some(status)
}

pub async fn run(target: &Target, args: Args) -> Result<u8, Failure> {
    let mut checks = Vec::new();
    let status = daemon_checks(target, &mut checks).await;
    path_checks(target, status.as_ref(), &mut checks);
    let git = git_version();
    checks.push(git_check(git.as_deref()));
    if let Some(s) = &status {
        checks.push(landlock_check(s));
        mcp_checks(target, &mut checks).await;
    }
    checks.push(units_check());
    let failed = checks.iter().any(|c| c.level == Level::Fail);
    if args.json {
        let sandbox_ok = status.as_ref().is_none_or(sandbox_usable);
        print_json(&checks, status.as_ref(), git, !failed && sandbox_ok);
    } else {
        print_text(&checks);
    }
    Ok(if failed { FAILURE } else { SUCCESS })
}

/// Each enabled MCP server (DESIGN §18): started and asked for its tools,
/// as for an agent working here; one outside the sandbox is pointed out.
async fn mcp_checks(target: &Target, checks: &mut Vec<Check>) {
    let Ok(mut client) = target.client().await else {
        return;
    };
    let cwd = crate::client_dir::client_dir();
    let servers = match client
        .list_mcp_servers(pb::ListMcpServersRequest {
            cwd,
            ..Default::default()
        })
        .await
    {
        Ok(r) => r.into_inner().servers,
        Err(status) => {
            checks.push(check(
                "mcp servers",
                Level::Warn,
                format!("could not be checked: {}", status.message()),
                "agentctl mcp list shows them",
            ));
            return;
        }
    };
    for s in servers {
        let state = pb::McpServerState::try_from(s.state).unwrap_or_default();
        let stdio = s.transport == pb::McpTransport::Stdio as i32;
        checks.push(match state {
            pb::McpServerState::Disabled => continue,
            pb::McpServerState::Unapproved => check(
                "mcp server",
                Level::Warn,
                format!("{}: the repository's .mcp.json server is not approved (not started): {}", s.name, s.target),
                "agentctl mcp approve NAME, if you trust what it runs",
            ),
            pb::McpServerState::Ready if stdio && !s.sandboxed => check(
                "mcp server",
                Level::Warn,
                format!("{}: {} tools, but it runs outside the sandbox (sandbox = \"off\")", s.name, s.tools.len()),
                "remove sandbox = \"off\" from its [mcp_servers] entry unless it must write outside the workspace",
            ),
            pb::McpServerState::Ready => check(
                "mcp server",
                Level::Ok,
                format!("{}: {} tools", s.name, s.tools.len()),
                "",
            ),
            _ => check(
                "mcp server",
                Level::Warn,
                format!("{}: {}", s.name, s.error),
                "fix its [mcp_servers] entry in config.toml (agentctl mcp list shows what runs), or set enabled = false",
            ),
        });
    }
}

/// The socket, its directory and the data directory: the daemon's if it
/// answered, else the ones this agentctl would use.
fn path_checks(target: &Target, status: Option<&pb::DaemonStatus>, checks: &mut Vec<Check>) {
    let socket = status
        .map(|s| std::path::PathBuf::from(&s.socket))
        .unwrap_or_else(|| target.socket.clone());
    checks.push(ownership(
        "socket",
        &socket,
        0o600,
        "another user owns the socket: agentctl refuses it; use a socket path of your own (--socket)",
    ));
    if let Some(dir) = socket.parent() {
        checks.push(ownership(
            "socket dir",
            dir,
            0o700,
            "another user owns the directory: use a socket path of your own (--socket)",
        ));
    }
    let data_dir = status
        .map(|s| std::path::PathBuf::from(&s.data_dir))
        .unwrap_or_else(|| target.data_dir.clone());
    checks.push(ownership(
        "data dir",
        &data_dir,
        0o700,
        "another user owns the data directory: use one of your own (AGENTD_DATA_DIR)",
    ));
}

/// `git --version`'s line, None when git does not run.
fn git_version() -> Option<String> {
    std::process::Command::new("git")
        .arg("--version")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
}

fn git_check(version: Option<&str>) -> Check {
    match version {
        Some(v) => check("git", Level::Ok, v.to_string(), ""),
        None => check(
            "git",
            Level::Warn,
            "not found".into(),
            "install git; worktrees work without it, submodules are then checked out with libgit2",
        ),
    }
}

/// Sandboxed agents can run: the default is no sandbox, or the kernel
/// confines writes (Landlock ABI 3) and commands can be contained.
fn sandbox_usable(s: &pb::DaemonStatus) -> bool {
    let default_off = s.default_sandbox == pb::SandboxMode::Off as i32;
    default_off || (s.landlock_abi >= 3 && !s.containment.is_empty())
}

fn landlock_check(s: &pb::DaemonStatus) -> Check {
    let sandbox_ok = sandbox_usable(s);
    check(
        "landlock",
        if sandbox_ok { Level::Ok } else { Level::Fail },
        format!(
            "{}; {}; sandbox {} by default{}",
            sandbox::landlock_line(s.landlock_abi),
            sandbox::containment_line(s),
            sandbox::name(s.default_sandbox),
            if sandbox_ok {
                ""
            } else {
                " — agents will be refused: this kernel cannot enforce it"
            }
        ),
        "set sandbox = \"off\" in config.toml or start agents with --sandbox off (tools then run unconfined); for containment, allow unprivileged user namespaces",
    )
}

/// agentd's systemd user units: installed, and their socket listening.
fn units_check() -> Check {
    let installed = systemd_units::installed();
    let manager = systemctl::manager_runs();
    match (installed, manager) {
        (false, _) => check(
            "systemd units",
            Level::Warn,
            "not installed (agentctl starts agentd when needed)".into(),
            "agentctl service install --now, to run agentd as a user service",
        ),
        (true, false) => check(
            "systemd units",
            Level::Warn,
            format!(
                "installed in {}, but no user service manager answers",
                systemd_units::user_unit_dir().display()
            ),
            "systemctl --user enable --now agentd.socket, where a user manager runs",
        ),
        (true, true) => {
            let active = systemctl::activity(systemd_units::SOCKET_NAME);
            let enabled = if systemctl::enabled(systemd_units::SOCKET_NAME) {
                "enabled"
            } else {
                "not enabled"
            };
            check(
                "systemd units",
                if active == Activity::Active {
                    Level::Ok
                } else {
                    Level::Warn
                },
                format!("agentd.socket {enabled}, {active}"),
                "systemctl --user enable --now agentd.socket",
            )
        }
    }
}

/// `doctor --json`: the checks and what the daemon reported, on one line.
fn print_json(checks: &[Check], status: Option<&pb::DaemonStatus>, git: Option<String>, ok: bool) {
    let list: Vec<_> = checks
        .iter()
        .map(|c| {
            json!({
                "check": c.name,
                "level": c.level.name(),
                "detail": c.detail,
                "fix": c.fix,
            })
        })
        .collect();
    crate::view::render::print_json(&json!({
        "version": status.map(|s| s.version.clone()),
        "client_version": agentd_shared::VERSION,
        "landlock_abi": status.map(|s| s.landlock_abi),
        "default_sandbox": status.map(|s| sandbox::name(s.default_sandbox)),
        "sandbox_enforceable": status
            .map(|s| s.landlock_abi >= 3 && !s.containment.is_empty()),
        "containment": status.map(|s| s.containment.clone()),
        "network_rules": status.map(|s| s.landlock_abi >= 4),
        "git": git,
        "checks": list,
        "ok": ok,
    }));
}

/// One line per check, and under each that is not ok what to do.
fn print_text(checks: &[Check]) {
    for c in checks {
        let word = match c.level {
            Level::Ok => color::green("ok  "),
            Level::Warn => color::yellow("warn"),
            Level::Fail => color::red("fail"),
        };
        say!("{word}  {:14} {}", c.name, c.detail);
        if c.level != Level::Ok && !c.fix.is_empty() {
            say!("      {:14} → {}", "", c.fix);
        }
    }
}
