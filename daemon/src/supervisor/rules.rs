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

/// The most of a settings file agentd reads.
const MAX_SETTINGS_BYTES: u64 = 1024 * 1024;

/// Reads the settings file `rel` of the directory `dir`: a regular file of
/// at most 1 MiB, opened without blocking; with `contained` (a cloned
/// repository's: it can put anything there) through no link out of `dir`.
/// The person's own file may be a link to their dotfiles. A missing file
/// has no rules.
fn file_rules(
    dir: &Path,
    rel: &str,
    shown: &str,
    contained: bool,
) -> Result<Vec<Rule>, Vec<String>> {
    use agentd_sandbox::beneath::{self, ContainedRead, read_contained};
    let read = if contained {
        read_contained(dir, &dir.join(rel), MAX_SETTINGS_BYTES)
    } else {
        match beneath::open_regular(&dir.join(rel)) {
            Ok(f) => {
                beneath::read_capped(f.into(), MAX_SETTINGS_BYTES).map_err(ContainedRead::Refused)
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(ContainedRead::Missing),
            Err(e) => Err(ContainedRead::Refused(beneath::Unreadable::Io(e))),
        }
    };
    let bytes = match read {
        Ok(b) => b,
        Err(ContainedRead::Missing) => return Ok(Vec::new()),
        Err(ContainedRead::Outside) => {
            return Err(vec![format!(
                "{shown} leads out of its directory through a link; agentd does not follow it"
            )]);
        }
        Err(ContainedRead::Refused(why)) => {
            return Err(vec![format!("cannot read {shown}: {why}")]);
        }
    };
    let text = String::from_utf8_lossy(&bytes);
    settings::from_settings_json(&text, shown, dir).map(|f| f.rules)
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
                    &home,
                    ".claude/settings.json",
                    "~/.claude/settings.json",
                    false,
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
                take(file_rules(&root, name, &shown, true), true);
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
