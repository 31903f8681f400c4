//! The person's approval of a repository's allow rules (DESIGN §24): a
//! cloned repository's `.claude/settings.json` and `.claude/settings.local.json`
//! may tighten at once, but an allow rule of theirs lets nothing run until
//! the person approved it as written now — a rule changed since is
//! unapproved again (`rules` checks; this is where approvals are given and
//! taken back). Kept per repository root under the file and the rule, with
//! the rule's fingerprint.

use std::path::{Path, PathBuf};

use super::Supervisor;
use super::rules::RuleApproval;
use crate::domain::now_ms;
use crate::error::{AgentdError, quote};
use crate::store::{Approval, Approved};

/// Which allow rules an approval or a revocation names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RuleSelection {
    /// Each by the rule as written (`Bash(npm test:*)`) or a prefix of at
    /// least 8 of its fingerprint's hex digits.
    Named(Vec<String>),
    All,
}

/// The shortest fingerprint prefix that names a rule.
const MIN_PREFIX: usize = 8;

/// A rule or hook `approve_rules` approved.
#[derive(Clone, Debug)]
pub struct ApprovedRule {
    /// "allow" or "hook".
    pub kind: &'static str,
    /// The rule as written, or the hook as `rules list` shows it.
    pub text: String,
    /// Its file, as shown.
    pub source: String,
    pub fingerprint: String,
    /// It was approved already, as written now.
    pub already: bool,
}

/// Something of a repository's settings that needs approving.
struct Approvable {
    kind: &'static str,
    /// What a person names it by: the rule as written, the hook's command.
    names: String,
    shown: String,
    source: String,
    /// What its approval is kept under (with its file).
    kept_as: String,
    approval: RuleApproval,
}

/// A kept approval's text as `rules list` shows it (a hook's
/// `event NUL matcher NUL command` as "Event[matcher] command").
fn shown_kept(text: &str) -> String {
    let Some(rest) = text.strip_prefix("hook\0") else {
        return text.to_string();
    };
    let mut parts = rest.splitn(3, '\0');
    match (parts.next(), parts.next(), parts.next()) {
        (Some(event), Some(""), Some(command)) => format!("{event} {command}"),
        (Some(event), Some(m), Some(command)) => format!("{event}[{m}] {command}"),
        _ => rest.replace('\0', " "),
    }
}

fn names(wanted: &str, item: &Approvable) -> bool {
    item.names == wanted
        || item.shown == wanted
        || (wanted.len() >= MIN_PREFIX
            && wanted.bytes().all(|b| b.is_ascii_hexdigit())
            && item
                .approval
                .fingerprint
                .starts_with(&wanted.to_ascii_lowercase()))
}

impl Supervisor {
    /// The repository for `cwd` and what of its settings needs approving
    /// (allow rules and hooks), or why there is none.
    fn repository_approvables(
        &self,
        cwd: &Path,
    ) -> Result<(PathBuf, Vec<Approvable>), AgentdError> {
        let dir = super::mcp_sources::client_dir(cwd)?;
        let root = self.rules_root(&dir).ok_or_else(|| {
            AgentdError::refused(format!(
                "{} is not in a git repository: approvals are for a repository's settings files; \
                 run this in the repository or pass --cwd",
                quote(&dir.display().to_string())
            ))
        })?;
        let set = self.rules_at(&dir).map_err(AgentdError::refused)?;
        let mut items = Vec::new();
        for l in &set.rules {
            if let Some(a) = &l.approval {
                items.push(Approvable {
                    kind: "allow",
                    names: l.rule.text.clone(),
                    shown: l.rule.text.clone(),
                    source: l.rule.source.clone(),
                    kept_as: l.rule.text.clone(),
                    approval: a.clone(),
                });
            }
        }
        for h in &set.hooks {
            if let Some(a) = &h.approval {
                items.push(Approvable {
                    kind: "hook",
                    names: h.hook.command.clone(),
                    shown: h.shown(),
                    source: h.hook.source.clone(),
                    kept_as: h.hook.approval_name(),
                    approval: a.clone(),
                });
            }
        }
        Ok((root, items))
    }

    /// Approves allow rules and hooks of the repository holding `cwd`, as
    /// written now. Returns its root and each one approved.
    pub async fn approve_rules(
        &self,
        cwd: &Path,
        which: &RuleSelection,
    ) -> Result<(PathBuf, Vec<ApprovedRule>), AgentdError> {
        let (root, items) = self.repository_approvables(cwd)?;
        if items.is_empty() {
            return Err(AgentdError::refused(format!(
                "the settings files of {} have no allow rule or hook to approve (deny and ask rules apply without one)",
                root.display()
            )));
        }
        let chosen: Vec<&Approvable> = match which {
            RuleSelection::All => items.iter().collect(),
            RuleSelection::Named(wanted) => {
                let mut chosen = Vec::new();
                for w in wanted {
                    let found: Vec<&Approvable> = items.iter().filter(|i| names(w, i)).collect();
                    if found.is_empty() {
                        let has: Vec<&str> =
                            items.iter().take(10).map(|i| i.shown.as_str()).collect();
                        return Err(AgentdError::NotFound(format!(
                            "no allow rule or hook {:?} in the settings files of {}; they have: {}",
                            quote(w),
                            root.display(),
                            has.join(", ")
                        )));
                    }
                    chosen.extend(found);
                }
                chosen
            }
        };
        let now = now_ms();
        let approvals: Vec<Approval> = chosen
            .iter()
            .map(|i| Approval {
                name: i.approval.name(&i.kept_as),
                fingerprint: i.approval.fingerprint.clone(),
                approved_at_ms: now,
            })
            .collect();
        self.store
            .approve_durable(Approved::Rules, &root, &approvals)
            .await?;
        for i in &chosen {
            tracing::info!(repository = %root.display(), file = i.approval.file, kind = i.kind, what = %i.shown, "approved");
        }
        let approved = chosen
            .into_iter()
            .map(|i| ApprovedRule {
                kind: i.kind,
                text: i.shown.clone(),
                source: i.source.clone(),
                fingerprint: i.approval.fingerprint.clone(),
                already: i.approval.approved,
            })
            .collect();
        Ok((root, approved))
    }

    /// Forgets approvals of the repository holding `cwd`: of the rules
    /// named (each must have one), or all of them. Returns its root and,
    /// for each approval forgotten, its file and rule. Runs started
    /// before keep the rules they started with.
    pub async fn revoke_rules(
        &self,
        cwd: &Path,
        which: &RuleSelection,
    ) -> Result<(PathBuf, Vec<(String, String)>), AgentdError> {
        let dir = super::mcp_sources::client_dir(cwd)?;
        let root = self.rules_root(&dir).ok_or_else(|| {
            AgentdError::refused(format!(
                "{} is not in a git repository",
                quote(&dir.display().to_string())
            ))
        })?;
        let kept = self.store.approvals(Approved::Rules, &root)?;
        let names: Option<Vec<String>> = match which {
            RuleSelection::All => None,
            RuleSelection::Named(wanted) => {
                let mut names = Vec::new();
                for w in wanted {
                    let found: Vec<String> = kept
                        .iter()
                        .filter(|k| {
                            k.name.split_once('\0').is_some_and(|(_, text)| {
                                text == w || text.rsplit('\0').next() == Some(w.as_str())
                            }) || (w.len() >= MIN_PREFIX
                                && k.fingerprint.starts_with(&w.to_ascii_lowercase()))
                        })
                        .map(|k| k.name.clone())
                        .collect();
                    if found.is_empty() {
                        return Err(AgentdError::NotFound(format!(
                            "no allow rule {:?} is approved for {}",
                            quote(w),
                            root.display()
                        )));
                    }
                    names.extend(found);
                }
                Some(names)
            }
        };
        let revoked = self
            .store
            .revoke_durable(Approved::Rules, &root, names.as_deref())
            .await?;
        Ok((
            root,
            revoked
                .into_iter()
                .map(|n| match n.split_once('\0') {
                    Some((file, text)) => (file.to_string(), shown_kept(text)),
                    None => (String::new(), n),
                })
                .collect(),
        ))
    }
}
