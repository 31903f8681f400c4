//! Inboxes, and the two transactions that make notifications exactly-once:
//! a child's task notification enters its parent's inbox in the same
//! transaction that records the child's end ([`Store::finish_agent`]), and
//! an item leaves the inbox in the same transaction that writes it into the
//! transcript ([`Append::consumed`](super::Append)).

use sled::Transactional;
use sled::transaction::{ConflictableTransactionError, TransactionError};

use super::health::DeferredNote;
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

pub(super) fn new_key(trees: &Trees, id: AgentId) -> sled::Result<InboxKey> {
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
        self.flush_on(trees).await?;
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
        self.flush_on(trees).await?;
        Ok(removed)
    }

    /// Records an agent's final state and, when it has a parent to notify,
    /// puts the notification in the parent's inbox — both or neither, and
    /// on disk when this returns Ok. Without disk space (refused up front,
    /// or the flush failed) both are kept for later and shown meanwhile
    /// (see `health`; `ensure_on_disk` tells the difference) and `DiskFull`
    /// is returned.
    pub async fn finish_agent(
        &self,
        record: &AgentRecord,
        notify: Option<(AgentId, &InboxItem)>,
    ) -> Result<(), StoreError> {
        let mut note = notify.map(|(parent, item)| DeferredNote {
            parent,
            key: None,
            written_with: None,
            item: item.clone(),
        });
        let written = self.trees_for_write().and_then(|trees| {
            let mut keyed = Vec::new();
            if let Some(note) = &mut note {
                let key = new_key(&trees, note.parent).map_err(|e| self.write_error(e))?;
                note.key = Some(key);
                note.written_with = Some((record.id, codec::encode_agent(record)));
                keyed.push((key, note.item.clone()));
            }
            self.write_finished(&trees, std::slice::from_ref(record), &keyed)
                .map_err(|e| self.write_error(e))?;
            Ok(trees)
        });
        match written {
            Ok(trees) => {
                self.forget_deferred(record.id);
                // Applied in sled's memory: a failed flush leaves it there
                // until the reopen drops it, so it is kept to be written
                // again (found by a review: a pause acknowledged in
                // that window was not on disk).
                match self.flush_sled(trees).await? {
                    Ok(()) => Ok(()),
                    Err(e) if super::error::is_out_of_space(&e) => {
                        Err(self.inner.health.poisoned_deferring(self, record, note))
                    }
                    Err(e) => Err(self.write_error(e)),
                }
            }
            Err(e) => {
                if e.is_disk_full() {
                    self.defer_record(record, note);
                }
                Err(e)
            }
        }
    }

    /// Writes records and notifications (under their inbox keys) in one
    /// transaction.
    pub(super) fn write_finished(
        &self,
        trees: &Trees,
        records: &[AgentRecord],
        notes: &[(InboxKey, InboxItem)],
    ) -> sled::Result<()> {
        let records: Vec<(AgentId, Vec<u8>)> = records
            .iter()
            .map(|r| (r.id, codec::encode_agent(r)))
            .collect();
        let keyed: Vec<(InboxKey, Vec<u8>)> = notes
            .iter()
            .map(|(key, item)| (*key, codec::encode_inbox_item(item)))
            .collect();
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
    use crate::{Append, StoreOptions};

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
        let entry = [crate::test_entry(0, "delivered")];
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
        let store = crate::reopen_for_tests(dir.path());
        assert_eq!(store.inbox(parent).unwrap().len(), 1);
        assert_eq!(
            store.get_agent(child).unwrap().unwrap().status,
            Status::Completed
        );
    }

    #[tokio::test]
    async fn without_space_a_finish_is_deferred_shown_and_written_when_space_returns() {
        let (dir, store, parent, mut rec) = running_child().await;
        let child = rec.id;

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
        assert_on_disk(&dir, child, Status::Completed, parent);
    }

    #[tokio::test]
    async fn a_finish_whose_flush_fails_is_not_on_disk_until_written_again_once() {
        let (dir, store, parent, mut rec) = running_child().await;
        let child = rec.id;

        // sled applies the record and the notification in memory; the
        // flush after them runs out of space.
        store.fail_next_flush(nix::libc::ENOSPC);
        rec.status = Status::Paused;
        let err = store
            .finish_agent(&rec, Some((parent, &item("paused"))))
            .await
            .unwrap_err();
        assert!(err.is_disk_full(), "{err}");
        // Shown as it ended, but never acknowledged as on disk: a crash now
        // would undo it.
        assert_eq!(
            store.get_agent(child).unwrap().unwrap().status,
            Status::Paused
        );
        let not_on_disk = store.ensure_on_disk(child, || "paused".into()).unwrap_err();
        assert!(
            matches!(not_on_disk, StoreError::NotOnDisk { .. }),
            "{not_on_disk}"
        );
        assert_eq!(store.deferred_count(), 2, "the record and its notification");

        // Space is back (this flush failure was only pretended, so the
        // reopen keeps what sled held: the case of a write that reached the
        // disk although its flush failed). Written again under the same key,
        // the notification is there once.
        healed(&store).await;
        assert_eq!(store.deferred_count(), 0);
        store.ensure_on_disk(child, || "paused".into()).unwrap();
        assert_eq!(store.inbox(parent).unwrap().len(), 1, "exactly once");
        drop(store);
        assert_on_disk(&dir, child, Status::Paused, parent);
    }

    #[tokio::test]
    async fn an_append_delivering_an_item_no_longer_in_the_inbox_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), StoreOptions::default()).unwrap();
        let id = AgentId::random();
        let kept = store.push_inbox(id, &item("kept")).await.unwrap();
        let gone = store.push_inbox(id, &item("withdrawn")).await.unwrap();
        assert!(store.withdraw_inbox_item(&gone).await.unwrap());

        let entry = [crate::test_entry(0, "kept withdrawn")];
        let err = store
            .append_durable(
                id,
                Append {
                    consumed: &[kept, gone],
                    ..Append::entries(&entry)
                },
            )
            .await
            .unwrap_err();
        assert!(matches!(err, StoreError::InboxChanged), "{err}");
        assert!(store.transcript(id, 0, 10).unwrap().is_empty());
        assert_eq!(store.inbox(id).unwrap().len(), 1, "the item still waits");
        assert_eq!(store.unconfirmed(id), None);

        // Read again, the delivery goes through.
        let entry = [crate::test_entry(0, "kept")];
        store
            .append_durable(
                id,
                Append {
                    consumed: &[kept],
                    ..Append::entries(&entry)
                },
            )
            .await
            .unwrap();
        assert_eq!(store.transcript(id, 0, 10).unwrap().len(), 1);
        assert!(store.inbox(id).unwrap().is_empty());
    }

    /// A store holding one running child of a parent that is not stored.
    async fn running_child() -> (tempfile::TempDir, Store, AgentId, AgentRecord) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), StoreOptions::default()).unwrap();
        let (parent, child) = (AgentId::random(), AgentId::random());
        let mut rec = AgentRecord::new(child, child.short_prefix(8), now_ms());
        rec.status = Status::Running;
        store.put_agent_durable(&rec).await.unwrap();
        (dir, store, parent, rec)
    }

    /// Opened again from disk, `child` ended as `status` and `parent`
    /// holds exactly one notification.
    fn assert_on_disk(dir: &tempfile::TempDir, child: AgentId, status: Status, parent: AgentId) {
        // The healer thread lets go of its handle a moment after it reports.
        let store = crate::reopen_for_tests(dir.path());
        assert_eq!(store.get_agent(child).unwrap().unwrap().status, status);
        assert_eq!(store.inbox(parent).unwrap().len(), 1, "exactly once");
    }

    /// Waits until the healer has written what was deferred.
    async fn healed(store: &Store) {
        let mut writable = store.writable();
        tokio::time::timeout(
            std::time::Duration::from_secs(10),
            writable.wait_for(|w| *w),
        )
        .await
        .expect("the store heals")
        .unwrap();
    }

    #[tokio::test]
    async fn a_notification_its_parent_took_before_the_flush_failed_is_not_written_again() {
        let (_dir, store, parent, mut rec) = running_child().await;
        let child = rec.id;
        store.fail_next_flush(nix::libc::ENOSPC);
        rec.status = Status::Completed;
        store
            .finish_agent(&rec, Some((parent, &item("done"))))
            .await
            .unwrap_err();
        // The parent took the notification (sled served it from memory)
        // and its write reached the disk with the child's record: here
        // done directly on sled, as the store refuses writes meanwhile.
        let (key, _) = store.inbox(parent).unwrap().remove(0);
        store.trees().unwrap().inbox.remove(key).unwrap().unwrap();

        healed(&store).await;
        assert!(
            store.inbox(parent).unwrap().is_empty(),
            "delivered once, not brought back"
        );
        assert_eq!(
            store.get_agent(child).unwrap().unwrap().status,
            Status::Completed
        );
    }

    #[tokio::test]
    async fn a_delivery_whose_flush_failed_after_it_reached_the_disk_is_tried_again_as_is() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), StoreOptions::default()).unwrap();
        let id = AgentId::random();
        let key = store.push_inbox(id, &item("news")).await.unwrap();
        let entry = [crate::test_entry(0, "news")];
        let deliver = Append {
            consumed: &[key],
            ..Append::entries(&entry)
        };
        store.fail_next_flush(nix::libc::ENOSPC);
        let err = store.append_durable(id, deliver).await.unwrap_err();
        assert!(err.is_disk_full(), "{err}");
        // The reopen finds it on disk (the flush failed on later data).
        healed(&store).await;
        let deliver = Append {
            consumed: &[key],
            ..Append::entries(&entry)
        };
        store.append_durable(id, deliver).await.unwrap();
        let entries = store.transcript(id, 0, 10).unwrap();
        assert_eq!(entries.len(), 1);
        assert_eq!(entries[0].content_json, entry[0].content_json);
        assert!(store.inbox(id).unwrap().is_empty());
    }

    #[tokio::test]
    async fn after_a_write_failed_for_another_reason_nothing_is_acknowledged_as_on_disk() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), StoreOptions::default()).unwrap();
        let id = AgentId::random();
        let mut rec = AgentRecord::new(id, id.short_prefix(8), now_ms());
        rec.status = Status::Running;
        store.put_agent_durable(&rec).await.unwrap();
        store.ensure_on_disk(id, || "running".into()).unwrap();
        store.fail_next_flush(nix::libc::EIO);
        rec.status = Status::Paused;
        let err = store.finish_agent(&rec, None).await.unwrap_err();
        assert!(matches!(err, StoreError::Io(_)), "{err}");
        let refused = store
            .ensure_on_disk(id, || "agent x stopped (paused)".into())
            .unwrap_err();
        assert!(
            matches!(refused, StoreError::WriteFailed { .. }),
            "{refused}"
        );
        assert!(refused.to_string().contains("restart agentd"), "{refused}");
    }
}
