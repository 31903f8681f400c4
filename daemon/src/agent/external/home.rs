//! A built-in external agent's private home (DESIGN §19): the directory
//! its config variable names (`CLAUDE_CONFIG_DIR`, `CODEX_HOME`,
//! `GEMINI_CLI_HOME`), one per agentd agent, under the data directory.
//!
//! The user's own `~/.claude`, `~/.claude.json`, `~/.codex` and `~/.gemini`
//! hold settings a later unconfined run obeys (hooks, MCP servers, notify
//! commands), so a confined agent never gets to write them. It writes its
//! own home instead: sessions, state, and a copy of the user's settings and
//! login made when the home is made. Nothing the agent wrote there is read
//! by anything outside its sandbox, and the home goes with the agent (`rm`).
//!
//! The home is made complete under a staging name and renamed into place,
//! in a directory the agent cannot write, so the daemon never writes
//! where the agent has been.

use std::io::Read;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::config::external_agents::{ExternalAgentDef, HomeSpec};
use crate::domain::{AgentId, ExternalAgentName};

/// A file of the user's config larger than this is not copied.
const MAX_COPY: u64 = 1 << 20;

/// `def` ready to start: a built-in entry with its home made, named by
/// its variable (unless the entry's `env` names another) and writable.
/// `confined`: it runs under the sandbox (a home made now gets the
/// entry's `confined_settings`).
pub fn with_home(
    def: &ExternalAgentDef,
    root: &Path,
    confined: bool,
) -> Result<ExternalAgentDef, String> {
    let mut def = def.clone();
    if let Some(spec) = def.home {
        let user = crate::config::external_agents::home();
        let home = prepare(&spec, root, &def.name, user.as_deref(), confined)?;
        def.env
            .entry(spec.var.to_string())
            .or_insert_with(|| home.display().to_string());
        def.writable.push(home);
    }
    Ok(def)
}

/// Where the homes of agent `id` live.
pub fn root(data_dir: &Path, id: AgentId) -> PathBuf {
    data_dir.join("external").join(id.to_string())
}

/// The home of `name` for the agent whose homes are under `root`, made
/// (with the copies of `user_home`'s files `spec` names) when missing.
/// Err says what is wrong, for the agent's failure message.
pub fn prepare(
    spec: &HomeSpec,
    root: &Path,
    name: &ExternalAgentName,
    user_home: Option<&Path>,
    confined: bool,
) -> Result<PathBuf, String> {
    let parent = root.parent().ok_or("the data directory has no parent")?;
    for dir in [parent, root] {
        crate::sandbox::private_dir(dir).map_err(|e| e.to_string())?;
    }
    let home = root.join(name.as_str());
    match std::fs::symlink_metadata(&home) {
        Ok(meta) => {
            let ours = meta.uid() == nix::unistd::getuid().as_raw();
            return if meta.file_type().is_dir() && ours {
                Ok(home)
            } else {
                Err(format!(
                    "{} is not a directory agentd made; remove it",
                    home.display()
                ))
            };
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(format!("{}: {e}", home.display())),
    }
    let staging = root.join(format!("{name}.new"));
    if std::fs::symlink_metadata(&staging).is_ok() {
        std::fs::remove_dir_all(&staging)
            .map_err(|e| format!("cannot clear {}: {e}", staging.display()))?;
    }
    let made = make(spec, &staging, user_home, confined)
        .and_then(|()| std::fs::rename(&staging, &home))
        .map_err(|e| format!("cannot make {}: {e}", home.display()));
    if made.is_err() {
        let _ = std::fs::remove_dir_all(&staging);
    }
    made.map(|()| home)
}

/// Makes `dir` with the state directory and the copies in it.
fn make(
    spec: &HomeSpec,
    dir: &Path,
    user_home: Option<&Path>,
    confined: bool,
) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new().mode(0o700).create(dir)?;
    let state = dir.join(spec.state);
    if !spec.state.is_empty() {
        std::fs::DirBuilder::new().mode(0o700).create(&state)?;
    }
    if let Some(from) = user_home.map(|h| h.join(spec.from)) {
        for file in spec.copies {
            if let Some(bytes) = read_config(&from.join(file))? {
                write_private(&state.join(file), &bytes)?;
            }
        }
    }
    if confined {
        for (file, patch) in spec.confined_settings {
            settle(&state.join(file), patch)?;
        }
    }
    Ok(())
}

/// Writes `bytes` to `path` (made 0600, or emptied first), in the staging
/// directory, which only the daemon has written.
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut out = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    std::io::Write::write_all(&mut out, bytes)
}

/// Merges the JSON object `patch` into the settings file `path` (its
/// values win). A file that is not a JSON object is left as it is, with a
/// warning: the agent reads it as the user wrote it.
fn settle(path: &Path, patch: &str) -> std::io::Result<()> {
    let mut settings = match std::fs::read(path) {
        Ok(bytes) => match serde_json::from_slice::<Value>(&bytes) {
            Ok(v) if v.is_object() => v,
            _ => {
                tracing::warn!(path = %path.display(), "not a JSON object; the sandbox's settings were not added");
                return Ok(());
            }
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Value::Object(Default::default()),
        Err(e) => return Err(e),
    };
    let patch: Value = serde_json::from_str(patch).map_err(std::io::Error::other)?;
    merge(&mut settings, &patch);
    let mut text = serde_json::to_vec_pretty(&settings).map_err(std::io::Error::other)?;
    text.push(b'\n');
    write_private(path, &text)
}

/// `patch` merged into `into`, object by object.
fn merge(into: &mut Value, patch: &Value) {
    match (into.as_object_mut(), patch.as_object()) {
        (Some(into), Some(patch)) => {
            for (k, v) in patch {
                merge(into.entry(k.clone()).or_insert(Value::Null), v);
            }
        }
        _ => *into = patch.clone(),
    }
}

/// A regular file of the user's config, whole; None when there is none
/// (or it is something else, or too large to be one).
fn read_config(path: &Path) -> std::io::Result<Option<Vec<u8>>> {
    // Non-blocking: opening a FIFO for reading would wait for a writer.
    let file = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let meta = file.metadata()?;
    if !meta.is_file() || meta.len() > MAX_COPY {
        tracing::warn!(path = %path.display(), "not copied into the agent's home: not a regular file of at most 1 MiB");
        return Ok(None);
    }
    let mut bytes = Vec::new();
    file.take(MAX_COPY).read_to_end(&mut bytes)?;
    Ok(Some(bytes))
}

/// Removes the homes of agent `id` (it was removed).
pub fn remove(data_dir: &Path, id: AgentId) {
    let dir = root(data_dir, id);
    if std::fs::symlink_metadata(&dir).is_ok_and(|m| m.file_type().is_dir())
        && let Err(e) = std::fs::remove_dir_all(&dir)
    {
        tracing::warn!(dir = %dir.display(), error = %e, "could not remove the agent's external homes");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPEC: HomeSpec = HomeSpec {
        var: "X_HOME",
        state: ".x",
        from: ".xconf",
        copies: &["settings.json", "login.json", "missing.json", "fifo"],
        confined_settings: &[("settings.json", r#"{"shell": {"pty": false}}"#)],
    };

    fn name() -> ExternalAgentName {
        ExternalAgentName::parse("x-agent").unwrap()
    }

    #[test]
    fn a_home_is_made_once_with_the_users_files_copied() {
        let dir = tempfile::tempdir().unwrap();
        let user = dir.path().join("user");
        std::fs::create_dir_all(user.join(".xconf")).unwrap();
        std::fs::write(user.join(".xconf/settings.json"), "{\"model\":\"m\"}").unwrap();
        std::fs::write(user.join(".xconf/login.json"), "token").unwrap();
        nix::unistd::mkfifo(&user.join(".xconf/fifo"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        let data = dir.path().join("data");
        std::fs::create_dir(&data).unwrap();
        let root = root(&data, AgentId::random());
        let home = prepare(&SPEC, &root, &name(), Some(&user), false).unwrap();
        assert_eq!(home, root.join("x-agent"));
        let state = home.join(".x");
        assert_eq!(
            std::fs::read_to_string(state.join("settings.json")).unwrap(),
            "{\"model\":\"m\"}"
        );
        assert_eq!(
            std::fs::read_to_string(state.join("login.json")).unwrap(),
            "token"
        );
        assert!(!state.join("missing.json").exists());
        assert!(!state.join("fifo").exists(), "a FIFO is not read");
        let mode = std::fs::metadata(state.join("login.json")).unwrap().mode();
        assert_eq!(mode & 0o777, 0o600);
        // Made once: what the agent changed stays, the user's later
        // changes do not reach it.
        std::fs::write(state.join("settings.json"), "{\"agent\":1}").unwrap();
        std::fs::write(user.join(".xconf/settings.json"), "{\"model\":\"n\"}").unwrap();
        prepare(&SPEC, &root, &name(), Some(&user), false).unwrap();
        assert_eq!(
            std::fs::read_to_string(state.join("settings.json")).unwrap(),
            "{\"agent\":1}"
        );
        assert!(!root.join("x-agent.new").exists());
    }

    #[test]
    fn a_leftover_staging_dir_is_replaced_and_a_link_refused() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        std::fs::create_dir(&data).unwrap();
        let id = AgentId::random();
        let root = root(&data, id);
        std::fs::create_dir_all(root.join("x-agent.new/.x")).unwrap();
        std::fs::write(root.join("x-agent.new/.x/settings.json"), "stale").unwrap();
        let home = prepare(&SPEC, &root, &name(), None, false).unwrap();
        assert!(home.join(".x").is_dir());
        assert!(!home.join(".x/settings.json").exists(), "nothing stale");
        std::fs::remove_dir_all(&home).unwrap();
        std::os::unix::fs::symlink(dir.path(), &home).unwrap();
        let err = prepare(&SPEC, &root, &name(), None, false).unwrap_err();
        assert!(err.contains("not a directory agentd made"), "{err}");
        remove(&data, id);
        assert!(!root.exists());
        assert!(dir.path().exists(), "the link's target is untouched");
    }

    #[test]
    fn a_confined_agents_home_gets_the_sandboxs_settings_merged_in() {
        let dir = tempfile::tempdir().unwrap();
        let user = dir.path().join("user");
        std::fs::create_dir_all(user.join(".xconf")).unwrap();
        std::fs::write(
            user.join(".xconf/settings.json"),
            r#"{"model": "m", "shell": {"pty": true, "kept": 1}}"#,
        )
        .unwrap();
        let data = dir.path().join("data");
        std::fs::create_dir(&data).unwrap();
        let home = prepare(
            &SPEC,
            &root(&data, AgentId::random()),
            &name(),
            Some(&user),
            true,
        )
        .unwrap();
        let settings: Value =
            serde_json::from_slice(&std::fs::read(home.join(".x/settings.json")).unwrap()).unwrap();
        assert_eq!(
            settings,
            serde_json::json!({"model": "m", "shell": {"pty": false, "kept": 1}})
        );
        // Without the user's settings the file holds the sandbox's alone.
        let bare = prepare(&SPEC, &root(&data, AgentId::random()), &name(), None, true).unwrap();
        let settings: Value =
            serde_json::from_slice(&std::fs::read(bare.join(".x/settings.json")).unwrap()).unwrap();
        assert_eq!(settings, serde_json::json!({"shell": {"pty": false}}));
    }
}
