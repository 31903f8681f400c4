//! How a run writes: every entry durable (with the record, and the inbox
//! items it delivers, in one transaction) before it is published; and what
//! it does when the disk is full — wait, saying so, until the store heals
//! or the agent is stopped. Each writer hands back the entry it wrote, for
//! a driver that keeps its own view of the conversation.

use std::sync::Arc;

use serde_json::{Value, json};

use super::{Halt, RunCore};
use crate::agent::events::StatusSnapshot;
use crate::domain::{
    Role, Status, StopReason, ToolFileChange, TranscriptEntry, Usage, json_bytes, now_ms,
};
use crate::store::{Append, InboxKey, StoreError};

impl RunCore {
    /// Appends `blocks` plus every item waiting in the inbox as one user
    /// message (with `changes`, what the calls whose results `blocks` may
    /// hold changed in files), taking the items out of the inbox in the
    /// same transaction. Returns the entry, if anything was appended.
    pub(in crate::agent) async fn deliver(
        &mut self,
        blocks: Vec<Value>,
        changes: Vec<ToolFileChange>,
    ) -> Result<Option<Arc<TranscriptEntry>>, Halt> {
        // What UserPromptSubmit hooks said of each message, once each.
        let mut heard: std::collections::HashMap<InboxKey, super::hooks::PromptHeard> =
            std::collections::HashMap::new();
        loop {
            let waiting = self.store.inbox(self.record.id)?;
            let keys: Vec<InboxKey> = waiting.iter().map(|(k, _)| *k).collect();
            let mut content = blocks.clone();
            for (key, item) in &waiting {
                if item.kind != crate::domain::InboxKind::Message {
                    content.push(json!({"type": "text", "text": item.text}));
                    continue;
                }
                if !heard.contains_key(key) {
                    let h = self.prompt_hooks(&item.text).await?;
                    heard.insert(*key, h);
                }
                let h = &heard[key];
                if h.refused.is_none() {
                    content.push(json!({"type": "text", "text": item.text}));
                }
                content.extend(h.context.iter().map(|c| json!({"type": "text", "text": c})));
            }
            if content.is_empty() {
                // Only refused messages: taken out, with the notes saying so.
                if !keys.is_empty() {
                    self.note_refused_prompts(&mut heard, &keys).await?;
                }
                return Ok(None);
            }
            self.note_refused_prompts(&mut heard, &[]).await?;
            let content = json_bytes(&Value::Array(content));
            match self.write_results(content, changes.clone(), &keys).await {
                Ok(entry) => return Ok(Some(entry)),
                // An item read above is gone (withdrawn, or dropped with a
                // reopen after a full disk): nothing was written; read the
                // inbox again.
                Err(Halt::Store(StoreError::InboxChanged)) => {
                    tracing::debug!(agent = %self.record.id, "the inbox changed during delivery; reading it again");
                }
                Err(halt) => return Err(halt),
            }
        }
    }

    /// Appends an entry with the record (and removes `consumed` inbox
    /// items) in one durable transaction, then publishes it. Without disk
    /// space it waits for space, then writes.
    pub(in crate::agent) async fn write_entry(
        &mut self,
        role: Role,
        content_json: Vec<u8>,
        usage: Option<Usage>,
        stop_reason: Option<StopReason>,
        consumed: &[InboxKey],
    ) -> Result<Arc<TranscriptEntry>, Halt> {
        let entry = TranscriptEntry {
            seq: self.next_seq,
            role,
            content_json,
            created_at_ms: now_ms(),
            usage,
            stop_reason,
            cache_point: None,
            compact: None,
            file_changes: Vec::new(),
            rule_decisions: Vec::new(),
        };
        self.append_entry(entry, consumed).await
    }

    /// Appends a user entry of tool results (and inbox items), with what
    /// the calls changed in files, as `write_entry` does.
    pub(in crate::agent) async fn write_results(
        &mut self,
        content_json: Vec<u8>,
        file_changes: Vec<ToolFileChange>,
        consumed: &[InboxKey],
    ) -> Result<Arc<TranscriptEntry>, Halt> {
        let entry = TranscriptEntry {
            seq: self.next_seq,
            role: Role::User,
            content_json,
            created_at_ms: now_ms(),
            usage: None,
            stop_reason: None,
            cache_point: None,
            compact: None,
            file_changes,
            rule_decisions: std::mem::take(&mut self.decisions),
        };
        self.append_entry(entry, consumed).await
    }

    /// Appends `entry` (numbered `next_seq`) with the record, as
    /// `write_entry` does.
    pub(in crate::agent) async fn append_entry(
        &mut self,
        entry: TranscriptEntry,
        consumed: &[InboxKey],
    ) -> Result<Arc<TranscriptEntry>, Halt> {
        loop {
            self.record.updated_at_ms = entry.created_at_ms;
            self.record.background = self.foreground.is_background();
            // (The store writes the record counting this entry; the copy
            // here counts it only once it is written.)
            let append = Append {
                consumed,
                ..Append::with_record(std::slice::from_ref(&entry), &self.record)
            };
            match self.store.append_durable(self.record.id, append).await {
                Ok(()) => break,
                Err(e) if e.is_disk_full() => self.wait_for_space(&e).await?,
                Err(e) => return Err(Halt::Store(e)),
            }
        }
        self.next_seq += 1;
        self.record.transcript_len = self.next_seq;
        let entry = Arc::new(entry);
        self.hub.publish_entry(entry.clone());
        Ok(entry)
    }

    pub(in crate::agent) async fn set_status(&mut self, status: Status) -> Result<(), Halt> {
        self.record.status = status;
        self.write_record().await?;
        self.hub.publish_status(StatusSnapshot::of(&self.record));
        Ok(())
    }

    /// Writes the record durably, as it is in memory. Without disk space it
    /// waits for space, then writes.
    pub(in crate::agent) async fn write_record(&mut self) -> Result<(), Halt> {
        loop {
            self.record.background = self.foreground.is_background();
            self.record.updated_at_ms = now_ms();
            match self.store.put_agent_durable(&self.record).await {
                Ok(()) => return Ok(()),
                Err(e) if e.is_disk_full() => self.wait_for_space(&e).await?,
                Err(e) => return Err(Halt::Store(e)),
            }
        }
    }

    /// The disk is full: the agent waits (and says so) until the store
    /// heals, or until it is stopped.
    pub(in crate::agent) async fn wait_for_space(
        &mut self,
        error: &StoreError,
    ) -> Result<(), Halt> {
        let resume_as = self.record.status;
        self.record.status = Status::Waiting;
        // Kept in memory by the store until it can be written: readers see
        // the agent waiting.
        let _ = self.store.put_agent_or_defer(&self.record);
        self.hub.publish_status(StatusSnapshot {
            waiting_for: Some(format!("disk space: {error}")),
            ..StatusSnapshot::of(&self.record)
        });
        tracing::warn!(agent = %self.record.id, "waiting for disk space");
        let mut writable = self.store.writable();
        tokio::select! {
            stop = self.stops.any() => {
                self.record.status = resume_as;
                return Err(Halt::Stop(stop));
            }
            _ = writable.wait_for(|w| *w) => {}
        }
        self.record.status = resume_as;
        self.hub.publish_status(StatusSnapshot::of(&self.record));
        tracing::info!(agent = %self.record.id, "disk space is back; continuing");
        Ok(())
    }
}
