//! Which permission rules an agent's calls are put to (DESIGN §24): the
//! person's `~/.claude/settings.json` and agentd's `[permissions]` as
//! written; the repository's `.claude/settings.json` and
//! `.claude/settings.local.json` may only tighten — their deny and ask
//! rules apply, their allow rules do not (a repository arrives with a
//! clone; approving them is to come). A malformed rule anywhere fails the
//! run, naming the file and quoting the rule: a dropped deny would loosen.

use std::path::{Path, PathBuf};

use agentd_rules::{Kind, Rule, settings};

use super::Supervisor;
use crate::domain::AgentRecord;

/// Reads one settings file's rules; a missing file has none.
fn file_rules(path: &Path, shown: &str, root: &Path) -> Result<Vec<Rule>, Vec<String>> {
    let text = match agentd_sandbox::beneath::open_regular(path) {
        Ok(f) => {
            use std::io::Read as _;
            let mut text = String::new();
            f.take(1024 * 1024)
                .read_to_string(&mut text)
                .map_err(|e| vec![format!("cannot read {shown}: {e}")])?;
            text
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(vec![format!("cannot read {shown}: {e}")]),
    };
    settings::from_settings_json(&text, shown, root).map(|f| f.rules)
}

/// The repository root `cwd` lies in (its main checkout's working tree).
fn repo_root(cwd: &Path) -> Option<PathBuf> {
    git2::Repository::discover(cwd)
        .ok()?
        .workdir()
        .map(Path::to_path_buf)
}

impl Supervisor {
    /// The rules for `record`'s run; the error says which rules are
    /// malformed and where.
    pub(super) fn rules_for(&self, record: &AgentRecord) -> Result<Vec<Rule>, String> {
        let all = self.rules_at(&record.cwd)?;
        Ok(all
            .into_iter()
            .filter(|(_, applies)| *applies)
            .map(|(r, _)| r)
            .collect())
    }

    /// `ListRules`: every rule an agent started in `cwd` is put to, and
    /// whether it applies.
    pub fn rules_at(&self, cwd: &Path) -> Result<Vec<(Rule, bool)>, String> {
        let mut rules = Vec::new();
        let mut errors = Vec::new();
        let mut take = |got: Result<Vec<Rule>, Vec<String>>, only_tighten: bool| match got {
            Ok(r) => rules.extend(r.into_iter().map(|r| {
                let applies = !only_tighten || r.kind != Kind::Allow;
                (r, applies)
            })),
            Err(e) => errors.extend(e),
        };
        if let Some(home) = std::env::var_os("HOME").map(PathBuf::from) {
            take(
                file_rules(
                    &home.join(".claude/settings.json"),
                    "~/.claude/settings.json",
                    &home,
                ),
                false,
            );
        }
        let p = &self.config().permissions;
        let config_dir = self
            .settings
            .info()
            .config_path
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default();
        take(
            settings::from_lists(&p.allow, &p.ask, &p.deny, "config.toml", &config_dir),
            false,
        );
        if let Some(root) = repo_root(cwd) {
            for name in [".claude/settings.json", ".claude/settings.local.json"] {
                let shown = root.join(name).display().to_string();
                take(file_rules(&root.join(name), &shown, &root), true);
            }
        }
        if errors.is_empty() {
            Ok(rules)
        } else {
            Err(format!(
                "its permission rules cannot all be read, and a rule left out could let a call through: {}; fix or remove them",
                errors.join("; ")
            ))
        }
    }
}
