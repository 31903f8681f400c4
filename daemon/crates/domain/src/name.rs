//! An agent's name: what people call it instead of its id.

use std::fmt;

use super::text::quote;

/// 1–64 letters, digits, `.`, `_`, `-`, starting with a letter or digit,
/// and never something that reads as an id or id prefix (only hex digits
/// and hyphens), which would shadow that agent.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct AgentName(String);

impl AgentName {
    pub fn parse(name: &str) -> Result<AgentName, String> {
        let ok_chars = name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
        let starts_ok = name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphanumeric());
        if name.len() > 64 || !ok_chars || !starts_ok {
            return Err(format!(
                "invalid agent name '{}': use 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit",
                quote(name)
            ));
        }
        if agentd_shared::ids::looks_like_id_prefix(name) {
            return Err(format!(
                "invalid agent name '{name}': it reads as an agent id or id prefix (only hex digits and '-'); add a letter beyond a-f"
            ));
        }
        Ok(AgentName(name.to_string()))
    }

    /// A name as a request carries it: empty means none.
    pub fn parse_optional(name: &str) -> Result<Option<AgentName>, String> {
        if name.is_empty() {
            Ok(None)
        } else {
            AgentName::parse(name).map(Some)
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for AgentName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<AgentName> for String {
    fn from(name: AgentName) -> String {
        name.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked() {
        assert!(AgentName::parse("build-bot_2.x").is_ok());
        assert!(AgentName::parse("-x").is_err());
        assert!(AgentName::parse("has space").is_err());
        assert!(AgentName::parse("").is_err());
        assert!(AgentName::parse(&"a".repeat(65)).is_err());
        assert!(AgentName::parse("0190aaaa-0000-7000-8000-000000000001").is_err());
        for looks_like_an_id in ["cafe", "deadbeef", "0190", "a-b-c", "3f2a1b9c"] {
            assert!(
                AgentName::parse(looks_like_an_id).is_err(),
                "{looks_like_an_id}"
            );
        }
        assert!(AgentName::parse("cafes").is_ok());
        assert_eq!(AgentName::parse_optional("").unwrap(), None);
        assert_eq!(
            AgentName::parse_optional("scout")
                .unwrap()
                .map(String::from),
            Some("scout".to_string())
        );
    }
}
