//! What a permission rule decided of a tool call
//! (`TranscriptEntry.rule_decisions`), as `log`, `attach` and the ACP
//! bridge show it: "denied by Bash(rm:*) in ~/.claude/settings.json". A
//! rule and a file name come from files a cloned repository can hold:
//! their control characters are made visible.

use agentd_shared::proto as pb;
use serde::Serialize;

use agentd_shared::visible;

pub fn verdict_name(verdict: i32) -> &'static str {
    use pb::rule_decision::Verdict;
    match Verdict::try_from(verdict).unwrap_or_default() {
        Verdict::Allowed => "allowed",
        Verdict::Asked => "asked",
        Verdict::Denied => "denied",
        Verdict::Unspecified => "decided",
    }
}

/// One line: "denied by RULE in FILE" (or "asked: WHY" when no one rule
/// decided).
pub fn line(d: &pb::RuleDecision) -> String {
    let verdict = verdict_name(d.verdict);
    let rule = visible::line(&d.rule);
    if d.source.is_empty() {
        format!("{verdict}: {rule}")
    } else {
        format!("{verdict} by {rule} in {}", visible::line(&d.source))
    }
}

/// The decisions of the call `tool_use_id`, each as a line.
pub fn lines_for<'a>(
    decisions: &'a [pb::RuleDecision],
    tool_use_id: &'a str,
) -> impl Iterator<Item = String> + 'a {
    decisions
        .iter()
        .filter(move |d| d.tool_use_id == tool_use_id)
        .map(line)
}

/// A decision as `log --json` prints it.
#[derive(Debug, Serialize)]
pub struct RuleDecisionJson<'a> {
    pub tool_use_id: &'a str,
    pub verdict: &'static str,
    pub rule: &'a str,
    pub source: &'a str,
}

impl<'a> RuleDecisionJson<'a> {
    pub fn of(d: &'a pb::RuleDecision) -> Self {
        RuleDecisionJson {
            tool_use_id: &d.tool_use_id,
            verdict: verdict_name(d.verdict),
            rule: &d.rule,
            source: &d.source,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_decision_reads_as_the_rule_and_its_file_with_controls_visible() {
        let d = pb::RuleDecision {
            tool_use_id: "t1".into(),
            verdict: pb::rule_decision::Verdict::Denied as i32,
            rule: "Bash(rm:*)".into(),
            source: "~/.claude/settings.json".into(),
        };
        assert_eq!(line(&d), "denied by Bash(rm:*) in ~/.claude/settings.json");
        let odd = pb::RuleDecision {
            rule: "Bash(x\u{1b}[2J)".into(),
            source: String::new(),
            verdict: pb::rule_decision::Verdict::Asked as i32,
            ..d.clone()
        };
        let shown = line(&odd);
        assert!(!shown.contains('\u{1b}'), "{shown:?}");
        assert!(shown.starts_with("asked: "), "{shown}");
        assert_eq!(lines_for(&[d.clone(), odd], "t1").count(), 2);
        assert_eq!(lines_for(&[d], "t2").count(), 0);
    }
}
