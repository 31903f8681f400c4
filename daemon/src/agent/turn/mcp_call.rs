//! One call of an MCP tool in a round (DESIGN §18): the agent's allowlist
//! and permission mode apply as to any tool, then its server answers
//! (`mcp::servers`); an interrupt or cancel tells the server to cancel.

use std::path::PathBuf;

use serde_json::{Value, json};

use super::ModelDriver;
use super::interrupted;
use super::round::{Call, tool_result};
use crate::agent::run::{Halt, RunEnd};
use crate::domain::{McpToolName, ToolRef};
use crate::mcp::servers::McpCallEnd;

/// How an MCP call of a round ended: its result (and whether it is an
/// error), or its result and the stop that ends the run.
pub(super) enum McpRoundEnd {
    Answered(Value, bool),
    Stopped(Value, RunEnd),
}

impl ModelDriver {
    pub(super) async fn run_mcp(
        &mut self,
        seq: u64,
        index: usize,
        call: &Call,
        tool: &McpToolName,
    ) -> Result<McpRoundEnd, Halt> {
        if !self.may_run_mcp(tool) {
            let out = self.not_allowed(tool);
            return Ok(McpRoundEnd::Answered(tool_result(call, &out), true));
        }
        let input = match self.permit(ToolRef::Mcp(tool.clone()), call).await? {
            Err(super::round::Unpermitted { end, at }) => {
                let out = interrupted::not_run(tool, &end, &at);
                return Ok(McpRoundEnd::Stopped(tool_result(call, &out), end));
            }
            Ok(super::round::Permitted {
                refusal: Some(refusal),
                ..
            }) => {
                return Ok(McpRoundEnd::Answered(tool_result(call, &refusal), true));
            }
            Ok(permitted) => permitted.input,
        };
        let ctx = self.core.tool_context(self.core.spool.path(seq, index));
        let full_text = self.full_output_path(&call.id);
        let cancel = self.core.stops.interrupt.child_token();
        match self.mcp.call(tool, &input, &ctx, cancel, &full_text).await {
            McpCallEnd::Done { content, is_error } => {
                let mut result =
                    json!({"type": "tool_result", "tool_use_id": call.id, "content": content});
                if is_error {
                    result["is_error"] = json!(true);
                }
                Ok(McpRoundEnd::Answered(result, is_error))
            }
            McpCallEnd::Cancelled => {
                let stop = self.core.stops.aborted();
                let cut = interrupted::cut_short(tool, &stop);
                Ok(McpRoundEnd::Stopped(tool_result(call, &cut), stop))
            }
        }
    }

    /// Where the full text of a result too long for the model is kept: the
    /// agent's private temp dir (its Bash can read it there; it goes with
    /// the agent), else the round's spool.
    fn full_output_path(&self, call_id: &str) -> PathBuf {
        let name: String = call_id
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .take(80)
            .collect();
        match crate::sandbox::tmpdir(
            &crate::sandbox::tmp_root(),
            self.core.record.short_id.as_str(),
        ) {
            Ok(dir) => dir.join(format!("mcp-output-{name}.txt")),
            Err(_) => self.core.spool.path(self.core.next_seq, 0),
        }
    }

    /// Whether the agent may call `tool`: always, unless its tools are
    /// limited to a list (a typed subagent, a fork's `fork_tools`) that
    /// does not name it.
    fn may_run_mcp(&self, tool: &McpToolName) -> bool {
        self.allowed_tools
            .as_ref()
            .is_none_or(|allowed| allowed.allows_mcp(tool))
    }
}
