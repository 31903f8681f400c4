//! Agent records and the indexes that find them: by short id, by name and
//! by parent, so that resolving a name or listing an agent's descendants
//! never reads every record.

use super::{Store, StoreError, Trees, TreesHandle, codec, prefixed};
use crate::domain::{AgentId, AgentRecord, SHORT_ID_LEN, ShortId, Status};

/// `v1/names` key: the name, a 0 byte (names never contain one), the id.
pub(super) fn name_key(name: &str, id: AgentId) -> Vec<u8> {
    let mut key = Vec::with_capacity(name.len() + 17);
    key.extend_from_slice(name.as_bytes());
    key.push(0);
    key.extend_from_slice(id.as_bytes());
    key
}

/// `v1/children` key: parent id ++ child id.
pub(super) fn child_key(parent: AgentId, child: AgentId) -> Vec<u8> {
    prefixed(parent, child.as_bytes())
}

/// The id range whose hex form starts with `hex_prefix` (lowercase hex
/// digits only): big-endian id bytes sort like their hex form.
fn hex_range(hex_prefix: &str) -> ([u8; 16], [u8; 16]) {
    let mut lo = [0u8; 16];
    let mut hi = [0xffu8; 16];
    for (i, c) in hex_prefix.chars().take(32).enumerate() {
        let nibble = c.to_digit(16).unwrap_or(0) as u8;
        let (byte, shift) = (i / 2, if i % 2 == 0 { 4 } else { 0 });
        lo[byte] = (lo[byte] & !(0xf << shift)) | (nibble << shift);
        hi[byte] = (hi[byte] & !(0xf << shift)) | (nibble << shift);
    }
    (lo, hi)
}

impl Store {
    /// A stored record as readers see it: what waits to be written in its
    /// place, and only what is on disk (`unconfirmed`).
    fn decode_record(&self, key: &[u8], bytes: &[u8]) -> Option<AgentRecord> {
        match codec::decode_agent(bytes) {
            Ok(r) => self.durable_view(self.overlay(r)),
            Err(e) => {
                self.note_corrupt("agent record", key, &e);
                None
            }
        }
    }

    /// A new random id whose short id (its first eight hex digits) is no
    /// other agent's short id and no prefix of another agent's id. The short
    /// id is reserved for good: a removed agent's branch may outlive it.
    pub fn issue_agent_id(&self) -> Result<(AgentId, ShortId), StoreError> {
        let trees = self.trees_for_write()?;
        loop {
            let id = AgentId::random();
            let short = id.short_prefix(SHORT_ID_LEN);
            let (lo, hi) = hex_range(short.as_str());
            if trees.agents.range(lo..=hi).next().is_some() {
                continue;
            }
            let reserved = trees
                .short_ids
                .compare_and_swap(
                    short.as_str().as_bytes(),
                    None::<&[u8]>,
                    Some(&id.as_bytes()[..]),
                )
                .map_err(|e| self.write_error(e))?;
            if reserved.is_ok() {
                return Ok((id, short));
            }
        }
    }

    pub fn get_agent(&self, id: AgentId) -> Result<Option<AgentRecord>, StoreError> {
        let trees = self.trees()?;
        Ok(trees
            .agents
            .get(id.as_bytes())?
            .and_then(|bytes| self.decode_record(id.as_bytes(), &bytes)))
    }

    /// The ids of the agents whose status satisfies `wanted` (reads only
    /// the status of each record: recovery runs this over every agent).
    pub fn ids_by_status(
        &self,
        wanted: impl Fn(Status) -> bool,
    ) -> Result<Vec<AgentId>, StoreError> {
        let trees = self.trees()?;
        let mut out = Vec::new();
        for item in trees.agents.iter() {
            let (key, bytes) = item?;
            match (AgentId::from_slice(&key), codec::decode_status(&bytes)) {
                (Some(id), Ok(status)) => {
                    let status = if self.has_deferred() {
                        self.deferred_status(id).unwrap_or(status)
                    } else {
                        status
                    };
                    if wanted(status) {
                        out.push(id);
                    }
                }
                (_, Err(e)) => self.note_corrupt("agent record", &key, &e),
                (None, Ok(_)) => self.note_corrupt("agent record", &key, &"invalid id"),
            }
        }
        Ok(out)
    }

    /// Up to `limit` records whose id, as hex, starts with `hex_prefix`
    /// (lowercase hex digits only): a range scan, not a full one.
    pub fn agents_with_hex_prefix(
        &self,
        hex_prefix: &str,
        limit: usize,
    ) -> Result<Vec<AgentRecord>, StoreError> {
        let trees = self.trees()?;
        let (lo, hi) = hex_range(hex_prefix);
        let mut out = Vec::new();
        for item in trees.agents.range(lo..=hi) {
            if out.len() >= limit {
                break;
            }
            let (key, bytes) = item?;
            out.extend(self.decode_record(&key, &bytes));
        }
        Ok(out)
    }

    /// The agent a short id was issued to (it may have been removed since).
    pub fn agent_by_short_id(&self, short: &ShortId) -> Result<Option<AgentId>, StoreError> {
        let trees = self.trees()?;
        Ok(trees
            .short_ids
            .get(short.as_str().as_bytes())?
            .and_then(|v| AgentId::from_slice(&v)))
    }

    /// Ids of the agents that carry `name`.
    pub fn ids_named(&self, name: &str) -> Result<Vec<AgentId>, StoreError> {
        let trees = self.trees()?;
        let mut prefix = name.as_bytes().to_vec();
        prefix.push(0);
        let mut out = Vec::new();
        for key in trees.names.scan_prefix(&prefix).keys() {
            let key = key?;
            out.extend(AgentId::from_slice(&key[prefix.len()..]));
        }
        Ok(out)
    }

    /// Ids of `parent`'s children.
    pub fn children_of(&self, parent: AgentId) -> Result<Vec<AgentId>, StoreError> {
        let trees = self.trees()?;
        let mut out = Vec::new();
        for key in trees.children.scan_prefix(parent.as_bytes()).keys() {
            out.extend(AgentId::from_slice(&key?[16..]));
        }
        Ok(out)
    }

    /// Writes a record without waiting for disk.
    pub fn put_agent(&self, record: &AgentRecord) -> Result<(), StoreError> {
        self.write_agent(record).map(drop)
    }

    /// Writes a record; returns the handle it was written on.
    fn write_agent(&self, record: &AgentRecord) -> Result<TreesHandle, StoreError> {
        let trees = self.trees_for_write()?;
        if let Err(e) = trees
            .agents
            .insert(record.id.as_bytes(), codec::encode_agent(record))
        {
            self.index_dropped();
            return Err(self.write_error(e));
        }
        self.index_written(&trees, [record.id]);
        self.forget_deferred(record.id);
        Ok(trees)
    }

    /// Writes a record, or, without disk space, keeps it to be written
    /// when space is back and shows it to readers meanwhile (`health`).
    /// For states that must be visible even when the disk is full (an
    /// agent waiting for space, one marked interrupted at start); the
    /// `DiskFull` error still says it is not on disk yet.
    pub fn put_agent_or_defer(&self, record: &AgentRecord) -> Result<(), StoreError> {
        let written = self.put_agent(record);
        if let Err(e) = &written
            && e.is_disk_full()
        {
            self.defer_record(record, None);
        }
        written
    }

    /// Writes a record and waits until it is on disk.
    pub async fn put_agent_durable(&self, record: &AgentRecord) -> Result<(), StoreError> {
        let trees = self.write_agent(record)?;
        self.flush_on(trees).await
    }

    /// Deletes everything stored for `id`: record, transcript, prompt,
    /// inbox and index entries. Its short id stays reserved.
    pub async fn remove_agent(&self, id: AgentId) -> Result<(), StoreError> {
        let trees = self.trees_for_write()?;
        let record = self.get_agent(id)?;
        if let Err(e) = self.remove_from(&trees, id, record.as_ref()) {
            self.index_dropped();
            return Err(self.write_error(e));
        }
        self.index_written(&trees, [id]);
        self.flush_on(trees).await
    }

    fn remove_from(
        &self,
        trees: &Trees,
        id: AgentId,
        record: Option<&AgentRecord>,
    ) -> sled::Result<()> {
        for key in trees.transcripts.scan_prefix(id.as_bytes()).keys() {
            trees.transcripts.remove(key?)?;
        }
        for key in trees.inbox.scan_prefix(id.as_bytes()).keys() {
            trees.inbox.remove(key?)?;
        }
        for key in trees.connections.scan_prefix(id.as_bytes()).keys() {
            trees.connections.remove(key?)?;
        }
        for key in trees
            .network_allow
            .scan_prefix(super::network::agent_prefix(id))
            .keys()
        {
            trees.network_allow.remove(key?)?;
        }
        trees.prompts.remove(id.as_bytes())?;
        if let Some(r) = record {
            if !r.name.is_empty() {
                trees.names.remove(name_key(&r.name, id))?;
            }
            if let Some(parent) = r.parent {
                trees.children.remove(child_key(parent, id))?;
            }
        }
        // The record goes last: a crash midway leaves a record whose
        // transcript is partly gone, which `rm` can be asked again to finish.
        trees.agents.remove(id.as_bytes())?;
        Ok(())
    }
}

#[cfg(any(test, feature = "test-hooks"))]
#[allow(clippy::unwrap_used)] // test hooks: a failure is the test's
impl Store {
    pub fn reserve_short_id_for_tests(&self, short: &ShortId, id: AgentId) {
        let trees = self.trees().unwrap();
        trees
            .short_ids
            .insert(short.as_str().as_bytes(), id.as_bytes())
            .unwrap();
    }

    pub fn corrupt_entry_for_tests(&self, id: AgentId, seq: u64) {
        let trees = self.trees().unwrap();
        trees
            .transcripts
            .insert(
                super::transcript::entry_key(id, seq),
                &[0xff, 0xff, 0xff][..],
            )
            .unwrap();
    }

    pub fn index_name_for_tests(&self, name: &str, id: AgentId) {
        let trees = self.trees().unwrap();
        trees.names.insert(name_key(name, id), &[]).unwrap();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::StoreOptions;
    use crate::domain::{Status, now_ms};

    fn put(store: &Store, id: &str, name: &str) -> AgentId {
        let id = AgentId::parse(id).unwrap();
        let mut r = AgentRecord::new(id, id.short_prefix(8), now_ms());
        r.name = name.into();
        r.status = Status::Completed;
        store.put_agent(&r).unwrap();
        id
    }

    #[test]
    fn hex_prefix_scan_finds_exactly_the_matching_ids() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), StoreOptions::default()).unwrap();
        let ids = [
            put(&store, "01234567-0000-4000-8000-000000000000", ""),
            put(&store, "01239999-0000-4000-8000-000000000000", ""),
            put(&store, "0124aaaa-0000-4000-8000-000000000000", ""),
        ];
        let found = |p: &str| -> Vec<AgentId> {
            store
                .agents_with_hex_prefix(p, 10)
                .unwrap()
                .iter()
                .map(|r| r.id)
                .collect()
        };
        assert_eq!(found("0123"), vec![ids[0], ids[1]]);
        assert_eq!(found("012"), ids.to_vec());
        assert_eq!(found("01234"), vec![ids[0]]);
        assert_eq!(found("0124a"), vec![ids[2]]);
        assert!(found("0125").is_empty());
    }

    #[test]
    fn issued_ids_have_distinct_free_short_ids() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), StoreOptions::default()).unwrap();
        let mut seen = std::collections::HashSet::new();
        for _ in 0..500 {
            let (id, short) = store.issue_agent_id().unwrap();
            assert!(id.hex().starts_with(short.as_str()));
            assert_eq!(short.as_str().len(), SHORT_ID_LEN);
            assert!(seen.insert(short.clone()));
            assert_eq!(store.agent_by_short_id(&short).unwrap(), Some(id));
        }
    }

    #[test]
    fn a_corrupt_record_is_skipped_and_counted_once() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), StoreOptions::default()).unwrap();
        let good = put(&store, "01234567-0000-4000-8000-000000000000", "ok");
        let bad = AgentId::random();
        store
            .trees()
            .unwrap()
            .agents
            .insert(bad.as_bytes(), &[0xff, 0xff, 0xff][..])
            .unwrap();
        assert_eq!(store.agents().unwrap().len(), 1);
        assert_eq!(store.get_agent(bad).unwrap(), None);
        assert_eq!(store.get_agent(good).unwrap().unwrap().name, "ok");
        assert_eq!(store.corrupt_count(), 1, "the same item counts once");
    }
}
