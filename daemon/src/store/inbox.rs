//! Inboxes, and the two transactions that make notifications exactly-once:
//! a child's task notification enters its parent's inbox in the same
//! transaction that records the child's end ([`Store::finish_agent`]), and
//! an item leaves the inbox in the same transaction that writes it into the
//! transcript ([`Append::consumed`](super::Append)).

use sled::Transactional;
use sled::transaction::{ConflictableTransactionError, TransactionError};

use super::{Store, StoreError, Trees, codec, prefixed};
use crate::domain::{AgentId, AgentRecord, InboxItem};

/// Key of an inbox item: agent id ++ big-endian arrival id, so items sort
/// by agent, then by arrival.
pub type InboxKey = [u8; 24];

pub(super) fn tx_error(e: TransactionError<()>) -> sled::Error {
    match e {
        TransactionError::Storage(e) => e,
        TransactionError::Abort(()) => sled::Error::ReportableBug("transaction aborted".into()),
    }
}

fn new_key(trees: &Trees, id: AgentId) -> sled::Result<InboxKey> {
    let mut key = [0u8; 24];
    key.copy_from_slice(&prefixed(id, &trees.db.generate_id()?.to_be_bytes()));
    Ok(key)
}

impl Store {
    /// Items waiting for `id`, oldest first.
    pub fn inbox(&self, id: AgentId) -> Result<Vec<(InboxKey, InboxItem)>, StoreError> {
        let trees = self.trees()?;
        let mut out = Vec::new();
        for item in trees.inbox.scan_prefix(id.as_bytes()) {
            let (key, bytes) = item?;
            let Ok(k) = InboxKey::try_from(key.as_ref()) else {
                self.note_corrupt("inbox key", &key, &"wrong length");
                continue;
            };
            match codec::decode_inbox_item(&bytes) {
                Ok(item) => out.push((k, item)),
                Err(e) => self.note_corrupt("inbox item", &key, &e),
            }
        }
        Ok(out)
    }

    /// The agents with something in their inbox (one pass over the inboxes,
    /// which are usually nearly empty).
    pub fn agents_with_inbox(&self) -> Result<Vec<AgentId>, StoreError> {
        let trees = self.trees()?;
        let mut out: Vec<AgentId> = Vec::new();
        for key in trees.inbox.iter().keys() {
            let key = key?;
            if let Some(id) = key.get(..16).and_then(AgentId::from_slice)
                && out.last() != Some(&id)
            {
                out.push(id);
            }
        }
        Ok(out)
    }

    pub fn has_inbox(&self, id: AgentId) -> Result<bool, StoreError> {
        let trees = self.trees()?;
        Ok(trees
            .inbox
            .scan_prefix(id.as_bytes())
            .next()
            .transpose()?
            .is_some())
    }

    /// Puts `item` in `id`'s inbox, durably; returns its key.
    pub async fn push_inbox(&self, id: AgentId, item: &InboxItem) -> Result<InboxKey, StoreError> {
        let trees = self.trees_for_write()?;
        let key = new_key(&trees, id).map_err(|e| self.write_error(e))?;
        trees
            .inbox
            .insert(key, codec::encode_inbox_item(item))
            .map_err(|e| self.write_error(e))?;
        drop(trees);
        self.flush().await?;
        Ok(key)
    }

    /// Takes an undelivered item back out (a message whose agent could not
    /// be woken for it). Ok(false) if it was delivered meanwhile.
    pub async fn withdraw_inbox_item(&self, key: &InboxKey) -> Result<bool, StoreError> {
        let trees = self.trees_for_write()?;
        let removed = trees
            .inbox
            .remove(key)
            .map_err(|e| self.write_error(e))?
            .is_some();
        drop(trees);
        self.flush().await?;
        Ok(removed)
    }

    /// Records an agent's final state and, when it has a parent to notify,
    /// puts the notification in the parent's inbox — both or neither.
    /// Without disk space both are kept for later (see `health`) and
    /// `DiskFull` is returned.
    pub async fn finish_agent(
        &self,
        record: &AgentRecord,
        notify: Option<(AgentId, &InboxItem)>,
    ) -> Result<(), StoreError> {
        let written = self.trees_for_write().and_then(|trees| {
            let notes: Vec<(AgentId, InboxItem)> =
                notify.iter().map(|(p, i)| (*p, (*i).clone())).collect();
            self.write_finished(&trees, std::slice::from_ref(record), &notes)
                .map_err(|e| self.write_error(e))
        });
        match written {
            Ok(()) => {
                self.forget_deferred(record.id);
                self.flush().await
            }
            Err(e) => {
                if e.is_disk_full() {
                    self.defer_record(record, notify);
                }
                Err(e)
            }
        }
    }

    /// Writes records and notifications in one transaction.
    pub(super) fn write_finished(
        &self,
        trees: &Trees,
        records: &[AgentRecord],
        notes: &[(AgentId, InboxItem)],
    ) -> sled::Result<()> {
        let records: Vec<(AgentId, Vec<u8>)> = records
            .iter()
            .map(|r| (r.id, codec::encode_agent(r)))
            .collect();
        let mut keyed = Vec::with_capacity(notes.len());
        for (parent, item) in notes {
            keyed.push((new_key(trees, *parent)?, codec::encode_inbox_item(item)));
        }
        let written = (&trees.agents, &trees.inbox)
            .transaction(|(a, i)| {
                for (id, bytes) in &records {
                    a.insert(id.as_bytes(), bytes.as_slice())?;
                }
                for (k, v) in &keyed {
                    i.insert(k.as_slice(), v.as_slice())?;
                }
                Ok::<(), ConflictableTransactionError<()>>(())
            })
            .map_err(tx_error);
        match &written {
            Ok(()) => self.index_written(trees, records.iter().map(|(id, _)| *id)),
            Err(_) => self.index_dropped(),
        }
        written
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{InboxKind, Status, now_ms};
    use crate::store::{Append, StoreOptions};

    fn item(text: &str) -> InboxItem {
        InboxItem {
            kind: InboxKind::Message,
            text: text.into(),
            from: None,
            created_at_ms: now_ms(),
        }
    }

    #[tokio::test]
    async fn delivery_moves_items_from_inbox_to_transcript_once() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), StoreOptions::default()).unwrap();
        let id = AgentId::random();
        store.push_inbox(id, &item("first")).await.unwrap();
        store.push_inbox(id, &item("second")).await.unwrap();
        store
            .push_inbox(AgentId::random(), &item("other agent"))
            .await
            .unwrap();
        let waiting = store.inbox(id).unwrap();
        let texts: Vec<&str> = waiting.iter().map(|(_, i)| i.text.as_str()).collect();
        assert_eq!(texts, ["first", "second"]);
        let keys: Vec<InboxKey> = waiting.iter().map(|(k, _)| *k).collect();
        let entry = [crate::store::test_entry(0, "delivered")];
        store
            .append_durable(
                id,
                Append {
                    consumed: &keys,
                    ..Append::entries(&entry)
                },
            )
            .await
            .unwrap();
        assert!(!store.has_inbox(id).unwrap());
        assert_eq!(store.transcript(id, 0, 10).unwrap().len(), 1);
    }

    #[tokio::test]
    async fn a_finished_child_and_its_notification_are_written_together() {
        let dir = tempfile::tempdir().unwrap();
        let parent = AgentId::random();
        let child = AgentId::random();
        {
            let store = Store::open(dir.path(), StoreOptions::default()).unwrap();
            let mut rec = AgentRecord::new(child, child.short_prefix(8), now_ms());
            rec.status = Status::Completed;
            store
                .finish_agent(&rec, Some((parent, &item("done"))))
                .await
                .unwrap();
        }
        let store = crate::store::reopen_for_tests(dir.path());
        assert_eq!(store.inbox(parent).unwrap().len(), 1);
        assert_eq!(
            store.get_agent(child).unwrap().unwrap().status,
            Status::Completed
        );
    }

    #[tokio::test]
    async fn without_space_a_finish_is_deferred_shown_and_written_when_space_returns() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), StoreOptions::default()).unwrap();
        let (parent, child) = (AgentId::random(), AgentId::random());
        let mut rec = AgentRecord::new(child, child.short_prefix(8), now_ms());
        rec.status = Status::Running;
        store.put_agent_durable(&rec).await.unwrap();

        store.fake_free_space(Some(0));
        rec.status = Status::Completed;
        let err = store
            .finish_agent(&rec, Some((parent, &item("done"))))
            .await
            .unwrap_err();
        assert!(err.is_disk_full(), "{err}");
        assert!(store.is_full());
        // Reads go on, and show the agent as it ended.
        assert_eq!(
            store.get_agent(child).unwrap().unwrap().status,
            Status::Completed
        );
        assert!(store.inbox(parent).unwrap().is_empty());
        // Other writes are refused while full.
        assert!(
            store
                .push_inbox(parent, &item("x"))
                .await
                .unwrap_err()
                .is_disk_full()
        );

        let mut writable = store.writable();
        store.fake_free_space(None);
        tokio::time::timeout(
            std::time::Duration::from_secs(10),
            writable.wait_for(|w| *w),
        )
        .await
        .expect("the store heals once space is back")
        .unwrap();
        assert_eq!(store.deferred_count(), 0);
        assert_eq!(store.inbox(parent).unwrap().len(), 1);
        drop(store);
        // The healer thread lets go of its handle a moment after it reports.
        let store = crate::store::reopen_for_tests(dir.path());
        assert_eq!(
            store.get_agent(child).unwrap().unwrap().status,
            Status::Completed
        );
        assert_eq!(store.inbox(parent).unwrap().len(), 1, "exactly once");
    }
}
