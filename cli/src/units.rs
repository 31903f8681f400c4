//! agentd's systemd user units as `agentctl service` writes them, and the
//! user's service manager as seen through `systemctl --user`.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The units as shipped in `systemd/`, with a placeholder `ExecStart`.
const SOCKET_UNIT: &str = include_str!("../../systemd/agentd.socket");
const SERVICE_UNIT: &str = include_str!("../../systemd/agentd.service");
const SHIPPED_EXEC_START: &str = "ExecStart=/usr/local/bin/agentd";

pub const SOCKET_NAME: &str = "agentd.socket";
pub const SERVICE_NAME: &str = "agentd.service";

/// Where user units go: `$XDG_CONFIG_HOME/systemd/user`.
pub fn user_unit_dir() -> PathBuf {
    agentd_shared::paths::config_dir()
        .parent()
        .map(|p| p.join("systemd/user"))
        .unwrap_or_else(|| PathBuf::from(".config/systemd/user"))
}

/// A path as one `ExecStart` word: `%` doubled (a specifier otherwise),
/// quoted when it holds a space.
fn exec_word(path: &Path) -> Result<String, String> {
    let s = path
        .to_str()
        .ok_or_else(|| format!("{} is not UTF-8; install agentd elsewhere", path.display()))?;
    if s.contains(['"', '\\', '\n']) {
        return Err(format!(
            "{s:?} holds a quote, backslash or newline; install agentd under a plainer path"
        ));
    }
    let s = s.replace('%', "%%");
    Ok(if s.contains(char::is_whitespace) {
        format!("\"{s}\"")
    } else {
        s
    })
}

/// The two unit files, named, with `ExecStart` running `agentd`.
pub fn render(agentd: &Path) -> Result<[(&'static str, String); 2], String> {
    let exec = format!("ExecStart={}", exec_word(agentd)?);
    Ok([
        (SOCKET_NAME, SOCKET_UNIT.to_string()),
        (
            SERVICE_NAME,
            SERVICE_UNIT.replace(SHIPPED_EXEC_START, &exec),
        ),
    ])
}

/// A line diff good enough to show what `--force` would replace: lines
/// only in the old file with `-`, only in the new with `+`.
pub fn diff(old: &str, new: &str) -> String {
    let mut out = String::new();
    for line in old.lines().filter(|l| !new.lines().any(|n| n == *l)) {
        out.push_str(&format!("-{line}\n"));
    }
    for line in new.lines().filter(|l| !old.lines().any(|o| o == *l)) {
        out.push_str(&format!("+{line}\n"));
    }
    out
}

/// `systemctl --user ARGS`: its exit status and output, or None when
/// systemctl itself cannot run.
pub fn systemctl(args: &[&str]) -> Option<(bool, String)> {
    let out = Command::new("systemctl")
        .arg("--user")
        .args(args)
        .output()
        .ok()?;
    let mut text = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let err = String::from_utf8_lossy(&out.stderr).trim().to_string();
    if !err.is_empty() {
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(&err);
    }
    Some((out.status.success(), text))
}

/// Whether a user service manager answers (`systemctl --user` works).
pub fn manager_runs() -> bool {
    systemctl(&["show-environment"]).is_some_and(|(ok, _)| ok)
}

/// `is-enabled` / `is-active` of a unit, as systemctl words it.
pub fn unit_state(verb: &str, unit: &str) -> String {
    match systemctl(&[verb, unit]) {
        Some((_, text)) => text.lines().next().unwrap_or("unknown").to_string(),
        None => "unknown".to_string(),
    }
}

/// Both unit files exist in the user unit directory.
pub fn installed() -> bool {
    let dir = user_unit_dir();
    dir.join(SOCKET_NAME).is_file() && dir.join(SERVICE_NAME).is_file()
}
