//! agentd's systemd user units as `agentctl service` writes them: the
//! shipped files in `systemd/` with `ExecStart` and `ExecReload` pointing
//! at the installed binaries.

use std::path::{Path, PathBuf};

/// The units as shipped in `systemd/`, with placeholder paths.
const SOCKET_UNIT: &str = include_str!("../../../../systemd/agentd.socket");
const SERVICE_UNIT: &str = include_str!("../../../../systemd/agentd.service");
const SHIPPED_AGENTD: &str = "/usr/local/bin/agentd";
const SHIPPED_AGENTCTL: &str = "/usr/local/bin/agentctl";

pub const SOCKET_NAME: &str = "agentd.socket";
pub const SERVICE_NAME: &str = "agentd.service";

/// Where user units go: `$XDG_CONFIG_HOME/systemd/user`.
pub fn user_unit_dir() -> PathBuf {
    agentd_shared::paths::config_dir()
        .parent()
        .map(|p| p.join("systemd/user"))
        .unwrap_or_else(|| PathBuf::from(".config/systemd/user"))
}

/// The socket the units listen on: `%t/agentd/agentd.sock`, where `%t` is
/// `$XDG_RUNTIME_DIR` (None when it is not set).
pub fn unit_socket() -> Option<PathBuf> {
    std::env::var_os("XDG_RUNTIME_DIR")
        .filter(|v| !v.is_empty())
        .map(|r| PathBuf::from(r).join("agentd/agentd.sock"))
}

/// A path as one word of a unit's command line: `%` and `$` doubled
/// (a specifier and a variable otherwise), quoted when it holds a space.
fn exec_word(path: &Path) -> Result<String, String> {
    let s = path
        .to_str()
        .ok_or_else(|| format!("{} is not UTF-8; install agentd elsewhere", path.display()))?;
    if s.contains(['"', '\'', '\\', '\n']) {
        return Err(format!(
            "{s:?} holds a quote, backslash or newline; install agentd under a plainer path"
        ));
    }
    let s = s.replace('%', "%%").replace('$', "$$");
    Ok(if s.contains(char::is_whitespace) {
        format!("\"{s}\"")
    } else {
        s
    })
}

/// The two unit files, named, running `agentd` and reloading through
/// `agentctl` (so that `systemctl reload` fails on an invalid config).
pub fn render(agentd: &Path, agentctl: &Path) -> Result<[(&'static str, String); 2], String> {
    let service = SERVICE_UNIT
        .replace(SHIPPED_AGENTD, &exec_word(agentd)?)
        .replace(SHIPPED_AGENTCTL, &exec_word(agentctl)?);
    Ok([
        (SOCKET_NAME, SOCKET_UNIT.to_string()),
        (SERVICE_NAME, service),
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

/// Both unit files exist in the user unit directory.
pub fn installed() -> bool {
    let dir = user_unit_dir();
    dir.join(SOCKET_NAME).is_file() && dir.join(SERVICE_NAME).is_file()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_escaped_for_systemd() {
        assert_eq!(exec_word(Path::new("/opt/a%b$c")).unwrap(), "/opt/a%%b$$c");
        assert_eq!(
            exec_word(Path::new("/opt/my tools/agentd")).unwrap(),
            "\"/opt/my tools/agentd\""
        );
        assert!(exec_word(Path::new("/opt/a\"b")).is_err());
        let [(_, _), (_, service)] =
            render(Path::new("/x/agentd"), Path::new("/x/agentctl")).unwrap();
        assert!(service.contains("ExecStart=/x/agentd\n"), "{service}");
        assert!(service.contains("ExecReload=/x/agentctl "), "{service}");
        assert!(!service.contains("/usr/local/bin"), "{service}");
    }
}
