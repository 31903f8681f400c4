//! What a permission rule decided of one tool call (DESIGN §24), recorded
//! beside the call's result in the transcript, so `log`, `attach` and an
//! editor show "denied by Bash(rm:*) in ~/.claude/settings.json" after a
//! restart as they did live.

use std::fmt;

/// What the rule made of the call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RuleVerdict {
    /// An allow rule let it run without asking.
    Allowed,
    /// An ask rule (or a command that cannot be taken apart safely) asked.
    Asked,
    /// A deny rule refused it: it did not run.
    Denied,
}

impl RuleVerdict {
    pub fn as_str(self) -> &'static str {
        match self {
            RuleVerdict::Allowed => "allowed",
            RuleVerdict::Asked => "asked",
            RuleVerdict::Denied => "denied",
        }
    }
}

/// One rule's decision of one call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuleDecision {
    /// The id of the tool_use block (or an external agent's tool call)
    /// whose result is in the same entry.
    pub tool_use_id: String,
    pub verdict: RuleVerdict,
    /// The rule as written (`Bash(rm:*)`); for a command asked because it
    /// cannot be taken apart safely, why.
    pub rule: String,
    /// The file the rule came from (`~/.claude/settings.json`); empty when
    /// no one rule decided (a command that cannot be taken apart).
    pub source: String,
}

impl fmt::Display for RuleDecision {
    /// "denied by Bash(rm:*) in ~/.claude/settings.json".
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.source.is_empty() {
            write!(f, "{}: {}", self.verdict.as_str(), self.rule)
        } else {
            write!(
                f,
                "{} by {} in {}",
                self.verdict.as_str(),
                self.rule,
                self.source
            )
        }
    }
}
