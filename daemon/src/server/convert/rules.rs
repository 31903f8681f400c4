//! Permission rules (DESIGN §24) to and from the wire: listings,
//! approvals and the selection a request names.

use agentd_shared::proto as pb;

use crate::error::AgentdError;
use crate::supervisor::{ApprovedRule, ListedHook, ListedRule, RuleSelection, RuleSet};

/// The most rules one request names.
const MAX_SELECTED: usize = 256;
/// The longest rule one request names.
const MAX_RULE_BYTES: usize = 4096;

pub fn selection(rules: &[String], all: bool) -> Result<RuleSelection, AgentdError> {
    match (rules.is_empty(), all) {
        (true, true) => Ok(RuleSelection::All),
        (false, true) => Err(AgentdError::invalid("give rules or `all`, not both")),
        (true, false) => Err(AgentdError::invalid(
            "name the rules (as written, or by fingerprint) or ask for `all` of them",
        )),
        (false, false) if rules.len() > MAX_SELECTED => Err(AgentdError::invalid(format!(
            "{} rules given; at most {MAX_SELECTED} at once (or ask for `all`)",
            rules.len()
        ))),
        (false, false) => {
            if let Some(long) = rules.iter().find(|r| r.len() > MAX_RULE_BYTES) {
                return Err(AgentdError::invalid(format!(
                    "a rule of {} bytes was given; rules are at most {MAX_RULE_BYTES}",
                    long.len()
                )));
            }
            Ok(RuleSelection::Named(rules.to_vec()))
        }
    }
}

pub fn listing(set: &RuleSet) -> pb::ListRulesResponse {
    let (mode, source) = match &set.default_mode {
        Some((m, source)) => (super::permission_mode(*m), source.clone()),
        None => (pb::PermissionMode::Unspecified, String::new()),
    };
    pb::ListRulesResponse {
        rules: set
            .rules
            .iter()
            .map(listed)
            .chain(set.hooks.iter().map(listed_hook))
            .collect(),
        default_mode: mode as i32,
        default_mode_source: source,
    }
}

pub fn listed(l: &ListedRule) -> pb::PermissionRule {
    pb::PermissionRule {
        kind: l.rule.kind.as_str().to_string(),
        rule: l.rule.text.clone(),
        source: l.rule.source.clone(),
        applies: l.applies(),
        fingerprint: l
            .approval
            .as_ref()
            .map(|a| a.fingerprint.clone())
            .unwrap_or_default(),
    }
}

pub fn approved(a: &ApprovedRule) -> pb::ApprovedRule {
    pb::ApprovedRule {
        rule: Some(pb::PermissionRule {
            kind: a.kind.to_string(),
            rule: a.text.clone(),
            source: a.source.clone(),
            applies: true,
            fingerprint: a.fingerprint.clone(),
        }),
        already: a.already,
    }
}

/// A hook as `ListRules` lists it: kind "hook".
pub fn listed_hook(h: &ListedHook) -> pb::PermissionRule {
    pb::PermissionRule {
        kind: "hook".into(),
        rule: h.shown(),
        source: h.hook.source.clone(),
        applies: h.applies(),
        fingerprint: h
            .approval
            .as_ref()
            .map(|a| a.fingerprint.clone())
            .unwrap_or_default(),
    }
}

/// A forgotten approval: its file (relative) and the rule.
pub fn revoked((file, rule): (String, String)) -> pb::PermissionRule {
    pb::PermissionRule {
        kind: "allow".into(),
        rule,
        source: file,
        applies: false,
        fingerprint: String::new(),
    }
}
