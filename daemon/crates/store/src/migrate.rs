//! Schema versions and upgrades. A store written by an older agentd is
//! upgraded in place when opened; one written by a newer agentd is refused.
//!
//! - 1 (agentd 0.1): records, transcripts, prompts, inboxes.
//! - 2: every record carries a unique short id (`domain::id`), the
//!   `names`, `children` and `short_ids` indexes exist, and each record
//!   carries its transcript's length. Upgrading gives each
//!   agent the shortest prefix of its id, at least eight hex digits, that no
//!   other agent's id shares (schema-1 ids are time-ordered, so agents made
//!   in the same minute share their first eight digits), and builds the
//!   indexes. It is idempotent: a crash midway reruns it on the next open.

use std::path::Path;

use super::{StoreError, codec};
use crate::domain::{AgentId, SHORT_ID_LEN};

pub(super) const SCHEMA_KEY: &[u8] = b"schema_version";
const INSTANCE_KEY: &[u8] = b"store_id";

/// The store's own id, made on first use.
pub(super) fn instance_id(db: &sled::Db) -> Result<String, StoreError> {
    let meta = db.open_tree("meta")?;
    if let Some(v) = meta.get(INSTANCE_KEY)? {
        return Ok(String::from_utf8_lossy(&v).into_owned());
    }
    let id = uuid::Uuid::new_v4().to_string();
    meta.insert(INSTANCE_KEY, id.as_bytes())?;
    db.flush()?;
    Ok(id)
}

pub(super) fn upgrade(db: &sled::Db, path: &Path) -> Result<(), StoreError> {
    let meta = db.open_tree("meta")?;
    let found = match meta.get(SCHEMA_KEY)? {
        // A new store.
        None if db.open_tree("v1/agents")?.is_empty() => {
            meta.insert(SCHEMA_KEY, &super::SCHEMA_VERSION.to_be_bytes())?;
            db.flush()?;
            return Ok(());
        }
        None => 1,
        Some(v) => v
            .as_ref()
            .try_into()
            .map(u32::from_be_bytes)
            .unwrap_or(u32::MAX),
    };
    if found > super::SCHEMA_VERSION {
        return Err(StoreError::TooNew {
            path: path.to_path_buf(),
            found,
            supported: super::SCHEMA_VERSION,
        });
    }
    if found < 2 {
        let agents = to_v2(db)?;
        tracing::info!(
            agents,
            "upgraded the store to schema 2 (unique short ids, name and parent indexes)"
        );
        // Last, once everything else is in: a crash before reruns it.
        meta.insert(SCHEMA_KEY, &super::SCHEMA_VERSION.to_be_bytes())?;
        db.flush()?;
    }
    // A current store is opened without writing (also on a full disk).
    Ok(())
}

/// Hex digits two ids have in common at the start.
fn common_hex_digits(a: &AgentId, b: &AgentId) -> usize {
    let (a, b) = (a.hex(), b.hex());
    a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count()
}

fn to_v2(db: &sled::Db) -> Result<usize, StoreError> {
    let agents = db.open_tree("v1/agents")?;
    let names = db.open_tree("v1/names")?;
    let children = db.open_tree("v1/children")?;
    let short_ids = db.open_tree("v1/short_ids")?;
    let transcripts = db.open_tree("v1/transcripts")?;
    // Records in key order, i.e. ids sorted like their hex form: an id's
    // nearest neighbours are the ones it shares the most digits with.
    let mut records = Vec::new();
    for item in agents.iter() {
        let (key, bytes) = item?;
        match codec::decode_agent(&bytes) {
            Ok(r) => records.push(r),
            // Left in place; reads skip and count it like any corrupt item.
            Err(e) => {
                tracing::error!(key = %super::hex(&key), error = %e, "corrupt record left out of the upgrade")
            }
        }
    }
    for i in 0..records.len() {
        let id = records[i].id;
        let mut shared = 0;
        if i > 0 {
            shared = shared.max(common_hex_digits(&id, &records[i - 1].id));
        }
        if let Some(next) = records.get(i + 1) {
            shared = shared.max(common_hex_digits(&id, &next.id));
        }
        let short = id.short_prefix((shared + 1).max(SHORT_ID_LEN));
        short_ids.insert(short.as_str().as_bytes(), id.as_bytes())?;
        records[i].short_id = short;
    }
    for r in &mut records {
        r.transcript_len = super::transcript::scan_len(&transcripts, r.id)?;
    }
    for r in &records {
        agents.insert(r.id.as_bytes(), codec::encode_agent(r))?;
        if !r.name.is_empty() {
            names.insert(super::agents::name_key(&r.name, r.id), &[])?;
        }
        if let Some(parent) = r.parent {
            children.insert(super::agents::child_key(parent, r.id), &[])?;
        }
    }
    Ok(records.len())
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;
    use crate::domain::{AgentRecord, ShortId, Status};

    /// Writes a schema-1 store the way agentd 0.1 did: time-ordered ids, no
    /// short ids, no indexes, `schema_version` 1.
    fn write_v1_store(dir: &Path, ids: &[AgentId], parent_of_last: bool) {
        let db = sled::open(dir.join("store")).unwrap();
        db.open_tree("meta")
            .unwrap()
            .insert(SCHEMA_KEY, &1u32.to_be_bytes())
            .unwrap();
        let agents = db.open_tree("v1/agents").unwrap();
        let transcripts = db.open_tree("v1/transcripts").unwrap();
        for seq in 0..3u64 {
            let mut key = ids[0].as_bytes().to_vec();
            key.extend_from_slice(&seq.to_be_bytes());
            transcripts.insert(key, &b"x"[..]).unwrap();
        }
        for (i, id) in ids.iter().enumerate() {
            let mut r = AgentRecord::new(*id, ShortId::default(), 1_000);
            r.name = format!("job-{i}");
            r.status = Status::Completed;
            if parent_of_last && i == ids.len() - 1 {
                r.parent = Some(ids[0]);
            }
            agents
                .insert(id.as_bytes(), codec::encode_agent(&r))
                .unwrap();
        }
        db.flush().unwrap();
    }

    #[test]
    fn upgrading_a_burst_of_v7_ids_gives_distinct_resolvable_short_ids() {
        let dir = tempfile::tempdir().unwrap();
        // Twenty agents created in one burst share their time-ordered prefix.
        let ids: Vec<AgentId> = (0..20)
            .map(|_| AgentId::from_uuid(uuid::Uuid::now_v7()))
            .collect();
        assert!(ids.iter().all(|id| id.hex()[..8] == ids[0].hex()[..8]));
        write_v1_store(dir.path(), &ids, true);

        let store = crate::reopen_for_tests(dir.path());
        let records = store.agents().unwrap();
        assert_eq!(records.len(), 20);
        let shorts: HashSet<String> = records
            .iter()
            .map(|r| r.short_id.as_str().to_string())
            .collect();
        assert_eq!(shorts.len(), 20, "every agent has its own short id");
        for r in &records {
            assert!(r.id.hex().starts_with(r.short_id.as_str()));
            assert!(r.short_id.as_str().len() >= SHORT_ID_LEN);
            assert_eq!(store.agent_by_short_id(&r.short_id).unwrap(), Some(r.id));
            assert_eq!(store.ids_named(&r.name).unwrap(), vec![r.id]);
        }
        assert_eq!(store.children_of(ids[0]).unwrap(), vec![ids[19]]);
        assert_eq!(
            store.transcript_len(ids[0]).unwrap(),
            3,
            "lengths are indexed too"
        );
        assert_eq!(store.transcript_len(ids[1]).unwrap(), 0);
        drop(store);
        // Opening again changes nothing.
        let store = crate::reopen_for_tests(dir.path());
        let again: HashSet<String> = store
            .agents()
            .unwrap()
            .iter()
            .map(|r| r.short_id.as_str().to_string())
            .collect();
        assert_eq!(again, shorts);
    }
}
