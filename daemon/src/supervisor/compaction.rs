//! Compacting an agent's context by hand (`CompactAgent`, `agentctl
//! compact`, DESIGN §17): a running agent compacts at its next turn
//! boundary; an idle one gets a run that only compacts, then goes back to
//! how it was. Answered once the boundary is on disk. Concurrent calls
//! share one compaction (`compact_once`). An external agent manages its
//! own context: asking is refused.

use std::sync::Arc;

use tokio::sync::oneshot;

use super::compact_once::{self, Turn};
use super::registry::AgentHandle;
use super::{Supervisor, short};
use crate::agent::turn::compaction::{CompactQueue, CompactRequest};
use crate::domain::{AgentRecord, CompactBoundary, Status};
use crate::error::AgentdError;

/// The longest instructions for a summary (as a message).
const MAX_INSTRUCTIONS_BYTES: usize = 64 * 1024;

/// How often a call looks again when a run starts or ends under it.
const ATTEMPTS: usize = 8;

impl Supervisor {
    /// The refusal of a compaction for an agent agentd's model loop does
    /// not run (an external agent manages its own context).
    pub(super) fn no_compaction(record: &AgentRecord) -> AgentdError {
        let who = record.external.as_ref().map_or_else(
            || "no model of agentd's".to_string(),
            |e| e.agent.to_string(),
        );
        AgentdError::refused(format!(
            "agent {} runs {who}, an external agent: it manages its own context, so agentd \
             does not compact it",
            short(record)
        ))
    }

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
        if record.external.is_some() {
            return Err(Supervisor::no_compaction(&record));
        }
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
        loop {
            match handle.compact_once.turn(&instructions) {
                Turn::Lead(leader) => {
                    let result = self.compact_now(&record, &handle, &instructions).await;
                    leader.finish(match &result {
                        Ok(boundary) => Ok(boundary.clone()),
                        Err(e) => Err(e.to_string()),
                    });
                    return Ok((self.reload(&record)?, result?));
                }
                Turn::Join { done, same } => match compact_once::wait(done).await {
                    // Asked the same as the call that led: its answer.
                    Some(shared) if same => {
                        let boundary = shared.map_err(AgentdError::refused)?;
                        return Ok((self.reload(&record)?, boundary));
                    }
                    // Other instructions, or a leader that went away: ask
                    // anew now that no compaction is under way.
                    _ => continue,
                },
            }
        }
    }

    /// Hands one compaction to the agent's run (starting one that only
    /// compacts if it is idle) and waits for its boundary. A run that
    /// ends before it comes to the request drops it: ask again.
    async fn compact_now(
        self: &Arc<Self>,
        record: &AgentRecord,
        handle: &Arc<AgentHandle>,
        instructions: &Option<String>,
    ) -> Result<CompactBoundary, AgentdError> {
        for _ in 0..ATTEMPTS {
            let (done, answer) = oneshot::channel();
            let request = CompactRequest {
                instructions: instructions.clone(),
                done,
            };
            self.hand_over(record, handle, request).await?;
            match answer.await {
                Ok(Ok(boundary)) => return Ok(boundary),
                Ok(Err(why)) => {
                    return Err(AgentdError::refused(format!(
                        "agent {} was not compacted: {why}",
                        short(record)
                    )));
                }
                Err(_) => continue,
            }
        }
        Err(AgentdError::refused(format!(
            "agent {} kept stopping before it compacted; ask again",
            short(record)
        )))
    }

    /// Gives `request` to the agent's run, or to a run started for it.
    /// Keeps no reference to the queue it is in: the run that drops the
    /// queue drops the request with it, and whoever waits is told.
    async fn hand_over(
        self: &Arc<Self>,
        record: &AgentRecord,
        handle: &Arc<AgentHandle>,
        mut request: CompactRequest,
    ) -> Result<(), AgentdError> {
        // A run may start or end between looking and acting: look again.
        for _ in 0..ATTEMPTS {
            let running = handle.run().as_ref().map(|run| run.compaction.clone());
            match running {
                Some(Some(queue)) => {
                    queue.push(request);
                    return Ok(());
                }
                Some(None) => return Err(Supervisor::no_compaction(record)),
                None => {}
            }
            let queue = Arc::new(CompactQueue::default());
            queue.push(request);
            let current = self.reload(record)?;
            if self.revive_for(current, Some(queue.clone())).await? {
                return Ok(());
            }
            request = queue.take().pop().ok_or_else(|| {
                AgentdError::refused("the compaction request was taken by a run that ended")
            })?;
            let now = self.reload(record)?;
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
            short(record)
        )))
    }
}
