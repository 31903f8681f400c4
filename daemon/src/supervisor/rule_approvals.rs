//! The person's approval of a repository's allow rules (DESIGN §24): a
//! cloned repository's `.claude/settings.json` and `.claude/settings.local.json`
//! may tighten at once, but an allow rule of theirs lets nothing run until
//! the person approved it as written now — a rule changed since is
//! unapproved again (`rules` checks; this is where approvals are given and
//! taken back). Kept per repository root under the file and the rule, with
//! the rule's fingerprint.

use std::path::{Path, PathBuf};

use super::Supervisor;
use super::rules::{ListedRule, RuleApproval};
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

/// A rule `approve_rules` approved.
#[derive(Clone, Debug)]
pub struct ApprovedRule {
    pub listed: ListedRule,
    /// It was approved already, as written now.
    pub already: bool,
}

fn names(wanted: &str, listed: &ListedRule, approval: &RuleApproval) -> bool {
    listed.rule.text == wanted
        || (wanted.len() >= MIN_PREFIX
            && wanted.bytes().all(|b| b.is_ascii_hexdigit())
            && approval
                .fingerprint
                .starts_with(&wanted.to_ascii_lowercase()))
}

impl Supervisor {
    /// The repository for `cwd` and its allow rules (each with its
    /// approval), or why there is none.
    fn repository_allow_rules(
        &self,
        cwd: &Path,
    ) -> Result<(PathBuf, Vec<(ListedRule, RuleApproval)>), AgentdError> {
        let dir = super::mcp_sources::client_dir(cwd)?;
        let root = self.rules_root(&dir).ok_or_else(|| {
            AgentdError::refused(format!(
                "{} is not in a git repository: approvals are for a repository's settings files; \
                 run this in the repository or pass --cwd",
                quote(&dir.display().to_string())
            ))
        })?;
        let rules = self.rules_at(&dir).map_err(AgentdError::refused)?;
        let allow = rules
            .rules
            .into_iter()
            .filter_map(|l| l.approval.clone().map(|a| (l, a)))
            .collect();
        Ok((root, allow))
    }

    /// Approves allow rules of the repository holding `cwd`, as written
    /// now. Returns its root and each rule approved.
    pub async fn approve_rules(
        &self,
        cwd: &Path,
        which: &RuleSelection,
    ) -> Result<(PathBuf, Vec<ApprovedRule>), AgentdError> {
        let (root, allow) = self.repository_allow_rules(cwd)?;
        if allow.is_empty() {
            return Err(AgentdError::refused(format!(
                "the settings files of {} have no allow rule to approve (deny and ask rules apply without one)",
                root.display()
            )));
        }
        let chosen: Vec<(ListedRule, RuleApproval)> = match which {
            RuleSelection::All => allow,
            RuleSelection::Named(wanted) => {
                let mut chosen = Vec::new();
                for w in wanted {
                    let found: Vec<_> = allow.iter().filter(|(l, a)| names(w, l, a)).collect();
                    if found.is_empty() {
                        let has: Vec<String> = allow
                            .iter()
                            .take(10)
                            .map(|(l, _)| l.rule.text.clone())
                            .collect();
                        return Err(AgentdError::NotFound(format!(
                            "no allow rule {:?} in the settings files of {}; they have: {}",
                            quote(w),
                            root.display(),
                            has.join(", ")
                        )));
                    }
                    chosen.extend(found.into_iter().cloned());
                }
                chosen
            }
        };
        let now = now_ms();
        let approvals: Vec<Approval> = chosen
            .iter()
            .map(|(l, a)| Approval {
                name: a.name(&l.rule),
                fingerprint: a.fingerprint.clone(),
                approved_at_ms: now,
            })
            .collect();
        self.store
            .approve_durable(Approved::Rules, &root, &approvals)
            .await?;
        for (l, a) in &chosen {
            tracing::info!(repository = %root.display(), file = a.file, rule = %l.rule.text, "allow rule approved");
        }
        let approved = chosen
            .into_iter()
            .map(|(mut listed, a)| {
                let already = a.approved;
                if let Some(kept) = listed.approval.as_mut() {
                    kept.approved = true;
                }
                ApprovedRule { listed, already }
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
                            k.name.split_once('\0').is_some_and(|(_, text)| text == w)
                                || (w.len() >= MIN_PREFIX
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
                    Some((file, text)) => (file.to_string(), text.to_string()),
                    None => (String::new(), n),
                })
                .collect(),
        ))
    }
}
