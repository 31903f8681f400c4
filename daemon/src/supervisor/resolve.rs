//! Resolving what a user typed to one agent: a full id, a unique id prefix,
//! or a name (DESIGN §2).

use uuid::Uuid;

use crate::error::AgentdError;
use crate::store::{AgentRecord, Store};

/// Candidates listed in an "ambiguous" message.
const MAX_LISTED: usize = 5;

pub fn resolve(store: &Store, query: &str) -> Result<AgentRecord, AgentdError> {
    let query = query.trim();
    if query.is_empty() {
        return Err(AgentdError::invalid(
            "an agent id, id prefix or name is required",
        ));
    }
    if let Ok(id) = Uuid::parse_str(query) {
        return store.get_agent(id)?.ok_or_else(|| not_found(query));
    }

    // An exact name wins over an id prefix: the user chose it.
    let mut named = Vec::new();
    for record in store.agents() {
        let record = record?;
        if record.name == query {
            named.push(record);
        }
    }
    if named.len() > 1 {
        // At most one agent holding a name is not yet ended; prefer it.
        let unfinished: Vec<_> = named
            .iter()
            .filter(|r| !r.status().is_terminal())
            .cloned()
            .collect();
        if unfinished.len() == 1 {
            named = unfinished;
        }
    }
    match named.len() {
        1 => return Ok(named.remove(0)),
        0 => {}
        _ => return Err(ambiguous(query, "name", &named)),
    }

    if agentd_shared::ids::looks_like_id_prefix(query) {
        let hex: String = query
            .chars()
            .filter(|c| *c != '-')
            .map(|c| c.to_ascii_lowercase())
            .collect();
        let mut matches = Vec::new();
        for record in store.agents_with_hex_prefix(&hex).take(MAX_LISTED + 1) {
            matches.push(record?);
        }
        match matches.len() {
            1 => return Ok(matches.remove(0)),
            0 => {}
            _ => return Err(ambiguous(query, "id prefix", &matches)),
        }
    }
    Err(not_found(query))
}

fn not_found(query: &str) -> AgentdError {
    AgentdError::NotFound(format!(
        "no agent matches '{query}'; `agentctl list --all` shows every agent"
    ))
}

fn ambiguous(query: &str, what: &str, candidates: &[AgentRecord]) -> AgentdError {
    let listed: Vec<String> = candidates
        .iter()
        .take(MAX_LISTED)
        .map(|r| format!("{} ({})", r.uuid(), r.status().as_str()))
        .collect();
    let more = if candidates.len() > MAX_LISTED {
        ", …"
    } else {
        ""
    };
    AgentdError::invalid(format!(
        "the {what} '{query}' is ambiguous: it matches {}{more}; give more of the id",
        listed.join(", ")
    ))
}

/// Names: 1–64 characters of letters, digits, `.`, `_`, `-`, starting with
/// a letter or digit, and not themselves a UUID.
pub fn validate_name(name: &str) -> Result<(), AgentdError> {
    let ok_chars = name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    let starts_ok = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphanumeric());
    if name.len() > 64 || !ok_chars || !starts_ok {
        return Err(AgentdError::invalid(format!(
            "invalid agent name '{name}': use 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit"
        )));
    }
    if Uuid::parse_str(name).is_ok() {
        return Err(AgentdError::invalid(format!(
            "invalid agent name '{name}': a name cannot be a UUID"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Status;

    fn put(store: &Store, id: &str, name: &str, status: Status) -> Uuid {
        let id = Uuid::parse_str(id).unwrap();
        let mut r = AgentRecord {
            id: id.as_bytes().to_vec(),
            name: name.into(),
            ..Default::default()
        };
        r.set_status(status);
        store.put_agent(&r).unwrap();
        id
    }

    #[test]
    fn ids_prefixes_and_names_resolve_or_fail_clearly() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let a = put(
            &store,
            "0190aaaa-0000-7000-8000-000000000001",
            "builder",
            Status::Running,
        );
        let b = put(
            &store,
            "0190aabb-0000-7000-8000-000000000002",
            "",
            Status::Completed,
        );
        assert_eq!(resolve(&store, &a.to_string()).unwrap().uuid(), a);
        assert_eq!(resolve(&store, "0190aab").unwrap().uuid(), b);
        assert_eq!(resolve(&store, "0190-aaa").unwrap().uuid(), a);
        assert_eq!(resolve(&store, "builder").unwrap().uuid(), a);
        let err = resolve(&store, "0190aa").unwrap_err();
        assert!(
            matches!(&err, AgentdError::InvalidArgument(m) if m.contains("ambiguous")),
            "{err}"
        );
        assert!(matches!(
            resolve(&store, "ffff"),
            Err(AgentdError::NotFound(_))
        ));
        assert!(matches!(
            resolve(&store, "nobody"),
            Err(AgentdError::NotFound(_))
        ));
        assert!(matches!(
            resolve(&store, "0190aaaa-0000-7000-8000-00000000ffff"),
            Err(AgentdError::NotFound(_))
        ));
    }

    #[test]
    fn a_reused_name_prefers_the_unfinished_agent() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        put(
            &store,
            "0190aaaa-0000-7000-8000-000000000001",
            "job",
            Status::Completed,
        );
        let live = put(
            &store,
            "0190aaab-0000-7000-8000-000000000001",
            "job",
            Status::Running,
        );
        assert_eq!(resolve(&store, "job").unwrap().uuid(), live);
        put(
            &store,
            "0190aaac-0000-7000-8000-000000000001",
            "old",
            Status::Completed,
        );
        put(
            &store,
            "0190aaad-0000-7000-8000-000000000001",
            "old",
            Status::Failed,
        );
        assert!(matches!(
            resolve(&store, "old"),
            Err(AgentdError::InvalidArgument(_))
        ));
    }

    #[test]
    fn names_are_validated() {
        assert!(validate_name("build-bot_2.x").is_ok());
        assert!(validate_name("-x").is_err());
        assert!(validate_name("has space").is_err());
        assert!(validate_name(&"a".repeat(65)).is_err());
        assert!(validate_name("0190aaaa-0000-7000-8000-000000000001").is_err());
    }
}
