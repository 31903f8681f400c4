//! An agent's plan (DESIGN §17) as people read it: the block `show`
//! prints and `run`/`attach` print when it changes, the progress `list`
//! shows, and its JSON.

use agentd_shared::proto as pb;
use agentd_shared::visible;
use serde::Serialize;

/// TodoWrite's spelling of an item's status; "unknown" for a value this
/// agentctl does not know (a newer daemon's).
pub fn status_name(status: i32) -> &'static str {
    match pb::PlanStatus::try_from(status).unwrap_or_default() {
        pb::PlanStatus::Pending => "pending",
        pb::PlanStatus::InProgress => "in_progress",
        pb::PlanStatus::Completed => "completed",
        pb::PlanStatus::Unspecified => "unknown",
    }
}

fn is_completed(item: &pb::PlanItem) -> bool {
    item.status == pb::PlanStatus::Completed as i32
}

/// "done/total" ("1/3"), or "-" without a plan: `list`'s PLAN column.
pub fn progress(items: &[pb::PlanItem]) -> String {
    if items.is_empty() {
        return "-".into();
    }
    let done = items.iter().filter(|i| is_completed(i)).count();
    format!("{done}/{}", items.len())
}

/// One line per item under a heading: `[x]` completed, `[>]` in progress
/// (as its activeForm says it), `[ ]` pending. Empty without a plan.
pub fn block(items: &[pb::PlanItem]) -> String {
    if items.is_empty() {
        return String::new();
    }
    let mut out = format!("Plan ({}):\n", progress(items));
    for item in items {
        // The daemon refuses control characters in a plan; a plan is the
        // model's all the same.
        let content = visible::line(&item.content);
        let line = match pb::PlanStatus::try_from(item.status).unwrap_or_default() {
            pb::PlanStatus::Completed => format!("  [x] {content}"),
            pb::PlanStatus::InProgress => format!("  [>] {}", visible::line(&item.active_form)),
            pb::PlanStatus::Pending => format!("  [ ] {content}"),
            pb::PlanStatus::Unspecified => format!("  [?] {content}"),
        };
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// A plan item as `show --json` and `list --json` print it (TodoWrite's
/// field names).
#[derive(Debug, Serialize)]
pub struct PlanItemJson<'a> {
    pub content: &'a str,
    pub status: &'static str,
    #[serde(rename = "activeForm")]
    pub active_form: &'a str,
}

impl<'a> PlanItemJson<'a> {
    pub fn of(item: &'a pb::PlanItem) -> Self {
        PlanItemJson {
            content: &item.content,
            status: status_name(item.status),
            active_form: &item.active_form,
        }
    }

    pub fn all(items: &'a [pb::PlanItem]) -> Vec<Self> {
        items.iter().map(PlanItemJson::of).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(content: &str, status: pb::PlanStatus, active: &str) -> pb::PlanItem {
        pb::PlanItem {
            content: content.into(),
            status: status as i32,
            active_form: active.into(),
        }
    }

    #[test]
    fn the_block_marks_each_item_and_shows_the_one_in_progress_as_it_is_done() {
        let plan = [
            item(
                "Read the code",
                pb::PlanStatus::Completed,
                "Reading the code",
            ),
            item("Fix the bug", pb::PlanStatus::InProgress, "Fixing the bug"),
            item(
                "Run the tests",
                pb::PlanStatus::Pending,
                "Running the tests",
            ),
        ];
        assert_eq!(
            block(&plan),
            "Plan (1/3):\n  [x] Read the code\n  [>] Fixing the bug\n  [ ] Run the tests\n"
        );
        assert_eq!(progress(&plan), "1/3");
        assert_eq!(progress(&[]), "-");
        assert_eq!(block(&[]), "");
    }

    #[test]
    fn json_uses_todo_writes_names_and_unknown_for_unknown_statuses() {
        let odd = pb::PlanItem {
            status: 9,
            ..item("a", pb::PlanStatus::Pending, "b")
        };
        let v = serde_json::to_value(PlanItemJson::of(&odd)).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"content": "a", "status": "unknown", "activeForm": "b"})
        );
    }
}
