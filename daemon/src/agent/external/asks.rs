//! An external agent's `session/request_permission`, answered as agentd's
//! own asks are (DESIGN §8, §19): its call's kind is gated as the tool it
//! is (`execute` as Bash, `edit`/`delete`/`move` as Edit, `read` and
//! `search` as Read and Grep; the other kinds by `gate_external`), so the
//! agent's permission mode decides — bypass allows, plan refuses edits —
//! and what is left is asked of agentd's clients, who answer as for any
//! agent (an "always" is kept in the record and given to the agent as its
//! `allow_always` option).

use serde_json::Value;

use super::ExternalDriver;
use super::turn::TurnState;
use crate::acp_client::wire::{self, CallFields, CallKind, OptionKind, PermissionRequest};
use crate::acp_client::{Connection, RpcError};
use crate::agent::run::{Halt, RunEnd};
use crate::domain::{ExternalToolKind, ToolName, ToolRef};

/// The tool a call of `kind` is gated as.
pub(super) fn tool_of(kind: CallKind) -> ToolRef {
    match kind {
        CallKind::Execute => ToolName::Bash.into(),
        CallKind::Edit | CallKind::Delete | CallKind::Move => ToolName::Edit.into(),
        CallKind::Read => ToolName::Read.into(),
        CallKind::Search => ToolName::Grep.into(),
        CallKind::Fetch => ToolRef::External(ExternalToolKind::Fetch),
        CallKind::SwitchMode => ToolRef::External(ExternalToolKind::SwitchMode),
        CallKind::Think => ToolRef::External(ExternalToolKind::Think),
        CallKind::Other => ToolRef::External(ExternalToolKind::Other),
    }
}

/// What an ask shows of the call: its raw input (the request's, else what
/// an earlier update of the call said); else its title and content text,
/// which is all some agents send (Gemini CLI asks before it reports the
/// call, with the command as the title).
fn ask_input(call: &CallFields, earlier: Option<Value>) -> Value {
    let said = |v: &Value| !v.is_null() && v.as_object().is_none_or(|o| !o.is_empty());
    if let Some(raw) = call.raw_input.clone().filter(said).or(earlier.filter(said)) {
        return raw;
    }
    let mut described = serde_json::Map::new();
    if let Some(title) = call.title.as_deref().filter(|t| !t.trim().is_empty()) {
        described.insert("title".into(), Value::from(title));
    }
    if let Some(text) = call.text.as_deref().filter(|t| !t.trim().is_empty()) {
        described.insert("content".into(), Value::from(text));
    }
    Value::Object(described)
}

impl ExternalDriver {
    /// Answers one permission request of the agent's. Err(stop) when the
    /// agent was stopped while the ask waited (the request is answered
    /// `cancelled`; the caller cancels the turn).
    pub(super) async fn answer_permission(
        &mut self,
        turn: &mut TurnState,
        conn: &Connection,
        id: Value,
        params: &Value,
    ) -> Result<Result<(), RunEnd>, Halt> {
        let request = match PermissionRequest::read(params) {
            Ok(r) => r,
            Err(why) => {
                conn.respond(
                    id,
                    Err(RpcError::new(
                        agentd_shared::jsonrpc::code::INVALID_PARAMS,
                        why,
                    )),
                );
                return Ok(Ok(()));
            }
        };
        self.ensure_call(turn, &request.call).await?;
        let kind = request
            .call
            .kind
            .or_else(|| ExternalDriver::call_kind(turn, &request.call.id))
            .unwrap_or(CallKind::Other);
        let tool = tool_of(kind);
        let input = ask_input(
            &request.call,
            ExternalDriver::call_input(turn, &request.call.id),
        );
        let allowed_before = self.core.record.always_allowed.len();
        let gate = self.core.gate(&tool, false, &input, &request.call.id);
        let asked = self.core.permit(gate, tool, &input, &request.call.id);
        let answer = match asked.await? {
            Err(stop) => {
                conn.respond(id, Ok(wire::permission_outcome(None)));
                return Ok(Err(stop));
            }
            Ok(Some(_refused)) => request.option(OptionKind::RejectOnce),
            Ok(None) if self.core.record.always_allowed.len() > allowed_before => {
                // The answer was "always": kept in the record too.
                if let Err(halt) = self.core.write_record().await {
                    conn.respond(id, Ok(wire::permission_outcome(None)));
                    return Err(halt);
                }
                request.option(OptionKind::AllowAlways)
            }
            Ok(None) => request.option(OptionKind::AllowOnce),
        };
        conn.respond(id, Ok(wire::permission_outcome(answer)));
        Ok(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_are_gated_as_the_tool_they_are() {
        assert_eq!(tool_of(CallKind::Execute), ToolRef::Builtin(ToolName::Bash));
        assert_eq!(tool_of(CallKind::Delete), ToolRef::Builtin(ToolName::Edit));
        assert_eq!(tool_of(CallKind::Search), ToolRef::Builtin(ToolName::Grep));
        assert_eq!(
            tool_of(CallKind::Other),
            ToolRef::External(ExternalToolKind::Other)
        );
    }
}
