//! The values a fork is made of (DESIGN §6): how much history it keeps,
//! which tools it may run, and where it came from.

use std::fmt;

use super::ToolAllowlist;

/// The `subagent_type` of a fork.
pub const FORK_TYPE: &str = "fork";
/// Model turns a fork may take.
pub const FORK_MAX_TURNS: u32 = 200;

/// Who started an agent's run of queries; a fork's source is what the
/// first layer of the recursion guard checks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum QuerySource {
    /// Started by a client (`agentctl run`, `CreateAgent`).
    #[default]
    Client,
    /// A subagent started by another agent's `Agent` call.
    Subagent,
    /// A fork (`agent:builtin:fork`): from an `Agent` call or `ForkAgent`.
    Fork,
}

impl QuerySource {
    pub fn as_str(self) -> &'static str {
        match self {
            QuerySource::Client => "client",
            QuerySource::Subagent => "agent:subagent",
            QuerySource::Fork => "agent:builtin:fork",
        }
    }
}

/// How much of the parent's history a fork keeps (`fork_turns`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum ForkTurns {
    /// Everything (the default): the whole prefix is the parent's bytes.
    #[default]
    All,
    /// From the Nth-last real user turn on.
    Last(u32),
}

impl ForkTurns {
    /// `"all"`, empty (all), or a positive integer.
    pub fn parse(text: &str) -> Result<ForkTurns, String> {
        match text.trim() {
            "" | "all" => Ok(ForkTurns::All),
            t => match t.parse::<u32>() {
                Ok(0) => {
                    Err("fork_turns must be \"all\" or a positive number of turns, not 0".into())
                }
                Ok(n) => Ok(ForkTurns::Last(n)),
                Err(_) => Err(format!(
                    "fork_turns must be \"all\" or a positive number of turns, not '{}'",
                    super::text::quote(t)
                )),
            },
        }
    }
}

impl fmt::Display for ForkTurns {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ForkTurns::All => f.write_str("all"),
            ForkTurns::Last(n) => write!(f, "{n}"),
        }
    }
}

/// Which tools a fork asks to run, narrowing its parent's.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub enum ForkTools {
    /// Its parent's tools.
    #[default]
    Parent,
    /// Only these of its parent's (`fork_tools`).
    Only(ToolAllowlist),
    /// The tools of the named fork profile (`fork_profile`), read from the
    /// repository the parent works in.
    Profile(String),
}

impl ForkTools {
    /// A request's `fork_tools` (None: absent) and `fork_profile` (empty:
    /// absent); giving both is refused.
    pub fn parse(list: Option<&[String]>, profile: &str) -> Result<ForkTools, String> {
        match (list, profile) {
            (Some(_), p) if !p.is_empty() => {
                Err("fork_tools and fork_profile cannot be combined: give one".into())
            }
            (Some(list), _) => ToolAllowlist::parse(list).map(ForkTools::Only),
            (None, "") => Ok(ForkTools::Parent),
            (None, p) => Ok(ForkTools::Profile(p.to_string())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fork_turns_are_all_or_a_positive_count() {
        assert_eq!(ForkTurns::parse("all").unwrap(), ForkTurns::All);
        assert_eq!(ForkTurns::parse("").unwrap(), ForkTurns::All);
        assert_eq!(ForkTurns::parse("3").unwrap(), ForkTurns::Last(3));
        assert!(ForkTurns::parse("0").unwrap_err().contains("not 0"));
        assert!(ForkTurns::parse("-2").is_err());
        assert!(ForkTurns::parse("some").is_err());
    }
}
