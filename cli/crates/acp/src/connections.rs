//! The network connections of a session's agent (and of its children, whose
//! connections reach the same attachment) as ACP tool calls: a `fetch` call
//! opened when the proxy decides (DESIGN §14), in progress while an allowed
//! connection is open, ended when it closes — `completed` with the bytes
//! each way, `failed` when it was refused or could not be made. ACP has no
//! update of its own for a connection; a tool call is what every editor
//! shows, and the whole record rides in `_meta.agentd.connection`.
//!
//! Like the other calls, none is left running after its turn: one still
//! open then (a server a background command started) is ended as completed
//! with a pointer to `agentctl network`, and its later close shows nothing.

use std::collections::HashSet;

use agentd_shared::proto as pb;
use serde_json::{Value, json};

#[derive(Default)]
pub struct Connections {
    /// The calls shown as in progress and not ended.
    open: HashSet<String>,
    /// The calls shown ended: a later event of theirs shows nothing.
    ended: HashSet<String>,
}

/// The call's id: the agent's short id and its connection's sequence, so a
/// child's connections never collide with the parent's.
fn call_id(c: &pb::NetworkConnection) -> String {
    format!("agentd-net-{}-{}", c.agent_short_id, c.seq)
}

fn target(c: &pb::NetworkConnection) -> String {
    if c.host.contains(':') {
        format!("[{}]:{}", c.host, c.port)
    } else {
        format!("{}:{}", c.host, c.port)
    }
}

fn refused(c: &pb::NetworkConnection) -> bool {
    c.decision != pb::ConnectionDecision::Allowed as i32
}

/// What the call says in words: the decision and why, the bytes, the error.
fn text(c: &pb::NetworkConnection) -> String {
    let decision = crate::view::network::decision_name(c.decision);
    let mut text = format!("{decision}: {}", c.reason);
    if !refused(c) && c.ended_at.is_some() {
        text.push_str(&format!(
            "\n{} bytes sent, {} bytes received",
            c.bytes_sent, c.bytes_received
        ));
    }
    if !c.error.is_empty() {
        text.push_str(&format!("\n{}", c.error));
    }
    text
}

fn status(c: &pb::NetworkConnection) -> &'static str {
    if refused(c) || !c.error.is_empty() {
        "failed"
    } else if c.ended_at.is_some() || c.cut_off {
        "completed"
    } else {
        "in_progress"
    }
}

fn meta(c: &pb::NetworkConnection) -> Value {
    json!({"agentd": {"connection": {
        "agentShortId": c.agent_short_id,
        "seq": c.seq,
        "host": c.host,
        "port": c.port,
        "method": c.method,
        "decision": crate::view::network::decision_name(c.decision),
        "reason": c.reason,
        "bytesSent": c.bytes_sent,
        "bytesReceived": c.bytes_received,
        "error": c.error,
        "cutOff": c.cut_off,
    }}})
}

fn content(c: &pb::NetworkConnection) -> Value {
    json!([{"type": "content", "content": {"type": "text", "text": text(c)}}])
}

impl Connections {
    /// The update a connection event shows, if any: the call that opens it
    /// (first seen), or the update that ends one shown open.
    pub fn update(&mut self, c: &pb::NetworkConnection) -> Option<Value> {
        let id = call_id(c);
        let status = status(c);
        if self.open.contains(&id) {
            if status == "in_progress" {
                return None;
            }
            self.open.remove(&id);
            self.ended.insert(id.clone());
            return Some(json!({
                "sessionUpdate": "tool_call_update",
                "toolCallId": id,
                "status": status,
                "content": content(c),
                "_meta": meta(c),
            }));
        }
        if self.ended.contains(&id) || (c.ended_at.is_some() && status != "failed") {
            // The close of a call already ended (with its turn, or refused),
            // or of one this session never saw open: nothing new to show.
            return None;
        }
        if status == "in_progress" {
            self.open.insert(id.clone());
        } else {
            self.ended.insert(id.clone());
        }
        Some(json!({
            "sessionUpdate": "tool_call",
            "toolCallId": id,
            "title": format!("{} {}", if c.method == "CONNECT" { "Connect to" } else { c.method.as_str() }, target(c)),
            "kind": "fetch",
            "status": status,
            "rawInput": {"host": c.host, "port": c.port, "method": c.method},
            "content": content(c),
            "_meta": meta(c),
        }))
    }

    /// The turn is over: a connection still open is shown as completed,
    /// with where its bytes will be.
    pub fn turn_ended(&mut self) -> Vec<Value> {
        let mut ids: Vec<String> = self.open.drain().collect();
        ids.sort();
        self.ended.extend(ids.iter().cloned());
        ids.into_iter()
            .map(|id| {
                json!({
                    "sessionUpdate": "tool_call_update",
                    "toolCallId": id,
                    "status": "completed",
                    "content": [{"type": "content", "content": {"type": "text", "text":
                        "still open when the turn ended: `agentctl network AGENT` shows its bytes when it closes"}}],
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn connection(decision: pb::ConnectionDecision) -> pb::NetworkConnection {
        pb::NetworkConnection {
            seq: 3,
            agent_id: "0190".into(),
            agent_short_id: "3f2a".into(),
            host: "example.org".into(),
            port: 443,
            method: "CONNECT".into(),
            decision: decision as i32,
            reason: "answered: allow once".into(),
            started_at: Some(prost_types::Timestamp::default()),
            ..Default::default()
        }
    }

    #[test]
    fn an_allowed_connection_runs_until_it_closes_with_its_bytes() {
        let mut shown = Connections::default();
        let open = connection(pb::ConnectionDecision::Allowed);
        let call = shown.update(&open).unwrap();
        assert_eq!(call["sessionUpdate"], "tool_call");
        assert_eq!(call["toolCallId"], "agentd-net-3f2a-3");
        assert_eq!(call["title"], "Connect to example.org:443");
        assert_eq!(call["kind"], "fetch");
        assert_eq!(call["status"], "in_progress");
        let mut closed = open.clone();
        closed.ended_at = Some(prost_types::Timestamp::default());
        (closed.bytes_sent, closed.bytes_received) = (517, 4096);
        let end = shown.update(&closed).unwrap();
        assert_eq!(end["sessionUpdate"], "tool_call_update");
        assert_eq!(end["status"], "completed");
        let text = end["content"][0]["content"]["text"].as_str().unwrap();
        assert!(
            text.contains("517 bytes sent, 4096 bytes received"),
            "{text}"
        );
        assert_eq!(end["_meta"]["agentd"]["connection"]["bytesReceived"], 4096);
        // Once.
        assert!(shown.update(&closed).is_none());
        assert!(shown.turn_ended().is_empty());
    }

    #[test]
    fn a_refused_or_failed_connection_is_a_failed_call_and_none_outlives_its_turn() {
        let mut shown = Connections::default();
        let mut refused = connection(pb::ConnectionDecision::Refused);
        refused.reason = "not in the allow list".into();
        refused.ended_at = Some(prost_types::Timestamp::default());
        let call = shown.update(&refused).unwrap();
        assert!(shown.update(&refused).is_none(), "shown once");
        assert_eq!(
            (call["sessionUpdate"].clone(), call["status"].clone()),
            (json!("tool_call"), json!("failed"))
        );
        let mut plain = connection(pb::ConnectionDecision::Allowed);
        (plain.seq, plain.method, plain.host, plain.port) = (4, "GET".into(), "::1".into(), 8080);
        assert_eq!(shown.update(&plain).unwrap()["title"], "GET [::1]:8080");
        let ends = shown.turn_ended();
        assert_eq!(ends.len(), 1);
        assert_eq!(
            (ends[0]["toolCallId"].clone(), ends[0]["status"].clone()),
            (json!("agentd-net-3f2a-4"), json!("completed"))
        );
        // Its close after the turn shows nothing; one that failed to be made
        // does, as a failed call.
        plain.ended_at = Some(prost_types::Timestamp::default());
        assert!(shown.update(&plain).is_none());
        let mut unreachable = connection(pb::ConnectionDecision::Allowed);
        (unreachable.seq, unreachable.error) = (5, "connection refused".into());
        unreachable.ended_at = Some(prost_types::Timestamp::default());
        assert_eq!(shown.update(&unreachable).unwrap()["status"], "failed");
    }
}
