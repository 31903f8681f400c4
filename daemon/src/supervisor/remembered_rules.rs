//! Allow rules kept from answers "always, and remember it" (DESIGN §24):
//! `remembered-rules.toml` beside agentd's `config.toml` — agentd's own
//! file, never a repository's — applied to every agent from then on and
//! listed by `agentctl rules list` with the other rules. agentd rewrites
//! it whole (durably, one writer at a time); a person may edit it, and a
//! malformed file is refused like any rule file, never overwritten.

use std::path::{Path, PathBuf};

use super::Supervisor;
use crate::error::AgentdError;

/// The file's name, in agentd's configuration directory.
pub(super) const FILE: &str = "remembered-rules.toml";

/// The most of it agentd reads.
const MAX_BYTES: u64 = 1024 * 1024;

/// One writer at a time (a read, an append and the replace).
static WRITING: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

#[derive(serde::Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct Remembered {
    #[serde(default)]
    permissions: Lists,
}

#[derive(serde::Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct Lists {
    #[serde(default)]
    allow: Vec<String>,
}

/// The allow rules of the file in `dir`; a missing file has none.
pub(super) fn read(dir: &Path) -> Result<Vec<String>, String> {
    use agentd_sandbox::beneath;
    let path = dir.join(FILE);
    let file = match beneath::open_regular(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    let bytes = beneath::read_capped(file.into(), MAX_BYTES)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let text = String::from_utf8_lossy(&bytes);
    let parsed: Remembered =
        toml::from_str(&text).map_err(|e| format!("{FILE} is malformed: {}", e.message()))?;
    Ok(parsed.permissions.allow)
}

fn render(rules: &[String]) -> String {
    let mut out = String::from(
        "# Allow rules agentd keeps from answers \"always, and remember it\".\n\
         # agentd rewrites this file; remove a line to forget a rule.\n\
         [permissions]\nallow = [\n",
    );
    for r in rules {
        out.push_str(&format!("  {},\n", toml::Value::String(r.clone())));
    }
    out.push_str("]\n");
    out
}

impl Supervisor {
    /// Where `remembered-rules.toml` is: beside config.toml.
    pub(super) fn remembered_rules_dir(&self) -> PathBuf {
        self.settings
            .info()
            .config_path
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default()
    }

    /// Adds `rules` (allow rules as written) to the file; on disk when
    /// this returns.
    pub(super) async fn remember_rules(&self, rules: &[String]) -> Result<(), AgentdError> {
        let dir = self.remembered_rules_dir();
        let rules = rules.to_vec();
        let _one = WRITING.lock().await;
        let written = tokio::task::spawn_blocking(move || {
            let mut kept = read(&dir)
                .map_err(|why| format!("{why}; fix it (or remove it) and answer again"))?;
            let before = kept.len();
            for r in rules {
                if !kept.contains(&r) {
                    kept.push(r);
                }
            }
            if kept.len() == before {
                return Ok(());
            }
            agentd_shared::durable_file::replace(&dir, FILE, render(&kept).as_bytes())
                .map_err(|e| format!("cannot write {}: {e}", dir.join(FILE).display()))
        })
        .await
        .map_err(|e| AgentdError::refused(format!("remembering rules failed: {e}")))?;
        written.map_err(AgentdError::refused)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_file_agentd_writes_reads_back_as_written() {
        let dir = tempfile::tempdir().unwrap();
        assert!(read(dir.path()).unwrap().is_empty());
        let rules = vec![
            "Bash(npm test)".to_string(),
            "Bash(echo \"quoted\" \\ x)".to_string(),
        ];
        std::fs::write(dir.path().join(FILE), render(&rules)).unwrap();
        assert_eq!(read(dir.path()).unwrap(), rules);
        std::fs::write(dir.path().join(FILE), "[permissions]\nalow = []\n").unwrap();
        let err = read(dir.path()).unwrap_err();
        assert!(err.contains("malformed"), "{err}");
    }
}
