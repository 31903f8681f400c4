//! Moving a foreground run to the background: `agentctl bg`, Ctrl-B, the
//! `Background` RPC and the auto-background timer (DESIGN §4). The race
//! with the run's end is decided in `agent::foreground`; this file finds
//! the run and tells its attachers.

use std::sync::Arc;
use std::time::Duration;

use super::{Supervisor, short};
use crate::agent::Release;
use crate::domain::{AgentId, AgentRecord, ReleaseReason};
use crate::error::AgentdError;

impl Supervisor {
    /// Releases the agent's foreground waiter at once; the agent keeps
    /// running untouched. Returns the agent and what happened.
    pub async fn background(&self, query: &str) -> Result<(AgentRecord, Release), AgentdError> {
        let record = self.resolve(query)?;
        let release = self.release(record.id, ReleaseReason::Request)?;
        Ok((self.reload(&record)?, release))
    }

    pub(super) fn release(&self, id: AgentId, why: ReleaseReason) -> Result<Release, AgentdError> {
        let record = self
            .store
            .get_agent(id)?
            .ok_or_else(|| AgentdError::NotFound(format!("agent {id} was removed")))?;
        let handle = self.handle(&record)?;
        let not_running = || {
            AgentdError::refused(format!(
                "agent {} is {}, not running; only a running agent can move to the background",
                short(&record),
                record.status
            ))
        };
        let foreground = handle.foreground().ok_or_else(not_running)?;
        match foreground.release() {
            Release::Released => {
                handle.hub.publish_released(why);
                tracing::info!(agent = %id, why = why.as_str(), "moved to the background");
                Ok(Release::Released)
            }
            Release::AlreadyBackground => Ok(Release::AlreadyBackground),
            Release::Ended => Err(not_running()),
        }
    }

    /// Releases a foreground agent to the background after the configured
    /// time, unless it ended or was released before.
    pub(super) fn arm_auto_background(self: &Arc<Self>, id: AgentId) {
        let secs = self.config().auto_background_secs();
        if secs == 0 {
            return;
        }
        let sup = self.clone();
        self.runs.spawn(async move {
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_secs(secs)) => {
                    if let Err(e) = sup.release(id, ReleaseReason::Auto) {
                        tracing::debug!(agent = %id, error = %e, "auto-background skipped");
                    }
                }
                _ = sup.runs.shutdown_token().cancelled() => {}
            }
        });
    }
}
