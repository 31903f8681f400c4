//! Resolving what a user typed to one agent: a full id, a unique id prefix,
//! or a name (DESIGN §2).

use crate::domain::{AgentId, AgentRecord, ShortId};
use crate::error::{AgentdError, quote};
use crate::store::Store;

/// Candidates listed in an "ambiguous" message.
const MAX_LISTED: usize = 5;
/// The longest text that can name an agent (a name: 64 characters).
const MAX_QUERY_BYTES: usize = 64;

/// Resolution order: a full id, then an exact name (the user chose it),
/// then an exact short id (what `list` shows: it always resolves, even
/// where it is also a prefix of another agent's id), then a unique prefix
/// of an id. Names that look like an id prefix are refused at creation, so
/// names and prefixes do not overlap.
pub fn resolve(store: &Store, query: &str) -> Result<AgentRecord, AgentdError> {
    let query = query.trim();
    if query.is_empty() {
        return Err(AgentdError::invalid(
            "an agent id, id prefix or name is required",
        ));
    }
    // Nothing longer, or made of other characters, can name an agent: an
    // id is 36 characters, a name at most 64 of [A-Za-z0-9._-].
    let well_formed = query
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if query.len() > MAX_QUERY_BYTES || !well_formed {
        return Err(AgentdError::invalid(format!(
            "'{}' is not an agent id, id prefix or name: those are at most {MAX_QUERY_BYTES} letters, digits, '.', '_' or '-'",
            quote(query)
        )));
    }
    if let Some(id) = AgentId::parse(query) {
        return store.get_agent(id)?.ok_or_else(|| not_found(query));
    }

    let mut named = Vec::new();
    for id in store.ids_named(query)? {
        named.extend(store.get_agent(id)?);
    }
    if named.len() > 1 {
        // At most one agent holding a name is not yet ended; prefer it.
        let unfinished: Vec<_> = named
            .iter()
            .filter(|r| !r.status.is_terminal())
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
        if let Some(short) = ShortId::from_stored(&hex)
            && let Some(id) = store.agent_by_short_id(&short)?
        {
            return store.get_agent(id)?.ok_or_else(|| {
                AgentdError::NotFound(format!(
                    "agent {short} was removed; `agentctl list --all` shows every agent"
                ))
            });
        }
        let mut matches = store.agents_with_hex_prefix(&hex, MAX_LISTED + 1)?;
        match matches.len() {
            1 => return Ok(matches.remove(0)),
            0 => {}
            _ => return Err(ambiguous(query, "id prefix", &matches)),
        }
    }
    Err(not_found(query))
}

pub(super) fn not_found(query: &str) -> AgentdError {
    AgentdError::NotFound(format!(
        "no agent matches '{}'; `agentctl list --all` shows every agent",
        quote(query)
    ))
}

fn ambiguous(query: &str, what: &str, candidates: &[AgentRecord]) -> AgentdError {
    let listed: Vec<String> = candidates
        .iter()
        .take(MAX_LISTED)
        .map(|r| format!("{} ({})", r.short_id, r.status))
        .collect();
    let more = if candidates.len() > MAX_LISTED {
        ", …"
    } else {
        ""
    };
    AgentdError::invalid(format!(
        "the {what} '{}' is ambiguous: it matches {}{more}; give more of the id",
        quote(query),
        listed.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{Status, now_ms};
    use crate::store::StoreOptions;

    fn put(store: &Store, id: &str, short_len: usize, name: &str, status: Status) -> AgentId {
        let id = AgentId::parse(id).unwrap();
        let mut r = AgentRecord::new(id, id.short_prefix(short_len), now_ms());
        r.name = name.into();
        r.status = status;
        store.put_agent(&r).unwrap();
        id
    }

    fn open() -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), StoreOptions::default()).unwrap();
        (dir, store)
    }

    #[test]
    fn ids_prefixes_and_names_resolve_or_fail_clearly() {
        let (_dir, store) = open();
        let a = put(
            &store,
            "0190aaaa-0000-7000-8000-000000000001",
            8,
            "builder",
            Status::Running,
        );
        let b = put(
            &store,
            "0190aabb-0000-7000-8000-000000000002",
            8,
            "",
            Status::Completed,
        );
        store.index_name_for_tests("builder", a);
        assert_eq!(resolve(&store, &a.to_string()).unwrap().id, a);
        assert_eq!(resolve(&store, "0190aab").unwrap().id, b);
        assert_eq!(resolve(&store, "0190-aaa").unwrap().id, a);
        assert_eq!(resolve(&store, "builder").unwrap().id, a);
        let err = resolve(&store, "0190aa").unwrap_err();
        assert!(
            matches!(&err, AgentdError::Invalid(m) if m.contains("ambiguous")),
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
    fn a_shown_short_id_resolves_even_when_it_prefixes_other_ids() {
        let (_dir, store) = open();
        // Upgraded schema-1 agents whose first eight digits are shared got
        // longer short ids; each resolves, and the shared part is ambiguous.
        let a = put(
            &store,
            "019ad1f2-aa00-7000-8000-000000000001",
            9,
            "",
            Status::Completed,
        );
        let b = put(
            &store,
            "019ad1f2-bb00-7000-8000-000000000002",
            9,
            "",
            Status::Completed,
        );
        let trees = store.agents().unwrap();
        for r in &trees {
            // put() bypasses issuing; register the short ids as an upgrade would.
            store.reserve_short_id_for_tests(&r.short_id, r.id);
        }
        assert_eq!(resolve(&store, "019ad1f2a").unwrap().id, a);
        assert_eq!(resolve(&store, "019ad1f2b").unwrap().id, b);
        assert!(matches!(
            resolve(&store, "019ad1f2"),
            Err(AgentdError::Invalid(_))
        ));
    }

    #[test]
    fn a_malformed_query_is_an_invalid_argument_quoted_short() {
        let (_dir, store) = open();
        for q in ["z".repeat(100_000), "a b".into(), "../x".into(), "é".into()] {
            let err = resolve(&store, &q).unwrap_err();
            assert!(matches!(err, AgentdError::Invalid(_)), "{q:.20}: {err}");
            assert!(err.to_string().len() < 300, "{}", err.to_string().len());
        }
        // Well formed but unknown stays NOT_FOUND.
        assert!(matches!(
            resolve(&store, &"z".repeat(64)),
            Err(AgentdError::NotFound(_))
        ));
    }

    #[test]
    fn a_reused_name_prefers_the_unfinished_agent() {
        let (_dir, store) = open();
        let ids = [
            "a190aaaa-0000-4000-8000-000000000001",
            "a190aaab-0000-4000-8000-000000000001",
            "a190aaac-0000-4000-8000-000000000001",
            "a190aaad-0000-4000-8000-000000000001",
        ];
        put(&store, ids[0], 8, "job", Status::Completed);
        let live = put(&store, ids[1], 8, "job", Status::Running);
        for (id, name) in [
            (ids[0], "job"),
            (ids[1], "job"),
            (ids[2], "old"),
            (ids[3], "old"),
        ] {
            store.index_name_for_tests(name, AgentId::parse(id).unwrap());
        }
        assert_eq!(resolve(&store, "job").unwrap().id, live);
        put(&store, ids[2], 8, "old", Status::Completed);
        put(&store, ids[3], 8, "old", Status::Failed);
        assert!(matches!(
            resolve(&store, "old"),
            Err(AgentdError::Invalid(_))
        ));
    }
}
