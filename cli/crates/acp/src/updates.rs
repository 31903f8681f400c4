//! What an agent's events look like to an ACP editor: `session/update`
//! payloads built from the daemon's transcript entries, streaming deltas
//! and tool activity. Pure functions; `session` sends them.

use std::path::{Component, Path, PathBuf};

use agentd_shared::proto as pb;
use agentd_shared::visible;
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
    // A title is one line an editor shows as it is: the model's text made
    // visible, and a cut marked.
    let first = detail.split('\n').next().unwrap_or("");
    let kept: String = first.chars().take(120).collect();
    let mut shown = visible::line(&kept).into_owned();
    if kept.len() < detail.len() {
        shown.push('…');
    }
    let name = visible::line(name);
    if shown.is_empty() {
        name.into_owned()
    } else {
        format!("{name}: {shown}")
    }
}

/// `given` (a path as the model wrote it) made absolute against the
/// agent's working directory, as ACP wants paths; `.` and `..` are
/// resolved by name (the bridge never looks at the agent's files).
pub fn absolute(cwd: &Path, given: &str) -> String {
    let mut out = PathBuf::new();
    for part in cwd.join(given).components() {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out.display().to_string()
}

/// The files a call touches, for the editor to follow.
fn locations(name: &str, input: &Value, cwd: &Path) -> Vec<Value> {
    match (name, input["file_path"].as_str()) {
        ("Read" | "Write" | "Edit", Some(path)) => vec![json!({"path": absolute(cwd, path)})],
        _ => Vec::new(),
    }
}

/// An Edit's proposed change, before it runs: the text it replaces and
/// the text it puts in its place, as the model gave them. A Write shows
/// none until it ran: what it replaces is only known then (`change_diff`).
fn proposed_diff(name: &str, input: &Value, cwd: &Path) -> Vec<Value> {
    match (name, input["file_path"].as_str()) {
        ("Edit", Some(path)) => vec![json!({
            "type": "diff",
            "path": absolute(cwd, path),
            "oldText": input["old_string"].as_str().unwrap_or_default(),
            "newText": input["new_string"].as_str().unwrap_or_default(),
        })],
        _ => Vec::new(),
    }
}

/// A `tool_call` for a tool_use block, with the status it has; relative
/// paths are made absolute against `cwd`, the agent's working directory.
pub fn tool_call(block: &Value, status: &str, cwd: &Path) -> Value {
    let name = block["name"].as_str().unwrap_or_default();
    let input = &block["input"];
    if let Some(kind) = block["acp_kind"].as_str() {
        return external_call(block, name, kind, status, cwd);
    }
    let mut update = json!({
        "sessionUpdate": "tool_call",
        "toolCallId": block["id"].as_str().unwrap_or_default(),
        "title": tool_title(name, input),
        "kind": tool_kind(name),
        "status": status,
        "rawInput": input,
    });
    let locations = locations(name, input, cwd);
    if !locations.is_empty() {
        update["locations"] = Value::Array(locations);
    }
    let diff = proposed_diff(name, input, cwd);
    if !diff.is_empty() {
        update["content"] = Value::Array(diff);
    }
    update
}

/// A call of an external agent's (DESIGN §19), as it reported it: its
/// title, its ACP kind and locations, stored with the `tool_use` block.
fn external_call(block: &Value, title: &str, kind: &str, status: &str, cwd: &Path) -> Value {
    let mut update = json!({
        "sessionUpdate": "tool_call",
        "toolCallId": block["id"].as_str().unwrap_or_default(),
        "title": title,
        "kind": kind,
        "status": status,
        "rawInput": block["input"],
    });
    let locations: Vec<Value> = block["locations"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|l| {
            let path = l["path"].as_str()?;
            let mut out = json!({"path": absolute(cwd, path)});
            if let Some(line) = l["line"].as_u64() {
                out["line"] = line.into();
            }
            Some(out)
        })
        .collect();
    if !locations.is_empty() {
        update["locations"] = Value::Array(locations);
    }
    update
}

/// What a file tool call changed, as the daemon recorded it when the call
/// ran, as an ACP diff. `oldText` is null for a file the call created. A
/// change recorded in part (a large file: from a few lines before the
/// first changed line, 64 KiB a side) says so in `_meta.agentd.fileChange`;
/// an external agent's own claim, not seen made, has `reported: true`
/// there.
pub fn change_diff(c: &pb::FileChange) -> Value {
    let mut diff = json!({
        "type": "diff",
        "path": c.path,
        "oldText": if c.created { Value::Null } else { json!(c.before) },
        "newText": c.after,
    });
    if c.first_line > 0 || c.before_cut || c.after_cut || c.before_binary || c.reported {
        diff["_meta"] = json!({"agentd": {"fileChange": {
            "firstLine": c.first_line,
            "beforeSize": c.before_size,
            "afterSize": c.after_size,
            "beforeCut": c.before_cut,
            "afterCut": c.after_cut,
            "beforeBinary": c.before_binary,
            "reported": c.reported,
        }}});
    }
    diff
}

/// Where a change starts (line from 1), for the editor to follow.
fn change_location(c: &pb::FileChange) -> Value {
    let same = c
        .before
        .lines()
        .zip(c.after.lines())
        .take_while(|(a, b)| a == b)
        .count() as u64;
    json!({"path": c.path, "line": c.first_line + same + 1})
}

/// The text of a tool_result block's content.
pub fn result_text(block: &Value) -> String {
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

/// A `tool_call_update` that ends a call with its result, and with the
/// change it made to a file, if the daemon recorded one.
pub fn tool_result_update(block: &Value, change: Option<&pb::FileChange>) -> Value {
    let failed = block["is_error"].as_bool().unwrap_or(false);
    let text = result_text(block);
    let mut content = Vec::new();
    if let Some(c) = change {
        content.push(change_diff(c));
    }
    content.push(json!({"type": "content", "content": {"type": "text", "text": text}}));
    let mut update = json!({
        "sessionUpdate": "tool_call_update",
        "toolCallId": block["tool_use_id"].as_str().unwrap_or_default(),
        "status": if failed { "failed" } else { "completed" },
        "content": content,
        "rawOutput": {"text": text, "is_error": failed},
    });
    if let Some(c) = change {
        update["locations"] = json!([change_location(c)]);
    }
    update
}

/// The change the daemon recorded for tool call `id` in an entry.
pub fn change_of<'a>(changes: &'a [pb::FileChange], id: &str) -> Option<&'a pb::FileChange> {
    changes.iter().find(|c| c.tool_use_id == id)
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
    fn paths_are_absolute_against_the_agents_directory() {
        let cwd = Path::new("/work/agent");
        assert_eq!(absolute(cwd, "a.txt"), "/work/agent/a.txt");
        assert_eq!(absolute(cwd, "./src/../b.rs"), "/work/agent/b.rs");
        assert_eq!(absolute(cwd, "/etc/hosts"), "/etc/hosts");
        let call = tool_call(
            &json!({"type": "tool_use", "id": "t", "name": "Read", "input": {"file_path": "src/x.rs"}}),
            "pending",
            cwd,
        );
        assert_eq!(call["locations"], json!([{"path": "/work/agent/src/x.rs"}]));
    }

    #[test]
    fn an_external_agents_call_keeps_its_own_title_kind_and_locations() {
        let call = tool_call(
            &json!({"type": "tool_use", "id": "c1", "name": "`echo hi`", "input": {"command": "echo hi"},
                    "acp_kind": "execute", "locations": [{"path": "notes.txt", "line": 3}]}),
            "pending",
            Path::new("/w"),
        );
        assert_eq!(call["title"], "`echo hi`");
        assert_eq!(call["kind"], "execute");
        assert_eq!(
            call["locations"],
            json!([{"path": "/w/notes.txt", "line": 3}])
        );
        assert_eq!(call["rawInput"]["command"], "echo hi");
    }

    #[test]
    fn a_write_shows_the_change_the_daemon_recorded_never_the_file() {
        // Before it runs, a Write shows no diff: what it replaces is not
        // known to the bridge (and the bridge does not read the file).
        let call = tool_call(
            &json!({"type": "tool_use", "id": "t", "name": "Write", "input": {"file_path": "a.txt", "content": "after\n"}}),
            "pending",
            Path::new("/w"),
        );
        assert!(call["content"].is_null(), "{call}");
        assert_eq!(call["locations"][0]["path"], "/w/a.txt");
        let result =
            json!({"type": "tool_result", "tool_use_id": "t", "content": "Overwrote /w/a.txt"});
        let recorded = pb::FileChange {
            tool_use_id: "t".into(),
            path: "/w/a.txt".into(),
            before: "one\nbefore\n".into(),
            after: "one\nafter\n".into(),
            before_size: 11,
            after_size: 10,
            ..Default::default()
        };
        let done = tool_result_update(&result, Some(&recorded));
        assert_eq!(done["status"], "completed");
        assert_eq!(
            done["content"][0],
            json!({"type": "diff", "path": "/w/a.txt", "oldText": "one\nbefore\n", "newText": "one\nafter\n"})
        );
        assert_eq!(done["content"][1]["content"]["text"], "Overwrote /w/a.txt");
        assert_eq!(done["locations"], json!([{"path": "/w/a.txt", "line": 2}]));
        // A created file has no old text; a change recorded in part says so.
        let created = pb::FileChange {
            created: true,
            ..recorded.clone()
        };
        assert!(change_diff(&created)["oldText"].is_null());
        let partial = pb::FileChange {
            first_line: 4000,
            after_cut: true,
            ..recorded
        };
        let diff = change_diff(&partial);
        assert_eq!(diff["_meta"]["agentd"]["fileChange"]["firstLine"], 4000);
        assert_eq!(diff["_meta"]["agentd"]["fileChange"]["afterCut"], true);
        // No change recorded (an older daemon, a failed call): the result only.
        let plain = tool_result_update(&result, None);
        assert_eq!(plain["content"].as_array().unwrap().len(), 1);
    }

    #[test]
    fn edits_become_diffs_and_results_end_the_call() {
        let call = tool_call(
            &json!({"type": "tool_use", "id": "t1", "name": "Edit", "input": {"file_path": "/p/a.rs", "old_string": "a", "new_string": "b"}}),
            "pending",
            Path::new("/elsewhere"),
        );
        assert_eq!(call["kind"], "edit");
        assert_eq!(call["locations"][0]["path"], "/p/a.rs");
        assert_eq!(call["content"][0]["type"], "diff");
        assert_eq!(call["content"][0]["oldText"], "a");
        let done = tool_result_update(
            &json!({"type": "tool_result", "tool_use_id": "t1", "content": "ok", "is_error": true}),
            None,
        );
        assert_eq!(done["status"], "failed");
        assert_eq!(done["content"][0]["content"]["text"], "ok");
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
