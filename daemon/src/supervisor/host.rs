//! What turn loops may ask of the supervisor (`agent::AgentHost`).

use std::sync::Arc;

use serde_json::Value;
use tokio::sync::oneshot;

use super::Supervisor;
use crate::agent::permission::{Answer, PermissionAsk};
use crate::agent::{AgentHost, BoxFuture, OrchestrationCall};
use crate::domain::{AgentRecord, ToolRef};
use crate::tools::ToolOutput;

pub(super) struct SupervisorHost(pub(super) Arc<Supervisor>);

impl AgentHost for SupervisorHost {
    fn ask(
        &self,
        agent: &AgentRecord,
        tool: ToolRef,
        input: &Value,
        tool_use_id: &str,
    ) -> (PermissionAsk, oneshot::Receiver<Answer>) {
        self.0.open_ask(agent, tool, input, tool_use_id)
    }

    fn withdraw_ask(&self, request_id: &str) {
        self.0.close_ask(request_id);
    }

    fn run_orchestration<'a>(&'a self, call: OrchestrationCall<'a>) -> BoxFuture<'a, ToolOutput> {
        Box::pin(self.0.run_orchestration_tool(call))
    }

    fn budget_spent(&self, agent: &AgentRecord) -> Option<String> {
        self.0.budget_spent(agent)
    }

    fn request_permits<'a>(
        &'a self,
        agent: &'a AgentRecord,
    ) -> BoxFuture<'a, Vec<tokio::sync::OwnedSemaphorePermit>> {
        Box::pin(self.0.request_permits(agent))
    }

    fn turn_begins<'a>(&'a self, agent: &'a AgentRecord, seq: u64) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            // A turn boundary: what the agent committed in the turn before
            // goes onto its branch, then the workspace is recorded.
            self.0.take_in_commits(agent).await;
            self.0.checkpoint_turn(agent, seq).await;
        })
    }
}
