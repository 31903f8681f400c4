//! Which permission rules an agent's calls are put to (DESIGN §24): the
//! person's `~/.claude/settings.json`, agentd's `[permissions]` and its
//! remembered rules (`remembered_rules`) as
//! written; the repository's `.claude/settings.json` and
//! `.claude/settings.local.json` may only tighten — their deny and ask
//! rules apply, their allow rules only once the person approved each as
//! it is written now (a repository arrives with a clone;
//! `rule_approvals`). A malformed rule anywhere fails the run, naming the
//! file and quoting the rule: a dropped deny would loosen.
//!
//! An agent in one of agentd's worktrees is put to its checkout's files,
//! as its MCP servers come from its checkout's `.mcp.json`: what it writes
//! in its own tree's settings decides nothing.

use std::path::{Path, PathBuf};

use agentd_rules::hooks::Hook;
use agentd_rules::{Kind, Rule, settings};
use sha2::{Digest, Sha256};

use super::Supervisor;
use crate::domain::{AgentRecord, PermissionMode};
use crate::store::Approved;

/// A repository's settings files, relative to its root.
pub(super) const REPOSITORY_FILES: [&str; 2] =
    [".claude/settings.json", ".claude/settings.local.json"];

/// A rule as listed: with, for a repository's allow rule, whether the
/// person approved it.
#[derive(Debug, Clone)]
pub struct ListedRule {
    pub rule: Rule,
    pub approval: Option<RuleApproval>,
}

/// A repository's allow rule, which applies only once approved.
#[derive(Debug, Clone)]
pub struct RuleApproval {
    /// The repository's root.
    pub root: PathBuf,
    /// Its settings file, relative to the root.
    pub file: &'static str,
    /// SHA-256 (hex) of the file and the rule as written.
    pub fingerprint: String,
    pub approved: bool,
}

impl RuleApproval {
    /// The name it is kept under: the file and the rule as written (a
    /// hook's: `Hook::approval_name`).
    pub fn name(&self, text: &str) -> String {
        format!("{}\0{}", self.file, text)
    }
}

/// A hook as listed: with, for a repository's, whether the person approved
/// it (a repository's hooks run nothing until then).
#[derive(Debug, Clone)]
pub struct ListedHook {
    pub hook: Hook,
    pub approval: Option<RuleApproval>,
}

impl ListedHook {
    pub fn applies(&self) -> bool {
        self.approval.as_ref().is_none_or(|a| a.approved)
    }

    /// How `rules list` shows it: "PreToolUse[Bash] ./check.sh".
    pub fn shown(&self) -> String {
        let m = &self.hook.matcher_text;
        if m.is_empty() || m == "*" {
            format!("{} {}", self.hook.event.as_str(), self.hook.command)
        } else {
            format!("{}[{m}] {}", self.hook.event.as_str(), self.hook.command)
        }
    }
}

impl ListedRule {
    pub fn applies(&self) -> bool {
        self.approval.as_ref().is_none_or(|a| a.approved)
    }
}

/// The fingerprint of the allow rule `text` of the repository file `file`.
pub(super) fn fingerprint(file: &str, text: &str) -> String {
    let mut h = Sha256::new();
    h.update(b"allow\0");
    h.update(file.as_bytes());
    h.update(b"\0");
    h.update(text.as_bytes());
    h.finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect::<String>()
}

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
) -> Result<settings::FileRules, Vec<String>> {
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
        Err(ContainedRead::Missing) => return Ok(settings::FileRules::default()),
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
    settings::from_settings_json(&text, shown, dir)
}

/// A settings file's `permissions.defaultMode`, as agentd's mode; one it
/// has no mode for is an error naming the file (never read as a mode that
/// lets more run).
fn mode_of(written: &str, shown: &str) -> Result<PermissionMode, String> {
    match written {
        "default" => Ok(PermissionMode::Default),
        "acceptEdits" => Ok(PermissionMode::AcceptEdits),
        "plan" => Ok(PermissionMode::Plan),
        "bypassPermissions" => Ok(PermissionMode::Bypass),
        other => Err(format!(
            "{shown}: permissions.defaultMode {:?} is not a mode agentd has (default, acceptEdits, plan, bypassPermissions)",
            crate::error::quote(other)
        )),
    }
}

/// The rules an agent started somewhere is put to, and the permission
/// mode its settings files give an agent started there without one.
#[derive(Debug, Clone, Default)]
pub struct RuleSet {
    pub rules: Vec<ListedRule>,
    pub hooks: Vec<ListedHook>,
    /// The person's `defaultMode`, made stricter by a repository's; with
    /// the file that decided it.
    pub default_mode: Option<(PermissionMode, String)>,
}

impl RuleSet {
    /// Puts `written` (a file's defaultMode) in force: the person's as
    /// written, a repository's only where it is stricter.
    fn take_mode(
        &mut self,
        written: Option<&str>,
        shown: &str,
        only_tighten: bool,
    ) -> Result<(), String> {
        let Some(written) = written else {
            return Ok(());
        };
        let mode = mode_of(written, shown)?;
        // Without a setting, an agent started without a mode bypasses.
        let now = self
            .default_mode
            .as_ref()
            .map_or(PermissionMode::Bypass, |(m, _)| *m);
        if !only_tighten || (mode != now && mode.stricter(now) == mode) {
            self.default_mode = Some((mode, shown.to_string()));
        }
        Ok(())
    }
}

impl Supervisor {
    /// The rules for `record`'s run; the error says which rules are
    /// malformed and where.
    pub(super) fn rules_for(&self, record: &AgentRecord) -> Result<(Vec<Rule>, Vec<Hook>), String> {
        let all = self.rules_at(&record.cwd)?;
        let rules = all
            .rules
            .into_iter()
            .filter(ListedRule::applies)
            .map(|l| l.rule)
            .collect();
        let hooks = all
            .hooks
            .into_iter()
            .filter(ListedHook::applies)
            .map(|l| l.hook)
            .collect();
        Ok((rules, hooks))
    }

    /// The root of the repository whose settings files speak for `cwd`
    /// (an agentd worktree's: its checkout's).
    pub(super) fn rules_root(&self, cwd: &Path) -> Option<PathBuf> {
        crate::mcp::repository::root_of(&self.mcp_home(cwd))
    }

    /// `ListRules`: every rule an agent started in `cwd` is put to, and
    /// whether it applies; and the mode its settings give it.
    pub fn rules_at(&self, cwd: &Path) -> Result<RuleSet, String> {
        let mut set = RuleSet::default();
        let mut errors = Vec::new();
        fn take(set: &mut RuleSet, errors: &mut Vec<String>, got: Result<Vec<Rule>, Vec<String>>) {
            match got {
                Ok(r) => set.rules.extend(r.into_iter().map(|rule| ListedRule {
                    rule,
                    approval: None,
                })),
                Err(e) => errors.extend(e),
            }
        }
        if let Some(home) = std::env::var_os("HOME").map(PathBuf::from) {
            let shown = "~/.claude/settings.json";
            match file_rules(&home, ".claude/settings.json", shown, false) {
                Ok(f) => {
                    if let Err(e) = set.take_mode(f.default_mode.as_deref(), shown, false) {
                        errors.push(e);
                    }
                    set.hooks.extend(f.hooks.into_iter().map(|hook| ListedHook {
                        hook,
                        approval: None,
                    }));
                    take(&mut set, &mut errors, Ok(f.rules));
                }
                Err(e) => take(&mut set, &mut errors, Err(e)),
            }
        }
        let p = &self.config().permissions;
        let config_dir = self.remembered_rules_dir();
        take(
            &mut set,
            &mut errors,
            settings::from_lists(&p.allow, &p.ask, &p.deny, "config.toml", &config_dir),
        );
        match super::remembered_rules::read(&config_dir) {
            Ok(allow) => take(
                &mut set,
                &mut errors,
                settings::from_lists(&allow, &[], &[], super::remembered_rules::FILE, &config_dir),
            ),
            Err(why) => errors.push(why),
        }
        if let Some(root) = self.rules_root(cwd) {
            // Unreadable approvals approve nothing.
            let approved = self
                .store
                .approvals(Approved::Rules, &root)
                .unwrap_or_else(|e| {
                    tracing::warn!(error = %e, "cannot read rule approvals; a repository's allow rules do not apply");
                    Vec::new()
                });
            for file in REPOSITORY_FILES {
                let shown = root.join(file).display().to_string();
                let found = match file_rules(&root, file, &shown, true) {
                    Ok(f) => f,
                    Err(e) => {
                        errors.extend(e);
                        continue;
                    }
                };
                if let Err(e) = set.take_mode(found.default_mode.as_deref(), &shown, true) {
                    errors.push(e);
                }
                let approval_of = |text: &str| {
                    let mut a = RuleApproval {
                        root: root.clone(),
                        file,
                        fingerprint: fingerprint(file, text),
                        approved: false,
                    };
                    let name = a.name(text);
                    a.approved = approved
                        .iter()
                        .any(|k| k.name == name && k.fingerprint == a.fingerprint);
                    a
                };
                set.rules.extend(found.rules.into_iter().map(|rule| {
                    let approval = (rule.kind == Kind::Allow).then(|| approval_of(&rule.text));
                    ListedRule { rule, approval }
                }));
                set.hooks
                    .extend(found.hooks.into_iter().map(|hook| ListedHook {
                        approval: Some(approval_of(&hook.approval_name())),
                        hook,
                    }));
            }
        }
        if errors.is_empty() {
            Ok(set)
        } else {
            Err(format!(
                "its permission rules cannot all be read, and a rule left out could let a call through: {}; fix or remove them",
                errors.join("; ")
            ))
        }
    }
}
