//! The daemon's permission asks, put to the editor as
//! `session/request_permission`; its answer is the daemon's answer.

use std::sync::Arc;

use agentd_shared::proto as pb;
use pb::permission_answer::Decision;
use serde_json::json;
use tokio::sync::mpsc;

use super::peer::Peer;
use super::session::Session;
use super::updates;

const ALLOW_ONCE: &str = "allow-once";
const ALLOW_ALWAYS: &str = "allow-always";
const REJECT: &str = "reject-once";

/// Asks the editor about `ask` and answers the daemon on `attach`.
pub async fn ask(
    peer: Peer,
    session: Arc<Session>,
    attach: mpsc::Sender<pb::AttachRequest>,
    ask: pb::PermissionRequest,
) {
    let input: serde_json::Value = serde_json::from_str(&ask.input_json).unwrap_or_default();
    let mut tool_call = json!({
        "toolCallId": format!("permission-{}", ask.request_id),
        "title": updates::tool_title(&ask.tool_name, &input),
        "kind": updates::tool_kind(&ask.tool_name),
        "status": "pending",
        "rawInput": input,
    });
    if ask.agent_id != session.id {
        tool_call["title"] = json!(format!(
            "subagent {}: {}",
            ask.agent_short_id,
            tool_call["title"].as_str().unwrap_or_default()
        ));
    }
    let answer = peer
        .request(
            "session/request_permission",
            json!({
                "sessionId": session.id,
                "toolCall": tool_call,
                "options": [
                    {"optionId": ALLOW_ONCE, "name": "Allow once", "kind": "allow_once"},
                    {"optionId": ALLOW_ALWAYS, "name": format!("Always allow {}", ask.tool_name), "kind": "allow_always"},
                    {"optionId": REJECT, "name": "Reject", "kind": "reject_once"},
                ],
            }),
        )
        .await;
    let (decision, reason) = match &answer {
        Ok(result) if result["outcome"]["outcome"] == "selected" => {
            match result["outcome"]["optionId"].as_str() {
                Some(ALLOW_ONCE) => (Decision::AllowOnce, String::new()),
                Some(ALLOW_ALWAYS) => (Decision::AllowAlways, String::new()),
                _ => (
                    Decision::Deny,
                    "the person rejected it in the editor".to_string(),
                ),
            }
        }
        // Cancelled (the prompt was), or the editor failed to answer.
        _ => (
            Decision::Deny,
            "not allowed: the editor's prompt was cancelled".to_string(),
        ),
    };
    let _ = attach
        .send(pb::AttachRequest {
            request: Some(pb::attach_request::Request::PermissionAnswer(
                crate::permission_prompt::answer(&ask.request_id, decision, reason),
            )),
        })
        .await;
}
