//! What a turn loop needs from the daemon around it, and nothing more:
//! asking the user for permission, and running the tools that reach other
//! agents. The supervisor implements it; the loop never sees the supervisor.

use std::future::Future;
use std::pin::Pin;

use serde_json::Value;
use tokio::sync::oneshot;

use super::permission::{Answer, PermissionAsk};
use super::run_permit::RunPermit;
use crate::domain::{AgentRecord, ToolName, ToolRef};
use crate::model::MessageBytes;
use crate::tools::ToolOutput;

pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// One call of `Agent`, `SendMessage`, `ListAgents` or `TaskStop`.
pub struct OrchestrationCall<'a> {
    pub caller: &'a AgentRecord,
    pub tool: ToolName,
    pub tool_use_id: &'a str,
    pub input: &'a Value,
    /// The caller's running slot, lent while it waits on a foreground child.
    pub slot: &'a RunPermit,
    /// The caller's conversation as its requests send it (with each
    /// message's seq), up to the assistant message making this call: what
    /// a fork inherits, and what the recursion guard scans.
    pub history: &'a [(u64, MessageBytes)],
}

pub trait AgentHost: Send + Sync + 'static {
    /// Opens a permission ask for `agent` and shows it to whoever may
    /// answer; the receiver gets the answer.
    fn ask(
        &self,
        agent: &AgentRecord,
        tool: ToolRef,
        input: &Value,
        tool_use_id: &str,
    ) -> (PermissionAsk, oneshot::Receiver<Answer>);

    /// Withdraws an unanswered ask (the agent stopped waiting).
    fn withdraw_ask(&self, request_id: &str);

    /// Runs a tool that acts on other agents.
    fn run_orchestration<'a>(&'a self, call: OrchestrationCall<'a>) -> BoxFuture<'a, ToolOutput>;

    /// A user turn begins with entry `seq`, before anything of it runs
    /// (DESIGN §23): the host takes in what the agent committed in the
    /// turn before and records the workspace as this turn's checkpoint
    /// (once — a turn's checkpoint is never replaced). Failures are the
    /// host's to log: the turn goes on.
    fn turn_begins<'a>(&'a self, agent: &'a AgentRecord, seq: u64) -> BoxFuture<'a, ()> {
        let _ = (agent, seq);
        Box::pin(async {})
    }

    /// Before every model request (DESIGN §24): why `agent` may not send
    /// one — a budget of it or of an ancestor is spent by that budget's
    /// family, or cannot be checked — or None.
    fn budget_spent(&self, agent: &AgentRecord) -> Option<String> {
        let _ = agent;
        None
    }

    /// Before every model request (DESIGN §24): waits for a slot of each
    /// family's `max_concurrent_requests` that `agent` is under; the
    /// request is sent while they are held.
    fn request_permits<'a>(
        &'a self,
        agent: &'a AgentRecord,
    ) -> BoxFuture<'a, Vec<tokio::sync::OwnedSemaphorePermit>> {
        let _ = agent;
        Box::pin(async { Vec::new() })
    }
}
