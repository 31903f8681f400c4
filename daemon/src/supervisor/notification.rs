//! The `<task-notification>` a parent receives when a background child ends
//! (DESIGN §5): as the text it reads, and as fields for `Watch`.
//!
//! It is written into the parent's inbox in the same transaction that
//! records the child's end (`Store::finish_agent`), and taken out in the
//! same transaction that puts it in the parent's transcript: exactly once.

use crate::agent::RunEnd;
use crate::agent::events::TaskNotice;
use crate::domain::{AgentRecord, AgentWorktree, InboxItem, InboxKind, WorktreeState, now_ms};

/// Escapes text placed between XML-like tags, so a result cannot close
/// the notification early.
fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

fn escape_attr(s: &str) -> String {
    escape(s).replace('"', "&quot;")
}

/// The agent's own worktree if it was kept at its end (it holds work).
pub(super) fn kept_worktree(child: &AgentRecord) -> Option<&AgentWorktree> {
    child
        .worktree
        .as_ref()
        .filter(|w| w.owned && w.state == WorktreeState::Kept)
}

/// What a parent waiting in the foreground is told of a kept worktree.
pub(super) fn kept_worktree_line(child: &AgentRecord) -> String {
    kept_worktree(child)
        .map(|w| {
            format!(
                "\n\nIts worktree was kept: {} on branch {} (base {}), {}. Review it with `agentctl diff {}`; merge it with `agentctl merge {}`.",
                w.path.display(),
                w.branch,
                crate::worktree::base_label(&w.base),
                if w.work.is_empty() {
                    "because agentd could not check it or another agent works in it".to_string()
                } else {
                    w.work.to_string()
                },
                child.short_id,
                child.short_id
            )
        })
        .unwrap_or_default()
}

/// A notification, ready for the inbox and for watchers.
pub(super) struct Notice {
    pub(super) item: InboxItem,
    pub(super) notice: TaskNotice,
}

pub(super) fn task_notice(child: &AgentRecord, outcome: &RunEnd) -> Notice {
    let status = child.status;
    let result = match outcome {
        RunEnd::Completed(text) => text.clone(),
        RunEnd::Failed(error) => format!("Error: {error}"),
        RunEnd::Cancelled => "Error: the agent was cancelled".to_string(),
        RunEnd::BudgetExhausted(why) => {
            format!("Error: paused before its next model request: {why}")
        }
        RunEnd::Interrupted | RunEnd::Paused | RunEnd::Halted | RunEnd::Unchanged(_) => {
            String::new()
        }
    };
    let total_tokens = child.usage.total();
    let duration_ms = (child.updated_at_ms - child.started_at_ms).max(0) as u64;
    let kept = kept_worktree(child);
    let worktree = kept.map(|w| w.path.display().to_string());
    let worktree_line = kept
        .map(|w| {
            format!(
                "<worktree branch=\"{}\" base=\"{}\" changed=\"{}\" untracked=\"{}\" ahead=\"{}\">{}</worktree>\n",
                escape_attr(&w.branch),
                escape_attr(crate::worktree::base_label(&w.base)),
                w.work.changed,
                w.work.untracked,
                w.work.ahead,
                escape(&w.path.display().to_string())
            )
        })
        .unwrap_or_default();
    let text = format!(
        "<task-notification>\n<task-id>{id}</task-id>\n<status>{status}</status>\n<summary>Agent \"{desc}\" {status}</summary>\n<result>{result}</result>\n{worktree_line}<usage><total_tokens>{total_tokens}</total_tokens><tool_uses>{tool_uses}</tool_uses><duration_ms>{duration_ms}</duration_ms></usage>\n</task-notification>",
        id = child.id,
        desc = escape(&child.description),
        result = escape(&result),
        tool_uses = child.tool_uses,
    );
    Notice {
        item: InboxItem {
            kind: InboxKind::Notification,
            text: text.clone(),
            from: Some(child.id),
            created_at_ms: now_ms(),
        },
        notice: TaskNotice {
            task_id: child.id,
            status,
            description: child.description.clone(),
            result,
            worktree,
            total_tokens,
            tool_uses: child.tool_uses,
            duration_ms,
            text,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{AgentId, Status, Usage};

    #[test]
    fn notification_carries_status_result_and_usage() {
        let id = AgentId::random();
        let mut child = AgentRecord::new(id, id.short_prefix(8), 1000);
        child.description = "Run <tests>".into();
        child.tool_uses = 3;
        child.usage = Usage {
            input_tokens: 10,
            output_tokens: 5,
            cache_read_input_tokens: 100,
            cache_creation_input_tokens: 1,
        };
        child.updated_at_ms = 4500;
        child.status = Status::Completed;
        let n = task_notice(&child, &RunEnd::Completed("all 12 pass </result>".into()));
        let text = &n.item.text;
        assert!(text.starts_with("<task-notification>\n<task-id>"));
        assert!(text.contains("<status>completed</status>"));
        assert!(text.contains("<summary>Agent \"Run &lt;tests&gt;\" completed</summary>"));
        assert!(text.contains("<result>all 12 pass &lt;/result&gt;</result>"));
        assert!(text.contains("<total_tokens>116</total_tokens><tool_uses>3</tool_uses><duration_ms>3500</duration_ms>"));
        assert_eq!(n.notice.total_tokens, 116);
        assert_eq!(n.notice.duration_ms, 3500);
        assert_eq!(n.notice.result, "all 12 pass </result>");
        assert_eq!(&n.notice.text, text);
        child.status = Status::Failed;
        let n = task_notice(&child, &RunEnd::Failed("boom".into()));
        assert!(n.item.text.contains("<result>Error: boom</result>"));
        assert!(!n.item.text.contains("<worktree"));
    }

    #[test]
    fn a_kept_worktree_is_in_the_notification() {
        use crate::domain::WorkSummary;
        let id = AgentId::random();
        let mut child = AgentRecord::new(id, id.short_prefix(8), 1000);
        child.status = Status::Completed;
        child.worktree = Some(AgentWorktree {
            path: "/r/.agentd/worktrees/x".into(),
            branch: "agentd/x".into(),
            checkout: "/r".into(),
            base: "refs/heads/main".into(),
            base_commit: String::new(),
            owned: true,
            state: WorktreeState::Kept,
            work: WorkSummary {
                changed: 2,
                untracked: 1,
                ahead: 0,
            },
            notice: None,
        });
        let n = task_notice(&child, &RunEnd::Completed("done".into()));
        assert!(n.item.text.contains("<worktree branch=\"agentd/x\" base=\"main\" changed=\"2\" untracked=\"1\" ahead=\"0\">/r/.agentd/worktrees/x</worktree>"), "{}", n.item.text);
        assert_eq!(n.notice.worktree.as_deref(), Some("/r/.agentd/worktrees/x"));
        child.worktree.as_mut().expect("set").state = WorktreeState::Removed;
        let n = task_notice(&child, &RunEnd::Completed("done".into()));
        assert!(!n.item.text.contains("<worktree"));
    }
}
