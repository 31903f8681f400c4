//! The store owns every byte on disk: agent records, transcripts and the
//! frozen prompt context of each agent, in one sled database.
//!
//! Layout (versioned like containerd's metadata store):
//! - tree `v1/agents`: agent id (16 bytes) → [`AgentRecord`]
//! - tree `v1/transcripts`: agent id ++ big-endian seq (24 bytes) → [`TranscriptEntry`];
//!   a prefix scan on the id yields the transcript in order
//! - tree `v1/prompts`: agent id → [`PromptContext`]
//! - tree `v1/inbox`: agent id ++ arrival id → [`InboxItem`] (see `inbox`)
//! - tree `meta`: `schema_version` → u32 big-endian
//!
//! Durability (DESIGN §3): "acknowledged means durable". Every method named
//! `*_durable` returns only after sled has fsynced the write.

mod inbox;
pub mod records;

pub use inbox::InboxKey;

use std::path::{Path, PathBuf};

use prost::Message;
use uuid::Uuid;

pub use records::{
    AgentRecord, InboxItem, InboxKind, PermissionMode, PromptContext, Role, Status,
    TranscriptEntry, Usage, now_ms,
};

/// The on-disk schema this build reads and writes.
pub const SCHEMA_VERSION: u32 = 1;
const SCHEMA_KEY: &[u8] = b"schema_version";

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot open the agentd store at {path}: {source}")]
    Open {
        path: PathBuf,
        #[source]
        source: sled::Error,
    },
    #[error(
        "the store at {path} has schema version {found}, newer than this agentd understands ({SCHEMA_VERSION}); upgrade agentd"
    )]
    TooNew { path: PathBuf, found: u32 },
    #[error("store I/O failed: {0}")]
    Io(#[from] sled::Error),
    #[error("stored {what} for agent {id} is corrupt: {source}")]
    Corrupt {
        what: &'static str,
        id: Uuid,
        #[source]
        source: prost::DecodeError,
    },
    #[error("store flush task failed: {0}")]
    Join(#[from] tokio::task::JoinError),
}

/// Handle to the database. Cheap to clone: sled trees are reference-counted.
#[derive(Clone)]
pub struct Store {
    db: sled::Db,
    agents: sled::Tree,
    transcripts: sled::Tree,
    prompts: sled::Tree,
    inbox: sled::Tree,
}

pub(crate) fn transcript_key(id: Uuid, seq: u64) -> [u8; 24] {
    let mut key = [0u8; 24];
    key[..16].copy_from_slice(id.as_bytes());
    key[16..].copy_from_slice(&seq.to_be_bytes());
    key
}

impl Store {
    /// Opens (or creates) the store in `dir`. Fails if another process holds
    /// it or if it was written by a newer schema.
    pub fn open(dir: &Path) -> Result<Store, StoreError> {
        let path = dir.join("store");
        let db = sled::Config::new()
            .path(&path)
            .open()
            .map_err(|source| StoreError::Open {
                path: path.clone(),
                source,
            })?;
        let meta = db.open_tree("meta")?;
        match meta.get(SCHEMA_KEY)? {
            None => {
                meta.insert(SCHEMA_KEY, &SCHEMA_VERSION.to_be_bytes())?;
                db.flush()?;
            }
            Some(v) => {
                let found = v
                    .as_ref()
                    .try_into()
                    .map(u32::from_be_bytes)
                    .unwrap_or(u32::MAX);
                if found > SCHEMA_VERSION {
                    return Err(StoreError::TooNew { path, found });
                }
                // Older schemas would be migrated here; version 1 is the first.
            }
        }
        Ok(Store {
            agents: db.open_tree("v1/agents")?,
            transcripts: db.open_tree("v1/transcripts")?,
            prompts: db.open_tree("v1/prompts")?,
            inbox: db.open_tree("v1/inbox")?,
            db,
        })
    }

    /// Forces everything written so far to disk (fsync).
    pub async fn flush(&self) -> Result<(), StoreError> {
        let db = self.db.clone();
        tokio::task::spawn_blocking(move || db.flush()).await??;
        Ok(())
    }

    /// Writes an agent record without waiting for disk.
    pub fn put_agent(&self, record: &AgentRecord) -> Result<(), StoreError> {
        self.agents
            .insert(record.id.as_slice(), record.encode_to_vec())?;
        Ok(())
    }

    /// Writes an agent record and waits until it is on disk.
    pub async fn put_agent_durable(&self, record: &AgentRecord) -> Result<(), StoreError> {
        self.put_agent(record)?;
        self.flush().await
    }

    pub fn get_agent(&self, id: Uuid) -> Result<Option<AgentRecord>, StoreError> {
        match self.agents.get(id.as_bytes())? {
            None => Ok(None),
            Some(bytes) => AgentRecord::decode(bytes.as_ref())
                .map(Some)
                .map_err(|source| StoreError::Corrupt {
                    what: "record",
                    id,
                    source,
                }),
        }
    }

    /// Every agent record, oldest first (ids are UUID v7). A corrupt record is
    /// reported as an error item, never skipped silently.
    pub fn agents(&self) -> impl Iterator<Item = Result<AgentRecord, StoreError>> + '_ {
        self.agents.iter().map(decode_agent)
    }

    /// Agent records whose id, as hex, starts with `hex_prefix` (lowercase hex
    /// digits only). Big-endian id bytes sort like their hex form, so this is
    /// a range scan, not a full one.
    pub fn agents_with_hex_prefix(
        &self,
        hex_prefix: &str,
    ) -> impl Iterator<Item = Result<AgentRecord, StoreError>> + '_ {
        let mut lo = [0u8; 16];
        let mut hi = [0xffu8; 16];
        for (i, c) in hex_prefix.chars().take(32).enumerate() {
            let nibble = c.to_digit(16).unwrap_or(0) as u8;
            let (byte, shift) = (i / 2, if i % 2 == 0 { 4 } else { 0 });
            lo[byte] = (lo[byte] & !(0xf << shift)) | (nibble << shift);
            hi[byte] = (hi[byte] & !(0xf << shift)) | (nibble << shift);
        }
        self.agents.range(lo..=hi).map(decode_agent)
    }

    /// Appends one transcript entry and waits until it is on disk. The caller
    /// (the agent's turn loop, the only writer of its transcript) assigns seq.
    pub async fn append_durable(
        &self,
        id: Uuid,
        entry: &TranscriptEntry,
    ) -> Result<(), StoreError> {
        self.transcripts
            .insert(transcript_key(id, entry.seq), entry.encode_to_vec())?;
        self.flush().await
    }

    /// Appends many entries with one fsync (imports, benchmarks).
    pub async fn append_batch_durable(
        &self,
        id: Uuid,
        entries: &[TranscriptEntry],
    ) -> Result<(), StoreError> {
        let mut batch = sled::Batch::default();
        for e in entries {
            batch.insert(&transcript_key(id, e.seq)[..], e.encode_to_vec());
        }
        self.transcripts.apply_batch(batch)?;
        self.flush().await
    }

    /// Up to `limit` entries of `id`'s transcript from `from_seq` on.
    pub fn transcript(
        &self,
        id: Uuid,
        from_seq: u64,
        limit: usize,
    ) -> Result<Vec<TranscriptEntry>, StoreError> {
        let lo = transcript_key(id, from_seq);
        let hi = transcript_key(id, u64::MAX);
        self.transcripts
            .range(lo..=hi)
            .take(limit)
            .map(|item| {
                let (_, bytes) = item?;
                TranscriptEntry::decode(bytes.as_ref()).map_err(|source| StoreError::Corrupt {
                    what: "transcript entry",
                    id,
                    source,
                })
            })
            .collect()
    }

    /// The number of entries in `id`'s transcript (the next sequence number).
    pub fn transcript_len(&self, id: Uuid) -> Result<u64, StoreError> {
        match self.transcripts.scan_prefix(id.as_bytes()).next_back() {
            None => Ok(0),
            Some(item) => {
                let (key, _) = item?;
                let seq = key
                    .get(16..24)
                    .and_then(|b| b.try_into().ok())
                    .map(u64::from_be_bytes)
                    .unwrap_or(0);
                Ok(seq + 1)
            }
        }
    }

    pub fn put_prompt(&self, id: Uuid, prompt: &PromptContext) -> Result<(), StoreError> {
        self.prompts.insert(id.as_bytes(), prompt.encode_to_vec())?;
        Ok(())
    }

    pub fn get_prompt(&self, id: Uuid) -> Result<Option<PromptContext>, StoreError> {
        match self.prompts.get(id.as_bytes())? {
            None => Ok(None),
            Some(bytes) => PromptContext::decode(bytes.as_ref())
                .map(Some)
                .map_err(|source| StoreError::Corrupt {
                    what: "prompt context",
                    id,
                    source,
                }),
        }
    }
}

fn decode_agent(item: sled::Result<(sled::IVec, sled::IVec)>) -> Result<AgentRecord, StoreError> {
    let (key, bytes) = item?;
    AgentRecord::decode(bytes.as_ref()).map_err(|source| StoreError::Corrupt {
        what: "record",
        id: Uuid::from_slice(&key).unwrap_or_default(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(seq: u64, text: &str) -> TranscriptEntry {
        TranscriptEntry {
            seq,
            role: Role::User as i32,
            content_json: format!(r#"[{{"type":"text","text":"{text}"}}]"#).into_bytes(),
            created_at_ms: now_ms(),
            usage: None,
            stop_reason: String::new(),
        }
    }

    fn record(id: Uuid) -> AgentRecord {
        AgentRecord {
            id: id.as_bytes().to_vec(),
            name: "n".into(),
            ..Default::default()
        }
    }

    #[tokio::test]
    async fn transcript_scan_is_ordered_and_per_agent() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let (a, b) = (Uuid::now_v7(), Uuid::now_v7());
        // seq 256 sorts after 255 only with big-endian keys.
        for seq in [0u64, 1, 255, 256, 2] {
            store.append_durable(a, &entry(seq, "a")).await.unwrap();
        }
        store.append_durable(b, &entry(0, "b")).await.unwrap();
        let seqs: Vec<u64> = store
            .transcript(a, 0, 100)
            .unwrap()
            .iter()
            .map(|e| e.seq)
            .collect();
        assert_eq!(seqs, vec![0, 1, 2, 255, 256]);
        assert_eq!(store.transcript_len(a).unwrap(), 257);
        assert_eq!(store.transcript_len(b).unwrap(), 1);
        assert_eq!(store.transcript(a, 2, 2).unwrap().len(), 2);
        assert_eq!(store.transcript_len(Uuid::now_v7()).unwrap(), 0);
    }

    #[tokio::test]
    async fn records_survive_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let id = Uuid::now_v7();
        {
            let store = Store::open(dir.path()).unwrap();
            store.put_agent_durable(&record(id)).await.unwrap();
        }
        let store = Store::open(dir.path()).unwrap();
        assert_eq!(store.get_agent(id).unwrap().unwrap().name, "n");
    }

    #[test]
    fn hex_prefix_scan_finds_exactly_the_matching_ids() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let ids: Vec<Uuid> = [
            "01234567-0000-7000-8000-000000000000",
            "01239999-0000-7000-8000-000000000000",
            "0124aaaa-0000-7000-8000-000000000000",
        ]
        .iter()
        .map(|s| Uuid::parse_str(s).unwrap())
        .collect();
        for id in &ids {
            store.put_agent(&record(*id)).unwrap();
        }
        let found = |p: &str| -> Vec<Uuid> {
            store
                .agents_with_hex_prefix(p)
                .map(|r| r.unwrap().uuid())
                .collect()
        };
        assert_eq!(found("0123"), vec![ids[0], ids[1]]);
        assert_eq!(found("012"), ids);
        assert_eq!(found("01234"), vec![ids[0]]);
        assert_eq!(found("0124a"), vec![ids[2]]);
        assert!(found("0125").is_empty());
    }

    #[test]
    fn newer_schema_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        {
            let db = sled::open(dir.path().join("store")).unwrap();
            db.open_tree("meta")
                .unwrap()
                .insert(SCHEMA_KEY, &99u32.to_be_bytes())
                .unwrap();
            db.flush().unwrap();
        }
        let err = Store::open(dir.path()).err().unwrap();
        assert!(matches!(err, StoreError::TooNew { found: 99, .. }), "{err}");
    }

    #[test]
    fn corrupt_record_is_an_error_not_a_skip() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let id = Uuid::now_v7();
        store
            .agents
            .insert(id.as_bytes(), &[0xff, 0xff, 0xff][..])
            .unwrap();
        assert!(matches!(
            store.get_agent(id),
            Err(StoreError::Corrupt { .. })
        ));
        assert!(store.agents().next().unwrap().is_err());
    }
}
