//! The supervisor's side of external agents (DESIGN §19): which entry runs
//! one, what a run of it is given, and whether it can run again.

use std::sync::Arc;

use super::Supervisor;
use super::registry::AgentHandle;
use crate::agent::Runner;
use crate::agent::external::ExternalSetup;
use crate::config::external_agents::{self, ExternalAgentDef};
use crate::domain::{AgentRecord, ExternalAgentName, ExternalRun, PromptContext};
use crate::error::AgentdError;
use crate::mcp::Setup;

impl Supervisor {
    /// The entry named `name`: config.toml's, else a built-in one whose
    /// command is on the daemon's PATH.
    pub(super) fn external_def(
        &self,
        name: &ExternalAgentName,
    ) -> Result<ExternalAgentDef, String> {
        external_agents::resolve(
            &self.config().agents,
            name,
            std::env::var_os("PATH").as_deref(),
        )
    }

    /// The external agents an agent here can be run by, by name.
    pub fn external_agents(&self) -> Vec<ExternalAgentName> {
        external_agents::available(&self.config().agents, std::env::var_os("PATH").as_deref())
    }

    /// The runner of `record`, which has no model: its external agent,
    /// with the agent's slot and MCP servers.
    pub(super) fn external_runner(
        &self,
        record: &AgentRecord,
        prompt: &PromptContext,
        handle: &Arc<AgentHandle>,
    ) -> Result<Runner, AgentdError> {
        let Some(ext) = &record.external else {
            return Err(AgentdError::refused(format!(
                "agent {} has neither a model nor an external agent",
                record.short_id
            )));
        };
        let def = self
            .external_def(&ext.agent)
            .map_err(AgentdError::refused)?;
        let mcp = Setup::from_json(&prompt.mcp_json)
            .servers
            .into_iter()
            .filter(|s| s.listed.is_ok())
            .map(|s| s.def)
            .collect();
        Ok(Runner::External(Box::new(ExternalSetup {
            def,
            slot: handle.external.clone(),
            mcp,
            homes: crate::agent::external::home::root(&self.settings.info().data_dir, record.id),
        })))
    }

    /// Why the external agent `record` cannot run again, if it cannot:
    /// its entry is gone, or its session cannot be reopened and no process
    /// of it waits.
    pub(super) fn external_resumable(
        &self,
        record: &AgentRecord,
        ext: &ExternalRun,
    ) -> Result<(), String> {
        self.external_def(&ext.agent)?;
        let waiting = self
            .handle(record)
            .map(|h| h.external.has_live())
            .unwrap_or(false);
        if !ext.session_id.is_empty() && !ext.reopenable && !waiting {
            return Err(format!(
                "{} cannot reopen its session {} in a new process (it offers neither session/load nor session/resume), and its process has ended; the transcript is intact",
                ext.agent, ext.session_id
            ));
        }
        Ok(())
    }

    /// Ends the process an external agent keeps between runs (it was
    /// cancelled, failed or removed).
    pub(super) async fn end_external(&self, record: &AgentRecord) {
        if record.external.is_some()
            && let Ok(handle) = self.handle(record)
        {
            handle.external.end().await;
        }
    }
}

/// The refusal of a fork of an external agent.
pub(super) fn no_fork(record: &AgentRecord) -> Option<AgentdError> {
    record.external.as_ref().map(|ext| {
        AgentdError::refused(format!(
            "agent {} is run by {} over ACP: its prompt is that agent's own, so a fork cannot share it byte for byte; start a new agent with the context you need instead",
            record.short_id, ext.agent
        ))
    })
}
