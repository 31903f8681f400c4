//! Compacting an agent's context by hand (`CompactAgent`, `agentctl
//! compact`, DESIGN §17): a running agent compacts at its next turn
//! boundary; an idle one gets a run that only compacts, then goes back to
//! how it was. Answered once the boundary is on disk.

use std::sync::Arc;

use tokio::sync::oneshot;

use super::{Supervisor, short};
use crate::agent::compaction::{CompactQueue, CompactRequest};
use crate::domain::{AgentRecord, CompactBoundary, Status};
use crate::error::AgentdError;

/// The longest instructions for a summary (as a message).
const MAX_INSTRUCTIONS_BYTES: usize = 64 * 1024;

impl Supervisor {
    /// Compacts the agent `query` names; returns it with its new boundary.
    pub async fn compact(
        self: &Arc<Self>,
        query: &str,
        instructions: Option<String>,
    ) -> Result<(AgentRecord, CompactBoundary), AgentdError> {
        if let Some(i) = &instructions
            && i.len() > MAX_INSTRUCTIONS_BYTES
        {
            return Err(AgentdError::invalid(format!(
                "the instructions are {} bytes; the limit is {MAX_INSTRUCTIONS_BYTES} bytes (64 KiB)",
                i.len()
            )));
        }
        let record = self.resolve(query)?;
        if matches!(record.status, Status::Failed | Status::Cancelled) {
            return Err(AgentdError::refused(format!(
                "agent {} is {}; it cannot be continued, so there is nothing to compact for",
                short(&record),
                record.status
            )));
        }
        if record.transcript_len == 0 {
            return Err(AgentdError::refused(format!(
                "agent {} has no conversation to compact yet",
                short(&record)
            )));
        }
        let handle = self.handle(&record)?;
        let (done, answer) = oneshot::channel();
        let mut request = CompactRequest { instructions, done };
        // A run may start or end between looking and acting: look again.
        for _ in 0..8 {
            let running = handle.run().as_ref().map(|run| run.compaction.clone());
            if let Some(queue) = running {
                queue.push(request);
                return self.compacted(&record, answer).await;
            }
            let queue = Arc::new(CompactQueue::default());
            queue.push(request);
            let current = self.reload(&record)?;
            if self.revive_for(current, Some(queue.clone())).await? {
                return self.compacted(&record, answer).await;
            }
            request = queue.take().pop().ok_or_else(|| {
                AgentdError::refused("the compaction request was taken by a run that ended")
            })?;
            let now = self.reload(&record)?;
            if !handle.is_running()
                && !matches!(
                    now.status,
                    Status::Completed | Status::Paused | Status::Interrupted
                )
            {
                return Err(AgentdError::refused(format!(
                    "agent {} is {}; there is nothing to compact for",
                    short(&now),
                    now.status
                )));
            }
        }
        Err(AgentdError::refused(format!(
            "agent {} kept starting and stopping; ask again",
            short(&record)
        )))
    }

    async fn compacted(
        &self,
        record: &AgentRecord,
        answer: oneshot::Receiver<Result<CompactBoundary, String>>,
    ) -> Result<(AgentRecord, CompactBoundary), AgentdError> {
        let boundary = answer
            .await
            .map_err(|_| {
                AgentdError::refused(format!(
                    "agent {} stopped before it compacted; ask again once it runs or is idle",
                    short(record)
                ))
            })?
            .map_err(|why| {
                AgentdError::refused(format!("agent {} was not compacted: {why}", short(record)))
            })?;
        Ok((self.reload(record)?, boundary))
    }
}
