//! The model driver's writers: the run core's, each followed by the
//! written entry applied to the conversation the next request sends.

use std::sync::Arc;

use serde_json::Value;

use super::ModelDriver;
use super::conversation::apply_entry;
use super::round::Answers;
use crate::agent::run::Halt;
use crate::domain::{Role, StopReason, ToolFileChange, TranscriptEntry, Usage};
use crate::store::InboxKey;

impl ModelDriver {
    fn apply(&mut self, entry: &Arc<TranscriptEntry>) {
        apply_entry(&mut self.messages, entry);
    }

    /// Delivers `blocks` and the inbox as one user message (the core's
    /// `deliver`); whether anything was appended.
    pub(super) async fn deliver_inbox(&mut self, blocks: Vec<Value>) -> Result<bool, Halt> {
        self.deliver_answers(Answers {
            blocks,
            changes: Vec::new(),
        })
        .await
    }

    /// `deliver_inbox` for a round's answers, with the file changes
    /// recorded beside them.
    pub(super) async fn deliver_answers(&mut self, answers: Answers) -> Result<bool, Halt> {
        let Answers { blocks, changes } = answers;
        match self.core.deliver(blocks, changes).await? {
            Some(entry) => {
                self.apply(&entry);
                Ok(true)
            }
            None => Ok(false),
        }
    }

    pub(super) async fn write_entry(
        &mut self,
        role: Role,
        content_json: Vec<u8>,
        usage: Option<Usage>,
        stop_reason: Option<StopReason>,
        consumed: &[InboxKey],
    ) -> Result<(), Halt> {
        let entry = self
            .core
            .write_entry(role, content_json, usage, stop_reason, consumed)
            .await?;
        self.apply(&entry);
        Ok(())
    }

    pub(super) async fn write_results(
        &mut self,
        content_json: Vec<u8>,
        file_changes: Vec<ToolFileChange>,
        consumed: &[InboxKey],
    ) -> Result<(), Halt> {
        let entry = self
            .core
            .write_results(content_json, file_changes, consumed)
            .await?;
        self.apply(&entry);
        Ok(())
    }

    pub(super) async fn append_entry(
        &mut self,
        entry: TranscriptEntry,
        consumed: &[InboxKey],
    ) -> Result<(), Halt> {
        let entry = self.core.append_entry(entry, consumed).await?;
        self.apply(&entry);
        Ok(())
    }
}
