//! What no confined process may read (DESIGN §22): agentd's own
//! directories (other agents' transcripts and temp dirs, the store, the
//! config with its keys, the socket) and the usual secret stores in the
//! home directory, adjusted by `[sandbox] deny_read` / `allow_read`.
//! Enforced by carving them out of every Landlock grant (`carve`).

use std::path::{Path, PathBuf};

use super::carve::resolve;

/// The secret stores in the home directory denied by default: keys,
/// tokens and logins of the common tools and clouds, browser profiles.
/// An external agent's private home holds its own copy of its login.
pub const SECRET_STORES: &[&str] = &[
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".config/gcloud",
    ".kube",
    ".docker/config.json",
    ".netrc",
    ".git-credentials",
    ".config/gh",
    ".config/hub",
    ".password-store",
    ".local/share/keyrings",
    ".mozilla",
    ".config/google-chrome",
    ".config/chromium",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".pypirc",
    ".vault-token",
    ".claude/.credentials.json",
    ".codex/auth.json",
    ".gemini/oauth_creds.json",
];

/// The paths confined processes may not read, resolved as the kernel
/// resolves them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReadDenials {
    /// Everything denied: agentd's directories, then the secret stores.
    pub paths: Vec<PathBuf>,
    /// Built-in entries `allow_read` took off (shown by `show`).
    pub allowed: Vec<PathBuf>,
}

impl ReadDenials {
    /// agentd's `own` directories (never allowed back), the secret stores
    /// under `home` less `allow_read`, and `deny_read`.
    pub fn new(
        home: &Path,
        own: &[PathBuf],
        deny_read: &[PathBuf],
        allow_read: &[PathBuf],
    ) -> Self {
        let allow: Vec<PathBuf> = allow_read.iter().map(|p| resolve(p)).collect();
        let mut paths: Vec<PathBuf> = own.iter().map(|p| resolve(p)).collect();
        let mut allowed = Vec::new();
        for store in SECRET_STORES {
            let path = resolve(&home.join(store));
            if allow.contains(&path) {
                allowed.push(path);
            } else {
                paths.push(path);
            }
        }
        paths.extend(deny_read.iter().map(|p| resolve(p)));
        paths.sort();
        paths.dedup();
        ReadDenials { paths, allowed }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allow_read_takes_off_a_secret_store_but_never_agentd_s_own_directory() {
        let t = tempfile::tempdir().unwrap();
        let home = t.path().canonicalize().unwrap();
        let data = home.join(".local/state/agentd");
        let d = ReadDenials::new(
            &home,
            std::slice::from_ref(&data),
            &[PathBuf::from("/srv/keys")],
            &[home.join(".aws"), data.clone()],
        );
        assert!(d.paths.contains(&data), "agentd's data stays denied");
        assert!(d.paths.contains(&home.join(".ssh")));
        assert!(d.paths.contains(&PathBuf::from("/srv/keys")));
        assert!(!d.paths.contains(&home.join(".aws")));
        assert_eq!(d.allowed, vec![home.join(".aws")]);
    }
}
