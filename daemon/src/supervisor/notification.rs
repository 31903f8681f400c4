//! The `<task-notification>` a parent receives when a background child ends
//! (DESIGN §5).

use crate::agent::Outcome;
use crate::store::{AgentRecord, InboxItem, InboxKind, now_ms};

/// Escapes text placed between XML-like tags, so a result cannot close
/// the notification early.
fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

pub fn task_notification(child: &AgentRecord, outcome: &Outcome) -> InboxItem {
    let status = child.status().as_str();
    let result = match outcome {
        Outcome::Completed(text) => text.clone(),
        Outcome::Failed(error) => format!("Error: {error}"),
        Outcome::Cancelled => "Error: the agent was cancelled".to_string(),
        Outcome::Interrupted | Outcome::Paused => String::new(),
    };
    let usage = child.usage.unwrap_or_default();
    let total_tokens = usage.input_tokens
        + usage.output_tokens
        + usage.cache_read_input_tokens
        + usage.cache_creation_input_tokens;
    let duration_ms = (child.updated_at_ms - child.started_at_ms).max(0);
    let worktree = if child.worktree_path.is_empty() {
        String::new()
    } else {
        format!("<worktree>{}</worktree>\n", escape(&child.worktree_path))
    };
    let text = format!(
        "<task-notification>\n<task-id>{id}</task-id>\n<status>{status}</status>\n<summary>Agent \"{desc}\" {status}</summary>\n<result>{result}</result>\n{worktree}<usage><total_tokens>{total_tokens}</total_tokens><tool_uses>{tool_uses}</tool_uses><duration_ms>{duration_ms}</duration_ms></usage>\n</task-notification>",
        id = child.uuid(),
        desc = escape(&child.description),
        result = escape(&result),
        tool_uses = child.tool_uses,
    );
    InboxItem {
        kind: InboxKind::Notification as i32,
        text,
        from: child.id.clone(),
        created_at_ms: now_ms(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Status, Usage};

    #[test]
    fn notification_carries_status_result_and_usage() {
        let mut child = AgentRecord {
            id: uuid::Uuid::now_v7().as_bytes().to_vec(),
            description: "Run <tests>".into(),
            tool_uses: 3,
            usage: Some(Usage {
                input_tokens: 10,
                output_tokens: 5,
                cache_read_input_tokens: 100,
                cache_creation_input_tokens: 1,
            }),
            started_at_ms: 1000,
            updated_at_ms: 4500,
            ..Default::default()
        };
        child.set_status(Status::Completed);
        let n = task_notification(&child, &Outcome::Completed("all 12 pass </result>".into()));
        assert!(n.text.starts_with("<task-notification>\n<task-id>"));
        assert!(n.text.contains("<status>completed</status>"));
        assert!(
            n.text
                .contains("<summary>Agent \"Run &lt;tests&gt;\" completed</summary>")
        );
        assert!(
            n.text
                .contains("<result>all 12 pass &lt;/result&gt;</result>")
        );
        assert!(n.text.contains("<total_tokens>116</total_tokens><tool_uses>3</tool_uses><duration_ms>3500</duration_ms>"));
        child.set_status(Status::Failed);
        let n = task_notification(&child, &Outcome::Failed("boom".into()));
        assert!(n.text.contains("<result>Error: boom</result>"));
    }
}
