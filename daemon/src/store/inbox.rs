//! Agents' inboxes (tree `v1/inbox`: agent id ++ big-endian sled id →
//! [`InboxItem`]), and the transactions that make delivery exactly-once:
//! an item leaves the inbox in the same transaction that writes it into the
//! transcript, and a child's notification enters its parent's inbox in the
//! same transaction that records the child's end.

use prost::Message;
use sled::Transactional;
use sled::transaction::{ConflictableTransactionError, TransactionError};
use uuid::Uuid;

use super::{AgentRecord, InboxItem, Store, StoreError, TranscriptEntry, transcript_key};

/// Key of an inbox item: sorts by agent, then by arrival.
pub type InboxKey = [u8; 24];

fn tx_error(e: TransactionError<()>) -> StoreError {
    match e {
        TransactionError::Storage(e) => StoreError::Io(e),
        TransactionError::Abort(()) => StoreError::Io(sled::Error::ReportableBug(
            "inbox transaction aborted".into(),
        )),
    }
}

impl Store {
    fn inbox_key(&self, id: Uuid) -> Result<InboxKey, StoreError> {
        let mut key = [0u8; 24];
        key[..16].copy_from_slice(id.as_bytes());
        key[16..].copy_from_slice(&self.db.generate_id()?.to_be_bytes());
        Ok(key)
    }

    /// Items waiting for `id`, oldest first.
    pub fn inbox(&self, id: Uuid) -> Result<Vec<(InboxKey, InboxItem)>, StoreError> {
        self.inbox
            .scan_prefix(id.as_bytes())
            .map(|item| {
                let (key, bytes) = item?;
                let mut k = [0u8; 24];
                k.copy_from_slice(&key[..24.min(key.len())]);
                let item =
                    InboxItem::decode(bytes.as_ref()).map_err(|source| StoreError::Corrupt {
                        what: "inbox item",
                        id,
                        source,
                    })?;
                Ok((k, item))
            })
            .collect()
    }

    pub fn has_inbox(&self, id: Uuid) -> Result<bool, StoreError> {
        Ok(self
            .inbox
            .scan_prefix(id.as_bytes())
            .next()
            .transpose()?
            .is_some())
    }

    /// Puts `item` in `id`'s inbox, durably.
    pub async fn push_inbox(&self, id: Uuid, item: &InboxItem) -> Result<(), StoreError> {
        let key = self.inbox_key(id)?;
        self.inbox.insert(key, item.encode_to_vec())?;
        self.flush().await
    }

    /// Appends `entry` to `id`'s transcript and removes `consumed` from its
    /// inbox, atomically and durably.
    pub async fn append_consuming(
        &self,
        id: Uuid,
        entry: &TranscriptEntry,
        consumed: &[InboxKey],
    ) -> Result<(), StoreError> {
        let key = transcript_key(id, entry.seq);
        let bytes = entry.encode_to_vec();
        (&self.transcripts, &self.inbox)
            .transaction(|(t, i)| {
                t.insert(&key, bytes.as_slice())?;
                for k in consumed {
                    i.remove(k.as_slice())?;
                }
                Ok::<(), ConflictableTransactionError<()>>(())
            })
            .map_err(tx_error)?;
        self.flush().await
    }

    /// Records an agent's final state and, when it has a parent to notify,
    /// puts the notification in the parent's inbox — both or neither.
    pub async fn finish_agent(
        &self,
        record: &AgentRecord,
        notify: Option<(Uuid, &InboxItem)>,
    ) -> Result<(), StoreError> {
        let rec = record.encode_to_vec();
        let note = match notify {
            Some((parent, item)) => Some((self.inbox_key(parent)?, item.encode_to_vec())),
            None => None,
        };
        (&self.agents, &self.inbox)
            .transaction(|(a, i)| {
                a.insert(record.id.as_slice(), rec.as_slice())?;
                if let Some((k, v)) = &note {
                    i.insert(k.as_slice(), v.as_slice())?;
                }
                Ok::<(), ConflictableTransactionError<()>>(())
            })
            .map_err(tx_error)?;
        self.flush().await
    }

    /// Deletes everything stored for `id`: record, transcript, prompt, inbox.
    pub async fn remove_agent(&self, id: Uuid) -> Result<(), StoreError> {
        for key in self.transcripts.scan_prefix(id.as_bytes()).keys() {
            self.transcripts.remove(key?)?;
        }
        for key in self.inbox.scan_prefix(id.as_bytes()).keys() {
            self.inbox.remove(key?)?;
        }
        self.prompts.remove(id.as_bytes())?;
        // The record goes last: a crash midway leaves a record whose
        // transcript is partly gone, which `rm` can be asked again to finish.
        self.agents.remove(id.as_bytes())?;
        self.flush().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{InboxKind, Role, now_ms};

    fn item(text: &str) -> InboxItem {
        InboxItem {
            kind: InboxKind::Message as i32,
            text: text.into(),
            from: Vec::new(),
            created_at_ms: now_ms(),
        }
    }

    #[tokio::test]
    async fn delivery_moves_items_from_inbox_to_transcript_once() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let id = Uuid::now_v7();
        store.push_inbox(id, &item("first")).await.unwrap();
        store.push_inbox(id, &item("second")).await.unwrap();
        store
            .push_inbox(Uuid::now_v7(), &item("other agent"))
            .await
            .unwrap();
        let waiting = store.inbox(id).unwrap();
        let texts: Vec<&str> = waiting.iter().map(|(_, i)| i.text.as_str()).collect();
        assert_eq!(texts, ["first", "second"]);
        let keys: Vec<InboxKey> = waiting.iter().map(|(k, _)| *k).collect();
        let entry = TranscriptEntry {
            seq: 0,
            role: Role::User as i32,
            content_json: b"[]".to_vec(),
            ..Default::default()
        };
        store.append_consuming(id, &entry, &keys).await.unwrap();
        assert!(!store.has_inbox(id).unwrap());
        assert_eq!(store.transcript_len(id).unwrap(), 1);
    }

    #[tokio::test]
    async fn a_finished_child_and_its_notification_are_written_together() {
        let dir = tempfile::tempdir().unwrap();
        let parent = Uuid::now_v7();
        let child = Uuid::now_v7();
        {
            let store = Store::open(dir.path()).unwrap();
            let mut rec = AgentRecord {
                id: child.as_bytes().to_vec(),
                ..Default::default()
            };
            rec.set_status(crate::store::Status::Completed);
            store
                .finish_agent(&rec, Some((parent, &item("done"))))
                .await
                .unwrap();
        }
        let store = Store::open(dir.path()).unwrap();
        assert_eq!(store.inbox(parent).unwrap().len(), 1);
        assert_eq!(
            store.get_agent(child).unwrap().unwrap().status(),
            crate::store::Status::Completed
        );
        store.remove_agent(child).await.unwrap();
        assert!(store.get_agent(child).unwrap().is_none());
    }
}
