//! The tool calls one session has shown its editor, from the `tool_call`
//! that opens each to the update that ends it: a result (with the file
//! change the daemon recorded), a background child's notification, or the
//! end of the turn. ACP editors show an open call as running, so every
//! call opened here is ended by the time its turn ends (`turn_ended`):
//! none is left spinning after a cancel, an error or a lost daemon.
//!
//! A call that started a child (`Agent`) carries the child's own calls as
//! its progress (`subagents`).

use std::collections::HashMap;
use std::path::PathBuf;

use agentd_shared::proto as pb;
use serde_json::{Value, json};

use super::subagents::Subagents;

/// What an entry of tool results holds beside its blocks.
#[derive(Clone, Copy)]
pub struct Beside<'a> {
    pub changes: &'a [pb::FileChange],
    pub decisions: &'a [pb::RuleDecision],
}

impl<'a> Beside<'a> {
    #[cfg(test)]
    pub const NONE: Beside<'static> = Beside {
        changes: &[],
        decisions: &[],
    };

    pub fn of(entry: &'a pb::TranscriptEntry) -> Self {
        Beside {
            changes: &entry.file_changes,
            decisions: &entry.rule_decisions,
        }
    }
}
use super::updates;

/// How an open call will end.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Open {
    /// Its result has not come.
    Running,
    /// It started a child in the background, whose notification brings the
    /// child's result later.
    Launched,
}

pub struct ToolCalls {
    /// The agent's working directory: relative paths are made absolute
    /// against it.
    cwd: PathBuf,
    /// Calls shown and not ended.
    open: HashMap<String, Open>,
    /// Task (background child) id → the call that started it.
    background: HashMap<String, String>,
    subagents: Subagents,
}

/// The text between `open` and `close`.
fn between<'a>(text: &'a str, open: &str, close: &str) -> Option<&'a str> {
    let start = text.find(open)? + open.len();
    let end = text[start..].find(close)? + start;
    Some(&text[start..end])
}

fn unescape(text: &str) -> String {
    text.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&amp;", "&")
}

impl ToolCalls {
    pub fn new(cwd: PathBuf, subagents: Subagents) -> ToolCalls {
        ToolCalls {
            cwd,
            open: HashMap::new(),
            background: HashMap::new(),
            subagents,
        }
    }

    pub fn subagents(&self) -> &Subagents {
        &self.subagents
    }

    /// The `tool_call` that opens a call.
    pub fn call(&mut self, block: &Value, status: &str) -> Value {
        let update = updates::tool_call(block, status, &self.cwd);
        let id = block["id"].as_str().unwrap_or_default();
        self.open.insert(id.to_string(), Open::Running);
        if block["name"] == "Agent" {
            self.subagents
                .opened(id, update["title"].as_str().unwrap_or_default());
        }
        update
    }

    /// The update for a tool_result, with the change recorded for it among
    /// `changes`. A launch in the background leaves its call open, to be
    /// ended by the child's notification (or, for now, by the turn's end).
    pub fn result(&mut self, block: &Value, beside: Beside<'_>) -> Value {
        let call = block["tool_use_id"].as_str().unwrap_or_default();
        let mut update =
            updates::tool_result_update(block, updates::change_of(beside.changes, call));
        let text = updates::result_text(block);
        // What a permission rule decided, as `log` shows it (a deny says
        // so in its result already).
        for line in agentctl_core::view::rule_decision::lines_for(beside.decisions, call) {
            if !text.contains(&line)
                && let Some(content) = update["content"].as_array_mut()
            {
                content.push(json!({"type": "content", "content": {"type": "text", "text": line}}));
            }
        }
        // A background launch (an Agent call in the background, a fork, a
        // call moved to the background) names its task and promises a
        // notification.
        let launched =
            text.contains("<task-notification>") && !block["is_error"].as_bool().unwrap_or(false);
        let task = text
            .lines()
            .find_map(|l| l.strip_prefix("task_id: "))
            .map(str::trim);
        match task {
            Some(task) if launched => {
                self.background.insert(task.to_string(), call.to_string());
                self.open.insert(call.to_string(), Open::Launched);
                update["status"] = json!("in_progress");
            }
            _ => {
                self.open.remove(call);
            }
        }
        self.subagents.ended(call, &mut update);
        update
    }

    /// The update that ends a background call, for a notification's text.
    pub fn notification(&mut self, text: &str) -> Option<Value> {
        let task = between(text, "<task-id>", "</task-id>")?;
        let call = self.background.remove(task)?;
        self.open.remove(&call);
        let status = between(text, "<status>", "</status>").unwrap_or("completed");
        let result = unescape(between(text, "<result>", "</result>").unwrap_or_default());
        let mut update = json!({
            "sessionUpdate": "tool_call_update",
            "toolCallId": call,
            "status": if status == "completed" { "completed" } else { "failed" },
            "content": [{"type": "content", "content": {"type": "text", "text": result}}],
        });
        self.subagents.ended(&call, &mut update);
        Some(update)
    }

    /// The turn is over (or the history replayed): every call still open
    /// ends now. A background launch completed (it did launch; the child's
    /// result still comes with its notification); any other call never
    /// got its result, so it failed.
    pub fn turn_ended(&mut self) -> Vec<Value> {
        let mut ends: Vec<(String, Open)> = self.open.drain().collect();
        ends.sort_by(|a, b| a.0.cmp(&b.0));
        ends.into_iter()
            .map(|(call, how)| {
                let status = match how {
                    Open::Launched => "completed",
                    Open::Running => "failed",
                };
                updates::status_update(&call, status)
            })
            .collect()
    }

    /// What a stored transcript entry shows when a session is loaded: the
    /// whole conversation, messages and tool calls with their results.
    /// `role` is the entry's role name ("user", "assistant", "system").
    pub fn replay(&mut self, role: &str, content: &[Value], beside: Beside<'_>) -> Vec<Value> {
        let mut out = Vec::new();
        for block in content {
            match (role, block["type"].as_str().unwrap_or_default()) {
                ("user", "text") => {
                    let text = block["text"].as_str().unwrap_or_default();
                    match self.notification(text) {
                        Some(update) => out.push(update),
                        None => out.push(updates::chunk("user_message_chunk", text)),
                    }
                }
                ("user", "tool_result") => out.push(self.result(block, beside)),
                ("assistant", "text") => out.push(updates::chunk(
                    "agent_message_chunk",
                    block["text"].as_str().unwrap_or_default(),
                )),
                ("assistant", "thinking") => out.push(updates::chunk(
                    "agent_thought_chunk",
                    block["thinking"].as_str().unwrap_or_default(),
                )),
                ("assistant", "tool_use") => out.push(self.call(block, "in_progress")),
                _ => {}
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn calls() -> ToolCalls {
        ToolCalls::new(PathBuf::from("/w"), Subagents::detached("session"))
    }

    #[test]
    fn a_rules_decision_is_shown_with_the_result_it_governed() {
        let mut c = calls();
        let decision = |id: &str, verdict: pb::rule_decision::Verdict| pb::RuleDecision {
            tool_use_id: id.into(),
            verdict: verdict as i32,
            rule: "Bash(echo:*)".into(),
            source: "config.toml".into(),
        };
        let decisions = [
            decision("t1", pb::rule_decision::Verdict::Allowed),
            decision("t2", pb::rule_decision::Verdict::Denied),
        ];
        let beside = Beside {
            changes: &[],
            decisions: &decisions,
        };
        let u = c.result(
            &json!({"type": "tool_result", "tool_use_id": "t1", "content": "hi"}),
            beside,
        );
        let texts: Vec<&str> = u["content"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|c| c["content"]["text"].as_str())
            .collect();
        assert_eq!(texts, ["hi", "allowed by Bash(echo:*) in config.toml"]);
        // A deny's result says so already: not twice.
        let u = c.result(
            &json!({"type": "tool_result", "tool_use_id": "t2", "is_error": true,
                    "content": "denied by Bash(echo:*) in config.toml: this call is not run."}),
            beside,
        );
        assert_eq!(u["content"].as_array().unwrap().len(), 1, "{u}");
    }

    #[test]
    fn a_background_agent_call_stays_open_until_its_notification() {
        let mut tasks = calls();
        let launch = json!({"type": "tool_result", "tool_use_id": "toolu_7", "content": [{"type": "text", "text":
            "Agent launched in the background.\ntask_id: 0190c0de-0000-7000-8000-000000000001\nYou will receive a <task-notification> when it finishes; do not poll it."}]});
        let update = tasks.result(&launch, Beside::NONE);
        assert_eq!(update["status"], "in_progress");
        let note = "<task-notification>\n<task-id>0190c0de-0000-7000-8000-000000000001</task-id>\n<status>completed</status>\n<summary>Agent \"x\" completed</summary>\n<result>all 3 pass &lt;ok&gt;</result>\n</task-notification>";
        let end = tasks.notification(note).unwrap();
        assert_eq!(end["toolCallId"], "toolu_7");
        assert_eq!(end["status"], "completed");
        assert_eq!(end["content"][0]["content"]["text"], "all 3 pass <ok>");
        // Once only; an unknown task is no call of this session.
        assert!(tasks.notification(note).is_none());
        // A fork's launch reads differently; it is tracked the same way.
        let mut forks = calls();
        let fork = json!({"type": "tool_result", "tool_use_id": "toolu_f", "content":
            "Fork started — processing in background.\ntask_id: 0190c0de-0000-7000-8000-00000000000f\nThe fork has your whole conversation and works on its directive alone. You will receive a <task-notification> with its report when it finishes; do not poll it or do its task yourself."});
        assert_eq!(forks.result(&fork, Beside::NONE)["status"], "in_progress");
        assert!(
            forks
                .notification(&note.replace("0001", "000f"))
                .is_some_and(|u| u["toolCallId"] == "toolu_f")
        );
        // In a replay the notification ends the call instead of showing as
        // a message from the person.
        let mut tasks = calls();
        let _ = tasks.replay("user", &[launch], Beside::NONE);
        let shown = tasks.replay(
            "user",
            &[json!({"type": "text", "text": note})],
            Beside::NONE,
        );
        assert_eq!(shown[0]["sessionUpdate"], "tool_call_update");
    }

    #[test]
    fn every_call_opened_ends_by_the_turns_end() {
        let mut tasks = calls();
        let use_ = |id: &str, name: &str| json!({"type": "tool_use", "id": id, "name": name, "input": {"command": "x"}});
        let _ = tasks.call(&use_("done", "Bash"), "pending");
        let _ = tasks.call(&use_("cut", "Bash"), "pending");
        let _ = tasks.call(&use_("bg", "Agent"), "pending");
        let _ = tasks.result(
            &json!({"type": "tool_result", "tool_use_id": "done", "content": "ok"}),
            Beside::NONE,
        );
        let _ = tasks.result(&json!({"type": "tool_result", "tool_use_id": "bg", "content": "task_id: c1\n<task-notification> follows"}), Beside::NONE);
        let ends = tasks.turn_ended();
        assert_eq!(
            ends,
            vec![
                updates::status_update("bg", "completed"),
                updates::status_update("cut", "failed"),
            ]
        );
        assert!(tasks.turn_ended().is_empty(), "each ended once");
        // The launched child's result still reaches its call afterwards.
        let end = tasks
            .notification("<task-id>c1</task-id><status>failed</status><result>boom</result>")
            .unwrap();
        assert_eq!(
            (end["toolCallId"].clone(), end["status"].clone()),
            (json!("bg"), json!("failed"))
        );
    }
}
