//! Transcripts: where an entry becomes durable.
//!
//! Every transcript write — a new agent's first message, each message of
//! the turn loop, a batch import — goes through [`Store::append_durable`],
//! which returns only once the entries are fsynced. What an append also
//! changes (the agent's record, the inbox items it delivers, a new agent's
//! frozen prompt and index entries) is written in the same transaction.

use super::inbox::InboxKey;
use super::{Store, StoreError, Trees, agents, codec, prefixed};
use crate::domain::{AgentId, AgentRecord, PromptContext, TranscriptEntry};

/// Key of an entry: agent id ++ big-endian seq, so a prefix scan on the id
/// yields the transcript in order (seq 256 sorts after 255).
pub(crate) fn entry_key(id: AgentId, seq: u64) -> Vec<u8> {
    prefixed(id, &seq.to_be_bytes())
}

/// The length of `id`'s transcript as its last key says (a search; the
/// record carries it for everyday reads).
pub(super) fn scan_len(transcripts: &sled::Tree, id: AgentId) -> sled::Result<u64> {
    match transcripts.scan_prefix(id.as_bytes()).keys().next_back() {
        None => Ok(0),
        Some(key) => Ok(key?
            .get(16..24)
            .and_then(|b| <[u8; 8]>::try_from(b).ok())
            .map_or(0, |seq| u64::from_be_bytes(seq) + 1)),
    }
}

/// One durable append. The caller (the agent's turn loop, its only
/// writer, or the creator of a new agent) assigns the sequence numbers.
pub struct Append<'a> {
    pub entries: &'a [TranscriptEntry],
    /// The agent's record, written with the entries (its transcript length
    /// made to count them).
    pub record: Option<&'a AgentRecord>,
    /// Set for a new agent: its frozen prompt, written (with its index
    /// entries) together with its first message and its record.
    pub created: Option<&'a PromptContext>,
    /// Inbox items the entries deliver, removed in the same transaction:
    /// delivered exactly once.
    pub consumed: &'a [InboxKey],
}

impl<'a> Append<'a> {
    /// Just entries.
    pub fn entries(entries: &'a [TranscriptEntry]) -> Append<'a> {
        Append {
            entries,
            record: None,
            created: None,
            consumed: &[],
        }
    }

    /// Entries and the record they change.
    pub fn with_record(entries: &'a [TranscriptEntry], record: &'a AgentRecord) -> Append<'a> {
        Append {
            record: Some(record),
            ..Append::entries(entries)
        }
    }
}

/// An inbox item an append was to deliver was not in the inbox.
struct InboxChanged;

enum AppendError {
    Sled(sled::Error),
    InboxChanged,
}

impl From<sled::Error> for AppendError {
    fn from(e: sled::Error) -> AppendError {
        AppendError::Sled(e)
    }
}

impl Store {
    /// Appends entries (and what goes with them, see [`Append`]) and waits
    /// until they are on disk.
    pub async fn append_durable(&self, id: AgentId, append: Append<'_>) -> Result<(), StoreError> {
        let trees = self.trees_for_write()?;
        let applied = match self.apply_append(&trees, id, &append) {
            Ok(()) => Ok(()),
            Err(AppendError::Sled(e)) => Err(self.write_error(e)),
            // Nothing was applied.
            Err(AppendError::InboxChanged) => return Err(StoreError::InboxChanged),
        };
        match (&applied, append.record.is_some()) {
            (Ok(()), true) => self.index_written(&trees, [id]),
            (Ok(()), false) => {}
            (Err(_), _) => self.index_dropped(),
        }
        let flushed = match applied {
            Ok(()) => self.flush_on(trees).await,
            Err(e) => Err(e),
        };
        match &flushed {
            Ok(()) => self.inner.unconfirmed.confirmed(id),
            // sled may serve what it applied until it is reopened: readers
            // are kept from it (`unconfirmed`).
            Err(_) => self.inner.unconfirmed.failed(
                id,
                append.created.is_some(),
                append.entries.iter().map(|e| e.seq).min(),
            ),
        }
        flushed
    }

    fn apply_append(&self, trees: &Trees, id: AgentId, a: &Append<'_>) -> Result<(), AppendError> {
        let entries: Vec<(Vec<u8>, Vec<u8>)> = a
            .entries
            .iter()
            .map(|e| (entry_key(id, e.seq), codec::encode_entry(e)))
            .collect();
        if a.record.is_none() && a.created.is_none() && a.consumed.is_empty() {
            // One tree: one insert is atomic by itself, a batch of several
            // is atomic too; both are cheaper than a transaction.
            if let [(k, v)] = entries.as_slice() {
                return Ok(trees
                    .transcripts
                    .insert(k.as_slice(), v.as_slice())
                    .map(drop)?);
            }
            let mut batch = sled::Batch::default();
            for (k, v) in entries {
                batch.insert(k, v);
            }
            return Ok(trees.transcripts.apply_batch(batch)?);
        }
        let last = a.entries.iter().map(|e| e.seq + 1).max().unwrap_or(0);
        let record = a.record.map(|r| {
            if r.transcript_len >= last {
                codec::encode_agent(r)
            } else {
                codec::encode_agent(&AgentRecord {
                    transcript_len: last,
                    ..r.clone()
                })
            }
        });
        let prompt = a.created.map(codec::encode_prompt);
        let name = a
            .record
            .filter(|r| a.created.is_some() && !r.name.is_empty())
            .map(|r| agents::name_key(&r.name, r.id));
        let child = a
            .record
            .filter(|_| a.created.is_some())
            .and_then(|r| r.parent.map(|p| agents::child_key(p, r.id)));
        use sled::Transactional;
        use sled::transaction::{
            ConflictableTransactionError, TransactionError, TransactionalTree,
        };
        type Abort = ConflictableTransactionError<InboxChanged>;
        let put = |t: &TransactionalTree,
                   agents: &TransactionalTree,
                   inbox: &TransactionalTree|
         -> Result<(), Abort> {
            // This very append may be on disk already: one whose flush
            // failed on another writer's data after its own was written,
            // tried again after the reopen. Then its items are gone because
            // it took them, and writing it again changes nothing.
            let landed = match (entries.first(), a.consumed.is_empty()) {
                (Some((k, v)), false) => t.get(k.as_slice())?.as_deref() == Some(v.as_slice()),
                _ => false,
            };
            for (k, v) in &entries {
                t.insert(k.as_slice(), v.as_slice())?;
            }
            if let Some(r) = &record {
                agents.insert(id.as_bytes(), r.as_slice())?;
            }
            for k in a.consumed {
                // An item that is gone was withdrawn, or never reached the
                // disk and was dropped by a reopen (a notification written
                // again under the same key is back by then): delivering
                // its text now could deliver it twice.
                if inbox.remove(k.as_slice())?.is_none() && !landed {
                    return Err(ConflictableTransactionError::Abort(InboxChanged));
                }
            }
            Ok(())
        };
        // A transaction spans only the trees it writes: each one costs, and
        // the turn loop's appends are the daemon's hottest writes.
        let result = if a.created.is_some() {
            (
                &trees.transcripts,
                &trees.agents,
                &trees.inbox,
                &trees.prompts,
                &trees.names,
                &trees.children,
            )
                .transaction(|(t, agents, inbox, prompts, names, children)| {
                    put(t, agents, inbox)?;
                    if let Some(p) = &prompt {
                        prompts.insert(id.as_bytes(), p.as_slice())?;
                    }
                    if let Some(k) = &name {
                        names.insert(k.as_slice(), &[])?;
                    }
                    if let Some(k) = &child {
                        children.insert(k.as_slice(), &[])?;
                    }
                    Ok(())
                })
        } else {
            (&trees.transcripts, &trees.agents, &trees.inbox)
                .transaction(|(t, agents, inbox)| put(t, agents, inbox))
        };
        result.map_err(|e| match e {
            TransactionError::Storage(e) => AppendError::Sled(e),
            TransactionError::Abort(InboxChanged) => AppendError::InboxChanged,
        })
    }

    /// Up to `limit` entries of `id`'s transcript from `from_seq` on.
    pub fn transcript(
        &self,
        id: AgentId,
        from_seq: u64,
        limit: usize,
    ) -> Result<Vec<TranscriptEntry>, StoreError> {
        let trees = self.trees()?;
        let mut out = Vec::new();
        for item in trees
            .transcripts
            .range(entry_key(id, from_seq)..=entry_key(id, u64::MAX))
        {
            if out.len() >= limit {
                break;
            }
            let (key, bytes) = item?;
            match codec::decode_entry(&bytes) {
                Ok(e) => out.push(e),
                Err(e) => self.note_corrupt("transcript entry", &key, &e),
            }
        }
        Ok(self.only_durable(id, out))
    }

    /// The number of entries in `id`'s transcript (the next sequence
    /// number), as its record carries it.
    pub fn transcript_len(&self, id: AgentId) -> Result<u64, StoreError> {
        Ok(self.get_agent(id)?.map_or(0, |r| r.transcript_len))
    }

    pub fn get_prompt(&self, id: AgentId) -> Result<Option<PromptContext>, StoreError> {
        let trees = self.trees()?;
        Ok(match trees.prompts.get(id.as_bytes())? {
            None => None,
            Some(bytes) => match codec::decode_prompt(&bytes) {
                Ok(p) => Some(p),
                Err(e) => {
                    self.note_corrupt("prompt context", id.as_bytes(), &e);
                    None
                }
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::StoreOptions;
    use crate::domain::now_ms;

    use crate::test_entry as entry;

    #[tokio::test]
    async fn transcript_scan_is_ordered_and_per_agent() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), StoreOptions::default()).unwrap();
        let (a, b) = (AgentId::random(), AgentId::random());
        for seq in [0u64, 1, 255, 256, 2] {
            let e = [entry(seq, "a")];
            store.append_durable(a, Append::entries(&e)).await.unwrap();
        }
        let e = [entry(0, "b")];
        store.append_durable(b, Append::entries(&e)).await.unwrap();
        let seqs: Vec<u64> = store
            .transcript(a, 0, 100)
            .unwrap()
            .iter()
            .map(|e| e.seq)
            .collect();
        assert_eq!(seqs, vec![0, 1, 2, 255, 256]);
        assert_eq!(
            scan_len(&store.trees().unwrap().transcripts, a).unwrap(),
            257
        );
        assert_eq!(scan_len(&store.trees().unwrap().transcripts, b).unwrap(), 1);
        assert_eq!(store.transcript(a, 2, 2).unwrap().len(), 2);
        assert_eq!(store.transcript_len(AgentId::random()).unwrap(), 0);
        // With the record, the record counts the entries it is written with.
        let mut r = AgentRecord::new(a, a.short_prefix(8), now_ms());
        let e = [entry(257, "a")];
        store
            .append_durable(a, Append::with_record(&e, &r))
            .await
            .unwrap();
        assert_eq!(store.transcript_len(a).unwrap(), 258);
        r.transcript_len = 300;
        store.put_agent(&r).unwrap();
        assert_eq!(
            store.transcript_len(a).unwrap(),
            300,
            "never lowered by the store"
        );
    }

    #[tokio::test]
    async fn a_new_agent_is_written_whole_and_survives_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let parent = AgentId::random();
        let (id, record) = {
            let store = Store::open(dir.path(), StoreOptions::default()).unwrap();
            let (id, short) = store.issue_agent_id().unwrap();
            let mut r = AgentRecord::new(id, short, now_ms());
            r.name = "nightly".into();
            r.parent = Some(parent);
            let prompt = PromptContext::default();
            let first = [entry(0, "hello")];
            store
                .append_durable(
                    id,
                    Append {
                        created: Some(&prompt),
                        ..Append::with_record(&first, &r)
                    },
                )
                .await
                .unwrap();
            (id, r)
        };
        let store = crate::reopen_for_tests(dir.path());
        let stored = store.get_agent(id).unwrap().unwrap();
        assert_eq!(
            stored.transcript_len, 1,
            "the record counts its first message"
        );
        assert_eq!(
            stored,
            AgentRecord {
                transcript_len: 1,
                ..record.clone()
            }
        );
        assert_eq!(
            store.transcript(id, 0, 10).unwrap()[0].content_json,
            entry(0, "hello").content_json
        );
        assert!(store.get_prompt(id).unwrap().is_some());
        assert_eq!(store.ids_named("nightly").unwrap(), vec![id]);
        assert_eq!(store.children_of(parent).unwrap(), vec![id]);
        store.remove_agent(id).await.unwrap();
        assert!(store.get_agent(id).unwrap().is_none());
        assert!(store.ids_named("nightly").unwrap().is_empty());
        assert!(store.children_of(parent).unwrap().is_empty());
        assert_eq!(store.transcript_len(id).unwrap(), 0);
        assert_eq!(
            store.agent_by_short_id(&record.short_id).unwrap(),
            Some(id),
            "a removed agent's short id is never issued again"
        );
    }
}
