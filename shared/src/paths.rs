//! Where the daemon listens and keeps its data (DESIGN §11).
//!
//! Daemon and clients resolve these the same way, so an `agentctl` started
//! with the same flags and environment finds the daemon it would start.

use std::path::{Path, PathBuf};

/// Environment variable naming the socket path.
pub const SOCKET_ENV: &str = "AGENTD_SOCKET";
/// Environment variable naming the data directory.
pub const DATA_DIR_ENV: &str = "AGENTD_DATA_DIR";

fn non_empty_env(name: &str) -> Option<PathBuf> {
    std::env::var_os(name)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// `--socket`, else `$AGENTD_SOCKET`, else `$XDG_RUNTIME_DIR/agentd/agentd.sock`,
/// else `/tmp/agentd-<uid>/agentd.sock`.
pub fn socket_path(flag: Option<&Path>) -> PathBuf {
    if let Some(p) = flag {
        return p.to_path_buf();
    }
    if let Some(p) = non_empty_env(SOCKET_ENV) {
        return p;
    }
    if let Some(runtime) = non_empty_env("XDG_RUNTIME_DIR") {
        return runtime.join("agentd").join("agentd.sock");
    }
    PathBuf::from(format!("/tmp/agentd-{}", nix::unistd::getuid())).join("agentd.sock")
}

/// `--data-dir`, else `$AGENTD_DATA_DIR`, else `$XDG_STATE_HOME/agentd`,
/// else `~/.local/state/agentd`.
pub fn data_dir(flag: Option<&Path>) -> PathBuf {
    if let Some(p) = flag {
        return p.to_path_buf();
    }
    if let Some(p) = non_empty_env(DATA_DIR_ENV) {
        return p;
    }
    if let Some(state) = non_empty_env("XDG_STATE_HOME") {
        return state.join("agentd");
    }
    home_dir().join(".local/state/agentd")
}

/// `$XDG_CONFIG_HOME/agentd`, else `~/.config/agentd`.
pub fn config_dir() -> PathBuf {
    if let Some(cfg) = non_empty_env("XDG_CONFIG_HOME") {
        return cfg.join("agentd");
    }
    home_dir().join(".config/agentd")
}

/// The config file: `$XDG_CONFIG_HOME/agentd/config.toml`.
pub fn config_file() -> PathBuf {
    config_dir().join("config.toml")
}

/// `$HOME`, else the user's home from the password database, else `/`.
pub fn home_dir() -> PathBuf {
    if let Some(home) = non_empty_env("HOME") {
        return home;
    }
    nix::unistd::User::from_uid(nix::unistd::getuid())
        .ok()
        .flatten()
        .map(|u| u.dir)
        .unwrap_or_else(|| PathBuf::from("/"))
}

/// Makes an absolute path without touching the file system, so a relative
/// `--socket` means the same thing to a daemon started from another cwd.
pub fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn explicit_flags_win() {
        assert_eq!(
            socket_path(Some(Path::new("/x/y.sock"))),
            PathBuf::from("/x/y.sock")
        );
        assert_eq!(data_dir(Some(Path::new("/d"))), PathBuf::from("/d"));
    }

    #[test]
    fn absolute_resolves_relative_paths_against_cwd() {
        let p = absolute(Path::new("a/b.sock"));
        assert!(p.is_absolute());
        assert!(p.ends_with("a/b.sock"));
    }
}
