//! What an editor is told about a session besides its conversation: its
//! title (the agent's name, else its description, which the daemon takes
//! from the first prompt), sent as `session_info_update` when it changes,
//! and its place in `session/list`.
//!
//! `session/list` gives the editor's sessions (top-level agents), most
//! recently active first, in pages. A page ends with a cursor naming the
//! last session it holds (by its place in that order, not by its index), so
//! a session created between two pages does not shift the next one; a
//! cursor this bridge did not give is refused, not read as "from the start".

use agentd_shared::proto as pb;
use serde_json::{Value, json};

use super::peer::RpcError;

/// Sessions per page.
pub const PAGE: usize = 50;

/// Where a page starts: after the session with this activity time and id.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Cursor {
    updated_ms: u64,
    id: String,
}

/// What cursors start with; a later format would take another.
const CURSOR_PREFIX: &str = "v1.";

impl Cursor {
    /// The order key: larger is newer.
    fn key(&self) -> (u64, &str) {
        (self.updated_ms, &self.id)
    }

    fn encode(&self) -> String {
        format!("{CURSOR_PREFIX}{}.{}", self.updated_ms, self.id)
    }

    fn decode(s: &str) -> Result<Cursor, RpcError> {
        let parsed = s.strip_prefix(CURSOR_PREFIX).and_then(|rest| {
            let (ms, id) = rest.split_once('.')?;
            let updated_ms = ms.parse().ok()?;
            let is_id = id.len() == 36 && agentd_shared::ids::looks_like_id_prefix(id);
            is_id.then(|| Cursor {
                updated_ms,
                id: id.to_string(),
            })
        });
        parsed.ok_or_else(|| {
            RpcError::invalid_params(format!(
                "`cursor` {:?} is not one session/list gave: pass the `nextCursor` of an earlier answer, or no cursor for the first page",
                s.chars().take(48).collect::<String>()
            ))
        })
    }
}

/// Milliseconds since the epoch of an agent's last activity.
fn updated_ms(agent: &pb::Agent) -> u64 {
    agent.updated_at.as_ref().map_or(0, |t| {
        let ms = i128::from(t.seconds) * 1000 + i128::from(t.nanos) / 1_000_000;
        u64::try_from(ms).unwrap_or(0)
    })
}

/// One page of `agents`' top-level sessions (in `cwd` if given) from
/// `cursor`: the `session/list` answer.
pub fn page(
    agents: &[pb::Agent],
    cwd: Option<&str>,
    cursor: Option<&str>,
) -> Result<Value, RpcError> {
    let after = cursor.map(Cursor::decode).transpose()?;
    let mut sessions: Vec<(Cursor, &pb::Agent)> = agents
        .iter()
        .filter(|a| a.parent_id.is_empty())
        .filter(|a| cwd.is_none_or(|c| a.cwd == c))
        .map(|a| {
            let key = Cursor {
                updated_ms: updated_ms(a),
                id: a.id.clone(),
            };
            (key, a)
        })
        .collect();
    // Newest first; ids break ties so the order is total.
    sessions.sort_by(|(a, _), (b, _)| b.key().cmp(&a.key()));
    let start = match &after {
        None => 0,
        Some(c) => sessions.partition_point(|(k, _)| k.key() >= c.key()),
    };
    let rest = &sessions[start..];
    let shown = &rest[..rest.len().min(PAGE)];
    let mut answer = json!({
        "sessions": shown.iter().map(|(_, a)| info(a)).collect::<Vec<_>>(),
    });
    if rest.len() > PAGE
        && let Some((last, _)) = shown.last()
    {
        answer["nextCursor"] = json!(last.encode());
    }
    Ok(answer)
}

/// The session's title: its name, else its description; None when it has
/// neither yet (a session nobody has prompted).
pub fn title(agent: &pb::Agent) -> Option<&str> {
    [&agent.name, &agent.description]
        .into_iter()
        .find(|s| !s.is_empty())
        .map(String::as_str)
}

/// The `session_info_update` that gives the editor `title`.
pub fn title_update(title: &str, agent: &pb::Agent) -> Value {
    let mut u = json!({"sessionUpdate": "session_info_update", "title": title});
    if let Some(at) = super::iso8601(agent.updated_at.as_ref()) {
        u["updatedAt"] = json!(at);
    }
    u
}

fn info(agent: &pb::Agent) -> Value {
    let mut s = json!({"sessionId": agent.id, "cwd": agent.cwd});
    if let Some(title) = title(agent) {
        s["title"] = json!(title);
    }
    if let Some(at) = super::iso8601(agent.updated_at.as_ref()) {
        s["updatedAt"] = json!(at);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn agent(n: u32, updated_secs: i64) -> pb::Agent {
        pb::Agent {
            id: format!("019ad1f2-3b00-7000-8000-{n:012}"),
            cwd: "/w".into(),
            description: format!("task {n}"),
            updated_at: Some(prost_types::Timestamp {
                seconds: updated_secs,
                nanos: 0,
            }),
            ..Default::default()
        }
    }

    fn ids(page: &Value) -> Vec<String> {
        page["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["sessionId"].as_str().unwrap().to_string())
            .collect()
    }

    #[test]
    fn pages_go_newest_first_and_cover_every_session_once() {
        // Some share an activity time: the id orders them.
        let agents: Vec<pb::Agent> = (0..(PAGE as u32 * 2 + 3))
            .map(|n| agent(n, 1_000 + i64::from(n / 2)))
            .collect();
        let mut seen = Vec::new();
        let mut cursor: Option<String> = None;
        let mut pages = 0;
        loop {
            let p = page(&agents, Some("/w"), cursor.as_deref()).unwrap();
            pages += 1;
            seen.extend(ids(&p));
            match p.get("nextCursor") {
                Some(c) => cursor = Some(c.as_str().unwrap().to_string()),
                None => break,
            }
        }
        assert_eq!(pages, 3);
        let mut expected: Vec<String> = agents.iter().rev().map(|a| a.id.clone()).collect();
        assert_eq!(seen, expected);
        expected.sort();
        expected.dedup();
        assert_eq!(expected.len(), agents.len());
    }

    #[test]
    fn a_cursor_not_given_by_the_bridge_is_refused() {
        let agents = vec![agent(1, 5)];
        for bogus in [
            "",
            "bogus",
            "v1.",
            "v1.12.not-an-id",
            "v2.12.019ad1f2-3b00-7000-8000-000000000001",
            "v1.x.019ad1f2-3b00-7000-8000-000000000001",
        ] {
            let e = page(&agents, None, Some(bogus)).unwrap_err();
            assert_eq!(
                e.code,
                super::super::peer::code::INVALID_PARAMS,
                "{bogus:?}"
            );
        }
        let long = "v".repeat(100_000);
        let e = page(&agents, None, Some(&long)).unwrap_err();
        assert!(e.message.len() < 300, "{}", e.message.len());
    }

    #[test]
    fn other_directories_and_subagents_are_not_sessions() {
        let mut child = agent(2, 9);
        child.parent_id = agent(1, 5).id;
        let mut elsewhere = agent(3, 9);
        elsewhere.cwd = "/elsewhere".into();
        let agents = vec![agent(1, 5), child, elsewhere];
        assert_eq!(
            ids(&page(&agents, Some("/w"), None).unwrap()),
            [agent(1, 5).id]
        );
        assert_eq!(
            page(&agents, None, None).unwrap()["sessions"]
                .as_array()
                .unwrap()
                .len(),
            2
        );
    }

    #[test]
    fn a_session_without_a_description_has_no_title() {
        let mut a = agent(1, 5);
        a.description.clear();
        assert_eq!(title(&a), None);
        assert!(info(&a).get("title").is_none());
        a.name = "named".into();
        assert_eq!(title(&a), Some("named"));
    }
}
