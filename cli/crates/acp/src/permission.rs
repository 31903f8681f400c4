//! The daemon's permission asks, put to the editor as
//! `session/request_permission`; its answer is the daemon's answer.

use std::sync::Arc;

use agentd_shared::proto as pb;
use pb::permission_answer::Decision;
use serde_json::json;

use super::peer::Peer;
use super::session::Session;
use super::subagents::Subagents;
use super::updates;

const ALLOW_ONCE: &str = "allow-once";
const ALLOW_ALWAYS: &str = "allow-always";
const REJECT: &str = "reject-once";
const REJECT_ALWAYS: &str = "reject-always";

/// The call an ask is about, as `request_permission` names it: the call
/// itself, or for a descendant's ask the session's call it runs under
/// (`under`), retitled for the ask, with the asked call in
/// `_meta.agentd.subagentCall`. With the id of the call it updates.
fn asked_call(
    ask: &pb::PermissionRequest,
    subagent: bool,
    under: Option<&str>,
) -> (String, serde_json::Value) {
    let input: serde_json::Value = serde_json::from_str(&ask.input_json).unwrap_or_default();
    let title = updates::tool_title(&ask.tool_name, &input);
    if let Some(call) = under {
        let nested = json!({
            "toolCallId": call,
            "title": format!("subagent {} asks: {title}", ask.agent_short_id),
            "content": what_runs(ask),
            "_meta": {"agentd": {"subagentCall": {
                "agentId": ask.agent_id,
                "toolCallId": ask.tool_use_id,
                "toolName": ask.tool_name,
                "rawInput": input,
            }}},
        });
        return (call.to_string(), nested);
    }
    let call_id = if ask.tool_use_id.is_empty() {
        format!("permission-{}", ask.request_id)
    } else {
        ask.tool_use_id.clone()
    };
    let title = if subagent {
        format!("subagent {}: {title}", ask.agent_short_id)
    } else {
        title
    };
    let call = json!({
        "toolCallId": call_id,
        "title": title,
        "kind": updates::tool_kind(&ask.tool_name),
        "status": "pending",
        "content": what_runs(ask),
        "rawInput": input,
    });
    (call_id, call)
}

/// The call's content for the ask: everything it would run, made
/// visible, as one text block — the title is one line and may be cut,
/// and the person answers about what they can read.
fn what_runs(ask: &pb::PermissionRequest) -> serde_json::Value {
    let text = crate::permission_prompt::what_runs(ask);
    json!([{"type": "content", "content": {"type": "text", "text": format!("```\n{text}\n```")}}])
}

/// Asks the editor about `ask` and answers the daemon up the session's
/// attach stream — the one current when the answer comes: an ask still
/// open after the stream was lost and made again is answered there. (An
/// ask a daemon restart dropped ends with its call, which the revived
/// agent records as not run; the daemon refuses a late answer to it.)
pub async fn ask(
    peer: Peer,
    session: Arc<Session>,
    subagents: Subagents,
    ask: pb::PermissionRequest,
) {
    // "Always" keeps the ask's rules for every agent when it has any
    // (DESIGN §24), else holds for this agent.
    let remembers = !ask.remember_rules.is_empty();
    let reply = |decision: Decision, reason: String| {
        let session = session.clone();
        let request_id = ask.request_id.clone();
        async move {
            session.answered(&request_id);
            let answer = match decision {
                Decision::AllowAlways if remembers => {
                    crate::permission_prompt::remembered(&request_id)
                }
                _ => crate::permission_prompt::answer(&request_id, decision, reason),
            };
            let _ = session
                .attach_sender()
                .send(pb::AttachRequest {
                    request: Some(pb::attach_request::Request::PermissionAnswer(answer)),
                })
                .await;
        }
    };
    let always = if remembers {
        format!(
            "Always allow, for every agent: {}",
            crate::permission_prompt::rules_kept(&ask)
        )
    } else {
        format!("Always allow {} (this agent)", ask.tool_name)
    };
    // "Always reject" in this session: answered without asking again.
    if session.rejects_always(&ask.tool_name) {
        reply(
            Decision::Deny,
            format!(
                "the person rejected every {} call in this session",
                ask.tool_name
            ),
        )
        .await;
        return;
    }
    let subagent = ask.agent_id != session.id;
    // A descendant's ask is put on the session's call it runs under.
    let under = match subagent {
        true => subagents.call_for(&ask.agent_id).await,
        false => None,
    };
    let (call_id, tool_call) = asked_call(&ask, subagent, under.as_deref());
    if subagent && under.is_none() {
        // The editor has not seen this subagent's calls: show this one first.
        let mut shown = tool_call.clone();
        shown["sessionUpdate"] = json!("tool_call");
        peer.notify(
            "session/update",
            json!({"sessionId": session.id, "update": shown}),
        );
    }
    let answer = peer
        .request(
            "session/request_permission",
            json!({
                "sessionId": session.id,
                "toolCall": tool_call,
                "options": [
                    {"optionId": ALLOW_ONCE, "name": "Allow once", "kind": "allow_once"},
                    {"optionId": ALLOW_ALWAYS, "name": always, "kind": "allow_always"},
                    {"optionId": REJECT, "name": "Reject", "kind": "reject_once"},
                    {"optionId": REJECT_ALWAYS, "name": format!("Always reject {}", ask.tool_name), "kind": "reject_always"},
                ],
            }),
        )
        .await;
    let (decision, reason) = decision_of(&answer, &session, &ask);
    let allowed = matches!(decision, Decision::AllowOnce | Decision::AllowAlways);
    reply(decision, reason).await;
    let after = match &under {
        // The call shows its own title again; the child goes on.
        Some(call) => Some(json!({
            "sessionUpdate": "tool_call_update",
            "toolCallId": call,
            "title": subagents.title(call).unwrap_or_else(|| "Agent".to_string()),
        })),
        // Not under a call of this session (its parent is not followed):
        // the call shown for the ask ends with it, so none is left open.
        None if subagent => Some(updates::status_update(
            &call_id,
            if allowed { "completed" } else { "failed" },
        )),
        None => None,
    };
    if let Some(update) = after {
        peer.notify(
            "session/update",
            json!({"sessionId": session.id, "update": update}),
        );
    }
}

/// What the editor's answer to the ask means for the daemon.
fn decision_of(
    answer: &Result<serde_json::Value, serde_json::Value>,
    session: &Session,
    ask: &pb::PermissionRequest,
) -> (Decision, String) {
    match answer {
        Ok(result) if result["outcome"]["outcome"] == "selected" => {
            match result["outcome"]["optionId"].as_str() {
                Some(ALLOW_ONCE) => (Decision::AllowOnce, String::new()),
                Some(ALLOW_ALWAYS) => (Decision::AllowAlways, String::new()),
                Some(REJECT_ALWAYS) => {
                    session.reject_always(&ask.tool_name);
                    (
                        Decision::Deny,
                        "the person rejected it in the editor".to_string(),
                    )
                }
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
    }
}
