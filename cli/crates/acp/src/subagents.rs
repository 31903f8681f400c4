//! A session's subagents and forks, shown inside the `Agent` tool call
//! that started each: the editor sees one call per child, whose progress
//! is the child's own tool calls, and which ends with the child's result.
//!
//! How the nesting reads on the wire: a `tool_call_update` of the parent's
//! call (no `status`: the parent's own flow sets that) whose `content` is
//! a text block listing the child's calls with a mark each (✓ done, ✗
//! failed, … running), then the diffs of the files the child changed,
//! then the call's own result once it has one; and whose
//! `_meta.agentd.subagent` holds the child (`agentId`, `shortId`) and its
//! calls as `toolCalls` (`toolCallId`, `title`, `kind`, `status`) for
//! editors that show them their own way. A descendant's permission ask is
//! put to the editor on the same call.
//!
//! Children are found through the daemon's Watch stream (an agent created
//! by an `Agent` call names the call: `Agent.parent_tool_use_id`) and
//! followed through Attach streams of their own, each until the child's
//! run ends. When the daemon goes away, the watch and each follower wait
//! for it (the session's link) and go on from where they were: a child
//! interrupted by a restart is revived with its parent.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use agentd_shared::proto as pb;
use pb::attach_event::Event;
use serde_json::{Value, json};
use tokio::sync::{Notify, watch};

use super::follow::attach;
use super::peer::Peer;
use super::reconnect::{Backoff, Link};
use super::updates;
use agentd_shared::sync::Unpoisoned as _;

/// The subagents of one session; cheap to clone.
#[derive(Clone)]
pub struct Subagents {
    state: Arc<Mutex<State>>,
    /// None in unit tests: nothing is followed.
    live: Option<Arc<Live>>,
    /// The session's agent id.
    session: Arc<str>,
    /// A follower ended.
    follower_ended: Arc<Notify>,
}

struct Live {
    peer: Peer,
    link: Arc<Link>,
    /// Set when the session's attachment ends: followers stop.
    stop: watch::Sender<bool>,
}

#[derive(Default)]
struct State {
    /// A descendant's id → the session's call it runs under.
    call_of: HashMap<String, String>,
    /// Descendants followed (or being followed).
    followed: HashSet<String>,
    /// The session's Agent calls → their title, as first shown.
    titles: HashMap<String, String>,
    /// The session's Agent calls → what their children did.
    progress: HashMap<String, Progress>,
    /// The session's Agent calls → followers of their children running.
    following: HashMap<String, usize>,
    /// The session's Agent calls that have their final result.
    finished: HashSet<String>,
}

impl State {
    /// A call has its result but its children's progress is still coming.
    fn catching_up(&self) -> bool {
        self.finished
            .iter()
            .any(|call| self.following.get(call).is_some_and(|n| *n > 0))
    }
}

#[derive(Default)]
struct Progress {
    /// The child the call started.
    agent_id: String,
    short_id: String,
    calls: Vec<ChildCall>,
    /// The call's own result (its content), once it has one: kept last.
    result: Vec<Value>,
}

struct ChildCall {
    id: String,
    /// A grandchild's call names the agent that made it.
    by: Option<String>,
    title: String,
    kind: &'static str,
    status: &'static str,
    /// What it changed in a file, as the daemon recorded it.
    diff: Option<Value>,
}

fn live_status(status: i32) -> bool {
    matches!(
        pb::AgentStatus::try_from(status).unwrap_or_default(),
        pb::AgentStatus::Pending | pb::AgentStatus::Running | pb::AgentStatus::Waiting
    )
}

impl Subagents {
    /// Follows the children of session `session` from now on (and those
    /// already running), until `stop`.
    pub fn start(link: Arc<Link>, peer: Peer, session: &str) -> Subagents {
        let (stop, _) = watch::channel(false);
        let subagents = Subagents {
            state: Arc::default(),
            live: Some(Arc::new(Live { peer, link, stop })),
            session: session.into(),
            follower_ended: Arc::default(),
        };
        tokio::spawn(subagents.clone().watch());
        subagents
    }

    /// Tracks progress without following anything (unit tests).
    #[cfg(test)]
    pub fn detached(session: &str) -> Subagents {
        Subagents {
            state: Arc::default(),
            live: None,
            session: session.into(),
            follower_ended: Arc::default(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.locked()
    }

    /// The session's attachment ended: every follower stops.
    pub fn stop(&self) {
        if let Some(live) = &self.live {
            let _ = live.stop.send(true);
        }
    }

    /// The session's `Agent` call `call` was shown with `title`.
    pub fn opened(&self, call: &str, title: &str) {
        self.lock()
            .titles
            .insert(call.to_string(), title.to_string());
    }

    /// The title call `call` was shown with.
    pub fn title(&self, call: &str) -> Option<String> {
        self.lock().titles.get(call).cloned()
    }

    /// `update` ends (or reports the launch of) an Agent call: its content
    /// becomes the child's calls followed by the result, and the result is
    /// kept for the child's later progress.
    pub fn ended(&self, call: &str, update: &mut Value) {
        let mut state = self.lock();
        if !state.titles.contains_key(call) {
            return;
        }
        if matches!(update["status"].as_str(), Some("completed" | "failed")) {
            state.finished.insert(call.to_string());
        }
        let progress = state.progress.entry(call.to_string()).or_default();
        progress.result = update["content"].as_array().cloned().unwrap_or_default();
        update["content"] = Value::Array(progress.content());
        if !progress.agent_id.is_empty() {
            update["_meta"] = progress.meta();
        }
    }

    /// The call of this session agent `agent` runs under (it or an
    /// ancestor was started by it), asking the daemon when it is not known
    /// yet (its ask came before its creation was seen).
    pub async fn call_for(&self, agent: &str) -> Option<String> {
        if let Some(call) = self.lock().call_of.get(agent) {
            return Some(call.clone());
        }
        let live = self.live.as_ref()?;
        let mut id = agent.to_string();
        let mut line = Vec::new();
        // Up the parents to the session's child (depth is capped far below this).
        for _ in 0..32 {
            let a = live
                .link
                .client()
                .get_agent(pb::GetAgentRequest { id })
                .await
                .ok()?
                .into_inner();
            id = a.parent_id.clone();
            let top = a.parent_id == *self.session;
            line.push(a);
            if top || id.is_empty() {
                break;
            }
        }
        // Adopted from the top down: each one's parent is known first.
        for a in line.iter().rev() {
            self.adopt(a);
        }
        self.lock().call_of.get(agent).cloned()
    }

    /// Waits (at most `within`) until the children of calls that have
    /// their result are followed to their end: a foreground child's calls
    /// are all recorded before its parent's call ends, and its follower,
    /// on a stream of its own, only has to catch up — so the turn's answer
    /// comes after the child's last progress.
    pub async fn settle(&self, within: Duration) {
        let caught_up = async {
            loop {
                let ended = self.follower_ended.notified();
                tokio::pin!(ended);
                ended.as_mut().enable();
                if !self.lock().catching_up() {
                    return;
                }
                ended.await;
            }
        };
        let _ = tokio::time::timeout(within, caught_up).await;
    }

    /// Children created before the watch began, then each one created.
    async fn watch(self) {
        let Some(live) = self.live.clone() else {
            return;
        };
        let mut stop = live.stop.subscribe();
        loop {
            let generation = live.link.generation();
            let Ok(stream) = live.link.client().watch(pb::WatchRequest {}).await else {
                return;
            };
            let mut events = stream.into_inner();
            let children = live
                .link
                .client()
                .list_agents(pb::ListAgentsRequest {
                    all: false,
                    parent_id: self.session.to_string(),
                })
                .await;
            if let Ok(list) = children {
                for a in list.into_inner().agents {
                    if live_status(a.status) {
                        self.adopt(&a);
                    }
                }
            }
            loop {
                let next = tokio::select! {
                    _ = stop.changed() => return,
                    next = events.message() => next,
                };
                match next {
                    Ok(Some(pb::WatchEvent {
                        event: Some(pb::watch_event::Event::Created(a)),
                        ..
                    })) => self.adopt(&a),
                    Ok(Some(_)) => {}
                    // Fell behind: watch again, and list again.
                    Err(s) if s.code() == tonic::Code::ResourceExhausted => break,
                    // The daemon went away: once it is back, the same.
                    Ok(None) | Err(_) => match live.link.reconnect(generation).await {
                        Ok(_) => break,
                        Err(_) => return,
                    },
                }
            }
        }
    }

    /// Starts following `a` if it runs under one of the session's calls.
    fn adopt(&self, a: &pb::Agent) {
        let Some(live) = self.live.clone() else {
            return;
        };
        let call = {
            let mut state = self.lock();
            let call = if a.parent_id == *self.session && !a.parent_tool_use_id.is_empty() {
                a.parent_tool_use_id.clone()
            } else if let Some(call) = state.call_of.get(&a.parent_id) {
                call.clone()
            } else {
                return;
            };
            state.call_of.insert(a.id.clone(), call.clone());
            if !state.followed.insert(a.id.clone()) {
                return;
            }
            if a.parent_id == *self.session {
                let p = state.progress.entry(call.clone()).or_default();
                p.agent_id = a.id.clone();
                p.short_id = a.short_id.clone();
            }
            *state.following.entry(call.clone()).or_default() += 1;
            call
        };
        tokio::spawn(self.clone().follow(live, a.clone(), call));
    }

    /// Follows one child until its run ends (or the session's does).
    async fn follow(self, live: Arc<Live>, agent: pb::Agent, call: String) {
        self.relay(&live, &agent, &call).await;
        if let Some(n) = self.lock().following.get_mut(&call) {
            *n = n.saturating_sub(1);
        }
        self.follower_ended.notify_waiters();
    }

    /// The child's calls as the progress of `call`, until its run ends;
    /// on a new attachment from the entry after the last one seen when
    /// the daemon went away.
    async fn relay(&self, live: &Live, agent: &pb::Agent, call: &str) {
        let mut stop = live.stop.subscribe();
        let by = (agent.parent_id != *self.session).then(|| agent.short_id.clone());
        let mut next_seq = 0;
        let mut restarted = false;
        let mut refused = 0;
        loop {
            let generation = live.link.generation();
            let Ok((tx, mut events)) = attach(live.link.client(), &agent.id, next_seq).await else {
                refused += 1;
                if refused > 20 || live.link.reconnect(generation).await.is_err() {
                    break;
                }
                tokio::time::sleep(Backoff::DAEMON.pause(refused)).await;
                continue;
            };
            let ended = loop {
                let next = tokio::select! {
                    // The session's attachment ended: its calls were ended.
                    _ = stop.changed() => break None,
                    next = events.message() => next,
                };
                let update = match next {
                    Ok(Some(pb::AttachEvent {
                        event: Some(Event::Entry(entry)),
                    })) if entry.seq >= next_seq => {
                        next_seq = entry.seq + 1;
                        self.child_entry(call, by.as_deref(), &entry)
                    }
                    // agentd is stopping: the child resumes when it is back.
                    Ok(Some(pb::AttachEvent {
                        event: Some(Event::Status(s)),
                    })) if s.status == pb::AgentStatus::Interrupted as i32 && !restarted => None,
                    Ok(Some(pb::AttachEvent {
                        event: Some(Event::Status(s)),
                    })) if !live_status(s.status) => break Some(true),
                    Ok(Some(pb::AttachEvent {
                        event: Some(Event::Status(_)),
                    })) => {
                        restarted = false;
                        None
                    }
                    Ok(Some(_)) => None,
                    Ok(None) | Err(_) => break Some(false),
                };
                if let Some(u) = update {
                    live.peer.notify("session/update", self.params(u));
                }
            };
            let detach = pb::AttachRequest {
                request: Some(pb::attach_request::Request::Detach(pb::Detach {})),
            };
            let _ = tx.send(detach).await;
            match ended {
                None => return,
                Some(true) => break,
                Some(false) if live.link.reconnect(generation).await.is_err() => break,
                Some(false) => {}
            }
            restarted = true;
        }
        if let Some(u) = self.child_ended(call, by.as_deref()) {
            live.peer.notify("session/update", self.params(u));
        }
    }

    fn params(&self, update: Value) -> Value {
        json!({"sessionId": &*self.session, "update": update})
    }

    /// The parent call's progress after a child's transcript entry, if the
    /// entry added a call or ended one.
    fn child_entry(
        &self,
        call: &str,
        by: Option<&str>,
        entry: &pb::TranscriptEntry,
    ) -> Option<Value> {
        let content: Vec<Value> = serde_json::from_slice(&entry.content_json).ok()?;
        let mut state = self.lock();
        let progress = state.progress.entry(call.to_string()).or_default();
        let mut changed = false;
        for block in &content {
            match block["type"].as_str().unwrap_or_default() {
                "tool_use" => {
                    let name = block["name"].as_str().unwrap_or_default();
                    progress.calls.push(ChildCall {
                        id: block["id"].as_str().unwrap_or_default().to_string(),
                        by: by.map(str::to_string),
                        title: updates::tool_title(name, &block["input"]),
                        kind: updates::tool_kind(name),
                        status: "in_progress",
                        diff: None,
                    });
                    changed = true;
                }
                "tool_result" => {
                    let id = block["tool_use_id"].as_str().unwrap_or_default();
                    if let Some(c) = progress.calls.iter_mut().find(|c| c.id == id) {
                        let failed = block["is_error"].as_bool().unwrap_or(false);
                        c.status = if failed { "failed" } else { "completed" };
                        c.diff =
                            updates::change_of(&entry.file_changes, id).map(updates::change_diff);
                        changed = true;
                    }
                }
                _ => {}
            }
        }
        changed.then(|| progress.update(call))
    }

    /// A child's run ended: its calls without a result never got one.
    fn child_ended(&self, call: &str, by: Option<&str>) -> Option<Value> {
        let mut state = self.lock();
        let progress = state.progress.get_mut(call)?;
        let mut changed = false;
        for c in progress.calls.iter_mut().filter(|c| c.by.as_deref() == by) {
            if c.status == "in_progress" {
                c.status = "failed";
                changed = true;
            }
        }
        changed.then(|| progress.update(call))
    }
}

impl Progress {
    fn mark(status: &str) -> &'static str {
        match status {
            "completed" => "✓",
            "failed" => "✗",
            _ => "…",
        }
    }

    /// The call's content: the child's calls, its changes, the result.
    fn content(&self) -> Vec<Value> {
        let mut out = Vec::new();
        if !self.calls.is_empty() {
            let lines: Vec<String> = self
                .calls
                .iter()
                .map(|c| match &c.by {
                    Some(by) => format!("{} {by}: {}", Self::mark(c.status), c.title),
                    None => format!("{} {}", Self::mark(c.status), c.title),
                })
                .collect();
            let text = format!("subagent {}:\n{}", self.short_id, lines.join("\n"));
            out.push(json!({"type": "content", "content": {"type": "text", "text": text}}));
        }
        out.extend(self.calls.iter().filter_map(|c| c.diff.clone()));
        out.extend(self.result.iter().cloned());
        out
    }

    fn meta(&self) -> Value {
        let calls: Vec<Value> = self
            .calls
            .iter()
            .map(|c| {
                let mut v = json!({"toolCallId": c.id, "title": c.title, "kind": c.kind, "status": c.status});
                if let Some(by) = &c.by {
                    v["agentShortId"] = json!(by);
                }
                v
            })
            .collect();
        json!({"agentd": {"subagent": {"agentId": self.agent_id, "shortId": self.short_id, "toolCalls": calls}}})
    }

    /// The progress of `call`: no status, which the parent's flow owns.
    fn update(&self, call: &str) -> Value {
        json!({
            "sessionUpdate": "tool_call_update",
            "toolCallId": call,
            "content": self.content(),
            "_meta": self.meta(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(content: Value, changes: Vec<pb::FileChange>) -> pb::TranscriptEntry {
        pb::TranscriptEntry {
            content_json: content.to_string().into_bytes(),
            file_changes: changes,
            ..Default::default()
        }
    }

    #[test]
    fn a_childs_calls_are_the_progress_of_the_call_that_started_it() {
        let s = Subagents::detached("parent");
        s.opened("toolu_a", "Agent: look around");
        s.lock()
            .progress
            .entry("toolu_a".into())
            .or_default()
            .short_id = "c0ffee01".into();
        let u = s
            .child_entry(
                "toolu_a",
                None,
                &entry(
                    json!([{"type": "tool_use", "id": "k1", "name": "Write", "input": {"file_path": "x"}}]),
                    vec![],
                ),
            )
            .unwrap();
        assert!(
            u.get("status").is_none(),
            "the parent's flow owns the status"
        );
        assert_eq!(
            u["_meta"]["agentd"]["subagent"]["toolCalls"][0]["status"],
            "in_progress"
        );
        let change = pb::FileChange {
            tool_use_id: "k1".into(),
            path: "/w/x".into(),
            created: true,
            after: "new\n".into(),
            ..Default::default()
        };
        let u = s
            .child_entry(
                "toolu_a",
                None,
                &entry(
                    json!([{"type": "tool_result", "tool_use_id": "k1", "content": "ok"}]),
                    vec![change],
                ),
            )
            .unwrap();
        assert_eq!(
            u["content"][0]["content"]["text"],
            "subagent c0ffee01:\n✓ Write: x"
        );
        assert_eq!(u["content"][1]["type"], "diff");
        assert!(u["content"][1]["oldText"].is_null());
        // The call ends with the child's calls and then its result; later
        // progress keeps the result.
        let mut end = json!({"toolCallId": "toolu_a", "status": "completed",
            "content": [{"type": "content", "content": {"type": "text", "text": "RESULT"}}]});
        s.ended("toolu_a", &mut end);
        assert_eq!(end["content"].as_array().unwrap().len(), 3);
        assert_eq!(end["content"][2]["content"]["text"], "RESULT");
        let u = s
            .child_entry(
                "toolu_a",
                Some("beef0002"),
                &entry(
                    json!([{"type": "tool_use", "id": "g1", "name": "Bash", "input": {"command": "ls"}}]),
                    vec![],
                ),
            )
            .unwrap();
        assert_eq!(
            u["content"][0]["content"]["text"],
            "subagent c0ffee01:\n✓ Write: x\n… beef0002: Bash: ls"
        );
        assert_eq!(
            u["content"].as_array().unwrap().last().unwrap()["content"]["text"],
            "RESULT"
        );
        // The grandchild's run ends without the call's result: it failed.
        let u = s.child_ended("toolu_a", Some("beef0002")).unwrap();
        assert_eq!(
            u["_meta"]["agentd"]["subagent"]["toolCalls"][1]["status"],
            "failed"
        );
        // A call that is not an Agent call is left alone.
        let mut other = json!({"content": [1]});
        s.ended("toolu_bash", &mut other);
        assert_eq!(other, json!({"content": [1]}));
    }
}
