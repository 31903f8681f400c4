//! What an agent's events look like to an ACP editor: `session/update`
//! payloads built from the daemon's transcript entries, streaming deltas
//! and tool activity. Pure functions; `session` sends them.

use std::collections::HashMap;

use serde_json::{Value, json};

/// ACP's tool kind for one of agentd's tools.
pub fn tool_kind(name: &str) -> &'static str {
    match name {
        "Read" => "read",
        "Write" | "Edit" => "edit",
        "Bash" => "execute",
        "Grep" | "Glob" => "search",
        _ => "other",
    }
}

/// A title a person reads for a call.
pub fn tool_title(name: &str, input: &Value) -> String {
    let s = |k: &str| input[k].as_str().unwrap_or("").to_string();
    let detail = match name {
        "Bash" => s("command"),
        "Read" | "Write" | "Edit" => s("file_path"),
        "Grep" | "Glob" => s("pattern"),
        "Agent" => s("description"),
        _ => String::new(),
    };
    let detail: String = detail.chars().take(120).collect();
    if detail.is_empty() {
        name.to_string()
    } else {
        format!("{name}: {detail}")
    }
}

/// The files a call touches, for the editor to follow.
fn locations(name: &str, input: &Value) -> Vec<Value> {
    match (name, input["file_path"].as_str()) {
        ("Read" | "Write" | "Edit", Some(path)) => vec![json!({"path": path})],
        _ => Vec::new(),
    }
}

/// Files larger than this show no old text in a Write's diff.
const MAX_DIFF_BYTES: u64 = 1024 * 1024;

/// Write and Edit as diffs.
fn diff_content(name: &str, input: &Value) -> Vec<Value> {
    let path = input["file_path"].as_str().unwrap_or_default();
    match name {
        "Write" => {
            // What the file holds before the write (none: a new file).
            let old = std::fs::metadata(path)
                .ok()
                .filter(|m| m.is_file() && m.len() <= MAX_DIFF_BYTES)
                .and_then(|_| std::fs::read_to_string(path).ok());
            vec![
                json!({"type": "diff", "path": path, "oldText": old, "newText": input["content"].as_str().unwrap_or_default()}),
            ]
        }
        "Edit" => vec![
            json!({"type": "diff", "path": path, "oldText": input["old_string"].as_str().unwrap_or_default(), "newText": input["new_string"].as_str().unwrap_or_default()}),
        ],
        _ => Vec::new(),
    }
}

/// A `tool_call` for a tool_use block, with the status it has.
pub fn tool_call(block: &Value, status: &str) -> Value {
    let name = block["name"].as_str().unwrap_or_default();
    let input = &block["input"];
    let mut update = json!({
        "sessionUpdate": "tool_call",
        "toolCallId": block["id"].as_str().unwrap_or_default(),
        "title": tool_title(name, input),
        "kind": tool_kind(name),
        "status": status,
        "rawInput": input,
    });
    let locations = locations(name, input);
    if !locations.is_empty() {
        update["locations"] = Value::Array(locations);
    }
    let diff = diff_content(name, input);
    if !diff.is_empty() {
        update["content"] = Value::Array(diff);
    }
    update
}

/// The text of a tool_result block's content.
fn result_text(block: &Value) -> String {
    match &block["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// A `tool_call_update` that ends a call with its result.
pub fn tool_result_update(block: &Value) -> Value {
    let failed = block["is_error"].as_bool().unwrap_or(false);
    let text = result_text(block);
    json!({
        "sessionUpdate": "tool_call_update",
        "toolCallId": block["tool_use_id"].as_str().unwrap_or_default(),
        "status": if failed { "failed" } else { "completed" },
        "content": [{"type": "content", "content": {"type": "text", "text": text}}],
        "rawOutput": {"text": text, "is_error": failed},
    })
}

pub fn status_update(tool_use_id: &str, status: &str) -> Value {
    json!({"sessionUpdate": "tool_call_update", "toolCallId": tool_use_id, "status": status})
}

pub fn chunk(kind: &str, text: &str) -> Value {
    json!({"sessionUpdate": kind, "content": {"type": "text", "text": text}})
}

/// A compaction boundary (DESIGN §17), replayed or live: a thought saying
/// the context was compacted, with the summary, and the boundary's fields
/// in `_meta.agentd.compactBoundary` for editors that know them.
pub fn compacted(b: &agentd_shared::proto::CompactBoundary) -> Value {
    let trigger = match agentd_shared::proto::CompactTrigger::try_from(b.trigger) {
        Ok(agentd_shared::proto::CompactTrigger::Auto) => "auto",
        Ok(agentd_shared::proto::CompactTrigger::Manual) => "manual",
        Ok(agentd_shared::proto::CompactTrigger::Overflow) => "overflow",
        _ => "unknown",
    };
    json!({
        "sessionUpdate": "agent_thought_chunk",
        "content": {"type": "text", "text": format!(
            "[context compacted ({trigger}): ~{} tokens → ~{}]\n{}",
            b.tokens_before, b.tokens_after, b.summary
        )},
        "_meta": {"agentd": {"compactBoundary": {
            "trigger": trigger,
            "tokensBefore": b.tokens_before,
            "tokensAfter": b.tokens_after,
            "coversThroughSeq": b.covers_through_seq,
        }}},
    })
}

/// Background children and forks the agent started: their `Agent` calls
/// stay in progress until the child's `<task-notification>` arrives.
#[derive(Default)]
pub struct Tasks {
    /// Task (child agent) id → the tool call that started it.
    open: HashMap<String, String>,
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

impl Tasks {
    /// The update for a tool_result; a launch in the background leaves its
    /// call in progress, to be ended by the child's notification.
    pub fn result(&mut self, block: &Value) -> Value {
        let mut update = tool_result_update(block);
        let text = result_text(block);
        // A background launch (an Agent call in the background, a fork, a
        // call moved to the background) names its task and promises a
        // notification.
        let launched =
            text.contains("<task-notification>") && !block["is_error"].as_bool().unwrap_or(false);
        if launched
            && let Some(task) = text
                .lines()
                .find_map(|l| l.strip_prefix("task_id: "))
                .map(str::trim)
        {
            let call = block["tool_use_id"].as_str().unwrap_or_default();
            self.open.insert(task.to_string(), call.to_string());
            update["status"] = json!("in_progress");
        }
        update
    }

    /// The update that ends a background call, for a notification's text.
    pub fn notification(&mut self, text: &str) -> Option<Value> {
        let task = between(text, "<task-id>", "</task-id>")?;
        let call = self.open.remove(task)?;
        let status = between(text, "<status>", "</status>").unwrap_or("completed");
        let result = unescape(between(text, "<result>", "</result>").unwrap_or_default());
        Some(json!({
            "sessionUpdate": "tool_call_update",
            "toolCallId": call,
            "status": if status == "completed" { "completed" } else { "failed" },
            "content": [{"type": "content", "content": {"type": "text", "text": result}}],
        }))
    }
}

/// What a stored transcript entry shows when a session is loaded: the
/// whole conversation, messages and tool calls with their results.
/// `role` is the entry's role name ("user", "assistant", "system").
pub fn replay(role: &str, content: &[Value], tasks: &mut Tasks) -> Vec<Value> {
    let mut out = Vec::new();
    for block in content {
        match (role, block["type"].as_str().unwrap_or_default()) {
            ("user", "text") => {
                let text = block["text"].as_str().unwrap_or_default();
                match tasks.notification(text) {
                    Some(update) => out.push(update),
                    None => out.push(chunk("user_message_chunk", text)),
                }
            }
            ("user", "tool_result") => out.push(tasks.result(block)),
            ("assistant", "text") => out.push(chunk(
                "agent_message_chunk",
                block["text"].as_str().unwrap_or_default(),
            )),
            ("assistant", "thinking") => out.push(chunk(
                "agent_thought_chunk",
                block["thinking"].as_str().unwrap_or_default(),
            )),
            ("assistant", "tool_use") => out.push(tool_call(block, "in_progress")),
            _ => {}
        }
    }
    out
}

/// The agent's whole plan as a `plan` update (the editor replaces the plan
/// it shows; no entries clears it). TodoWrite has no priorities: every
/// entry is "medium". An item of a status this bridge does not know (a
/// newer daemon's) is left out rather than shown as something it is not.
pub fn plan(items: &[agentd_shared::proto::PlanItem]) -> Value {
    use agentd_shared::proto::PlanStatus;
    let entries: Vec<Value> = items
        .iter()
        .filter_map(|item| {
            let status = match PlanStatus::try_from(item.status).ok()? {
                PlanStatus::Pending => "pending",
                PlanStatus::InProgress => "in_progress",
                PlanStatus::Completed => "completed",
                PlanStatus::Unspecified => return None,
            };
            Some(json!({"content": item.content, "priority": "medium", "status": status}))
        })
        .collect();
    json!({"sessionUpdate": "plan", "entries": entries})
}

/// Tokens in the context after a response, as `usage_update`.
pub fn usage_update(usage: &agentd_shared::proto::Usage, window: u64) -> Value {
    let used = usage.input_tokens
        + usage.cache_read_input_tokens
        + usage.cache_creation_input_tokens
        + usage.output_tokens;
    json!({"sessionUpdate": "usage_update", "used": used, "size": window})
}

/// The editor's prompt as the text of the agent's message: text blocks as
/// they are, resources as context the model can read.
pub fn prompt_text(prompt: &[Value]) -> Result<String, String> {
    let mut parts = Vec::new();
    for block in prompt {
        match block["type"].as_str().unwrap_or_default() {
            "text" => parts.push(block["text"].as_str().unwrap_or_default().to_string()),
            "resource_link" => parts.push(format!(
                "<context-link name=\"{}\" uri=\"{}\"/>",
                block["name"].as_str().unwrap_or_default(),
                block["uri"].as_str().unwrap_or_default()
            )),
            "resource" => {
                let r = &block["resource"];
                match r["text"].as_str() {
                    Some(text) => parts.push(format!(
                        "<context uri=\"{}\">\n{text}\n</context>",
                        r["uri"].as_str().unwrap_or_default()
                    )),
                    None => parts.push(format!(
                        "<context-link uri=\"{}\"/> (binary, not included)",
                        r["uri"].as_str().unwrap_or_default()
                    )),
                }
            }
            other => {
                return Err(format!(
                    "prompt blocks of type {:?} are not supported (text, resource_link, resource)",
                    other.chars().take(32).collect::<String>()
                ));
            }
        }
    }
    let text = parts.join("\n");
    if text.trim().is_empty() {
        return Err("the prompt is empty".into());
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_over_an_existing_file_shows_what_it_replaces() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.txt");
        std::fs::write(&path, "before\n").unwrap();
        let p = path.display().to_string();
        let call = tool_call(
            &json!({"type": "tool_use", "id": "t", "name": "Write", "input": {"file_path": p, "content": "after\n"}}),
            "pending",
        );
        assert_eq!(call["content"][0]["oldText"], "before\n");
        let new = dir.path().join("new.txt").display().to_string();
        let call = tool_call(
            &json!({"type": "tool_use", "id": "t", "name": "Write", "input": {"file_path": new, "content": "x"}}),
            "pending",
        );
        assert!(call["content"][0]["oldText"].is_null());
    }

    #[test]
    fn edits_become_diffs_and_results_end_the_call() {
        let call = tool_call(
            &json!({"type": "tool_use", "id": "t1", "name": "Edit", "input": {"file_path": "/p/a.rs", "old_string": "a", "new_string": "b"}}),
            "pending",
        );
        assert_eq!(call["kind"], "edit");
        assert_eq!(call["locations"][0]["path"], "/p/a.rs");
        assert_eq!(call["content"][0]["type"], "diff");
        assert_eq!(call["content"][0]["oldText"], "a");
        let done = tool_result_update(
            &json!({"type": "tool_result", "tool_use_id": "t1", "content": "ok", "is_error": true}),
        );
        assert_eq!(done["status"], "failed");
        assert_eq!(done["content"][0]["content"]["text"], "ok");
    }

    #[test]
    fn a_background_agent_call_stays_open_until_its_notification() {
        let mut tasks = Tasks::default();
        let launch = json!({"type": "tool_result", "tool_use_id": "toolu_7", "content": [{"type": "text", "text":
            "Agent launched in the background.\ntask_id: 0190c0de-0000-7000-8000-000000000001\nYou will receive a <task-notification> when it finishes; do not poll it."}]});
        let update = tasks.result(&launch);
        assert_eq!(update["status"], "in_progress");
        let note = "<task-notification>\n<task-id>0190c0de-0000-7000-8000-000000000001</task-id>\n<status>completed</status>\n<summary>Agent \"x\" completed</summary>\n<result>all 3 pass &lt;ok&gt;</result>\n</task-notification>";
        let end = tasks.notification(note).unwrap();
        assert_eq!(end["toolCallId"], "toolu_7");
        assert_eq!(end["status"], "completed");
        assert_eq!(end["content"][0]["content"]["text"], "all 3 pass <ok>");
        // Once only; an unknown task is no call of this session.
        assert!(tasks.notification(note).is_none());
        // A fork's launch reads differently; it is tracked the same way.
        let mut forks = Tasks::default();
        let fork = json!({"type": "tool_result", "tool_use_id": "toolu_f", "content":
            "Fork started — processing in background.\ntask_id: 0190c0de-0000-7000-8000-00000000000f\nThe fork has your whole conversation and works on its directive alone. You will receive a <task-notification> with its report when it finishes; do not poll it or do its task yourself."});
        assert_eq!(forks.result(&fork)["status"], "in_progress");
        assert!(
            forks
                .notification(&note.replace("0001", "000f"))
                .is_some_and(|u| u["toolCallId"] == "toolu_f")
        );
        // In a replay the notification ends the call instead of showing as
        // a message from the person.
        let mut tasks = Tasks::default();
        let _ = replay("user", &[launch], &mut tasks);
        let shown = replay("user", &[json!({"type": "text", "text": note})], &mut tasks);
        assert_eq!(shown[0]["sessionUpdate"], "tool_call_update");
    }

    #[test]
    fn a_plan_is_sent_whole_with_acp_statuses() {
        use agentd_shared::proto::{PlanItem, PlanStatus};
        let item = |content: &str, status: i32| PlanItem {
            content: content.into(),
            status,
            active_form: format!("{content}ing"),
        };
        let u = plan(&[
            item("read", PlanStatus::Completed as i32),
            item("fix", PlanStatus::InProgress as i32),
            item("odd", 9),
            item("test", PlanStatus::Pending as i32),
        ]);
        assert_eq!(
            u,
            json!({"sessionUpdate": "plan", "entries": [
                {"content": "read", "priority": "medium", "status": "completed"},
                {"content": "fix", "priority": "medium", "status": "in_progress"},
                {"content": "test", "priority": "medium", "status": "pending"},
            ]})
        );
        assert_eq!(plan(&[])["entries"], json!([]));
    }

    #[test]
    fn prompts_take_text_and_resources_and_refuse_the_rest() {
        let text = prompt_text(&[
            json!({"type": "text", "text": "look"}),
            json!({"type": "resource", "resource": {"uri": "file:///a", "text": "A"}}),
            json!({"type": "resource_link", "uri": "file:///b", "name": "b"}),
        ])
        .unwrap();
        assert!(text.starts_with("look\n<context uri=\"file:///a\">\nA\n</context>"));
        assert!(text.contains("name=\"b\""));
        assert!(
            prompt_text(&[json!({"type": "image", "data": "", "mimeType": "image/png"})]).is_err()
        );
        assert!(prompt_text(&[]).is_err());
    }
}
