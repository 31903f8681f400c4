//! Agents run by another coding agent over ACP (DESIGN §19): the name of
//! the `[agents.NAME]` entry that runs one, and what its record keeps of
//! the external agent's session.

use std::fmt;

use super::text::quote;

/// The name of an external agent entry (`claude-code`, `codex`, `gemini`,
/// or one of config.toml's `[agents.NAME]`): 1–64 lowercase letters,
/// digits, `-` and `_`, starting with a letter.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ExternalAgentName(String);

impl ExternalAgentName {
    pub fn parse(name: &str) -> Result<ExternalAgentName, String> {
        let ok_chars = name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '-' | '_'));
        let starts_ok = name.chars().next().is_some_and(|c| c.is_ascii_lowercase());
        if name.is_empty() || name.len() > 64 || !ok_chars || !starts_ok {
            return Err(format!(
                "invalid external agent name '{}': use 1-64 lowercase letters, digits, '-' or '_', starting with a letter",
                quote(name)
            ));
        }
        Ok(ExternalAgentName(name.to_string()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ExternalAgentName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The kinds of an external agent's tool calls that no tool of agentd's
/// stands for (ACP's `fetch`, `switch_mode`, `think`, `other`); the rest
/// are gated as the tool they are (`execute` as Bash, `edit` as Edit…).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ExternalToolKind {
    Fetch,
    SwitchMode,
    Think,
    Other,
}

impl ExternalToolKind {
    pub const ALL: [ExternalToolKind; 4] = [
        ExternalToolKind::Fetch,
        ExternalToolKind::SwitchMode,
        ExternalToolKind::Think,
        ExternalToolKind::Other,
    ];

    /// As asks and `always_allowed` name it.
    pub fn as_str(self) -> &'static str {
        match self {
            ExternalToolKind::Fetch => "acp:fetch",
            ExternalToolKind::SwitchMode => "acp:switch_mode",
            ExternalToolKind::Think => "acp:think",
            ExternalToolKind::Other => "acp:other",
        }
    }

    pub fn parse(text: &str) -> Option<ExternalToolKind> {
        Self::ALL.into_iter().find(|k| k.as_str() == text)
    }
}

/// What an external agent's record keeps between runs. Written by its
/// driver (`agent::external`) only, durably, before the step it enables.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExternalRun {
    /// The entry that runs it.
    pub agent: ExternalAgentName,
    /// The external agent's own session id, once `session/new` gave one
    /// (empty before): what `session/load` or `session/resume` reopens.
    pub session_id: String,
    /// Transcript entries below this seq have been sent to the external
    /// agent as prompts (0: none yet). Written before the prompt is sent,
    /// so a restart never sends one twice.
    pub sent_through: u64,
    /// A prompt was sent and its turn has not ended (as far as the
    /// transcript knows): after a crash, the revived session is told its
    /// turn was cut off.
    pub turn_open: bool,
    /// Its agent said (in `initialize`) it can reopen a session in a new
    /// process (`session/load` or `session/resume`).
    pub reopenable: bool,
    /// What its agent said the session has cost (None: it never said).
    pub cost: Option<ReportedCost>,
    /// How full its agent last said its context is (None: it never said).
    pub context: Option<ContextFill>,
}

/// An external agent's context as it reports it (ACP `usage_update`):
/// tokens in it, and tokens its window holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ContextFill {
    pub used: u64,
    /// Never 0.
    pub size: u64,
}

/// The cost an external agent reports (ACP `usage_update`: the session's
/// cumulative cost, in USD), in micro-dollars, summed over the counts it
/// kept: an agent whose new process counts from zero again has each count
/// added.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReportedCost {
    /// The whole cost so far.
    pub total_micros: u64,
    /// The last figure of the count it keeps now.
    pub last_micros: u64,
}

impl ReportedCost {
    /// Takes the next cumulative figure. One lower than the last means the
    /// agent counts anew (a new process that did not keep the count): it
    /// is added whole.
    pub fn observe(&mut self, micros: u64) {
        let added = micros.checked_sub(self.last_micros).unwrap_or(micros);
        self.total_micros = self.total_micros.saturating_add(added);
        self.last_micros = micros;
    }

    pub fn usd(&self) -> f64 {
        self.total_micros as f64 / 1_000_000.0
    }
}

impl ExternalRun {
    pub fn new(agent: ExternalAgentName) -> ExternalRun {
        ExternalRun {
            agent,
            session_id: String::new(),
            sent_through: 0,
            turn_open: false,
            reopenable: false,
            cost: None,
            context: None,
        }
    }

    /// What `list` and `show` print as the agent's model: `acp:NAME`.
    pub fn model_label(&self) -> String {
        format!("acp:{}", self.agent)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reported_costs_add_up_across_counts_that_start_again() {
        let mut c = ReportedCost::default();
        c.observe(250_000);
        c.observe(400_000);
        assert_eq!(c.total_micros, 400_000);
        // A new process counting from zero: its figures are added.
        c.observe(100_000);
        c.observe(150_000);
        assert_eq!(c.total_micros, 550_000);
        assert_eq!(c.last_micros, 150_000);
        // The same figure again adds nothing.
        c.observe(150_000);
        assert_eq!(c.total_micros, 550_000);
        assert!((c.usd() - 0.55).abs() < 1e-12);
        let mut full = ReportedCost {
            total_micros: u64::MAX - 1,
            last_micros: 0,
        };
        full.observe(10);
        assert_eq!(full.total_micros, u64::MAX);
    }

    #[test]
    fn names_are_checked() {
        for ok in ["claude-code", "codex", "gemini", "my_agent2"] {
            assert_eq!(ExternalAgentName::parse(ok).unwrap().as_str(), ok);
        }
        for bad in ["", "Claude", "-x", "2x", "a b", "a/b", &"x".repeat(65)] {
            assert!(ExternalAgentName::parse(bad).is_err(), "{bad:?}");
        }
        for k in ExternalToolKind::ALL {
            assert_eq!(ExternalToolKind::parse(k.as_str()), Some(k));
        }
        assert_eq!(ExternalToolKind::parse("acp:execute"), None);
        let long = "Q".repeat(10_000);
        assert!(ExternalAgentName::parse(&long).unwrap_err().len() < 300);
    }
}
