//! `TodoWrite`: the agent's plan (DESIGN §17), in Claude Code's schema —
//! the whole list on every call. Only the input is read here: the list is
//! the agent's own state, which its turn loop sets and writes durably
//! (`agent::plan`); nothing outside the agent changes.
//!
//! Validation is strict and all-or-nothing: an input with one bad item
//! changes nothing and the model is told which item and why. Fields other
//! than the three are ignored, as every tool ignores them (older Claude Code
//! versions sent `id` and `priority` with each item).

use serde_json::{Map, Value, json};

use super::context::{ToolOutput, ToolSpec};
use crate::domain::{PlanItem, PlanStatus};

/// The most items a plan may hold.
pub const MAX_ITEMS: usize = 100;
/// The longest `content` or `activeForm`, in bytes.
pub const MAX_FIELD_BYTES: usize = 1024;

/// Claude Code's answer, word for word: models are trained on it.
pub const DONE: &str = "Todos have been modified successfully. Ensure that you continue to use \
the todo list to track your progress. Please proceed with the current tasks if applicable";

pub fn spec() -> ToolSpec {
    ToolSpec {
        name: "TodoWrite",
        description: "Keeps your plan for the current work as a todo list. The people \
supervising you follow it (agentctl show and list, attach, their editor), and it survives \
restarts. Each call replaces the whole list: send every item, each with its current status.\n\
\n\
When to use it:\n\
- A task with three or more distinct steps, or several tasks asked for at once: write the plan \
before you start.\n\
- New steps turn up while you work: add them.\n\
Skip it for a single simple step, or a question you can answer at once.\n\
\n\
How:\n\
- `content` says what to do, in the imperative (\"Run the tests\"); `activeForm` says the same \
as it is being done (\"Running the tests\"). One line each.\n\
- `status` is pending, in_progress or completed. Keep exactly one item in_progress while you \
work: mark it in_progress before you start it, and completed as soon as it is done; do not \
save completions up for later.\n\
- Mark an item completed only when it is fully done. If it is blocked or failed, keep it \
in_progress and add an item for what must be resolved first.\n\
- Remove items that no longer matter. An empty list clears the plan.",
        input_schema: json!({
            "type": "object",
            "properties": {
                "todos": {
                    "type": "array",
                    "description": "The updated todo list",
                    "maxItems": MAX_ITEMS,
                    "items": {
                        "type": "object",
                        "properties": {
                            "content": {"type": "string", "minLength": 1},
                            "status": {
                                "type": "string",
                                "enum": ["pending", "in_progress", "completed"]
                            },
                            "activeForm": {"type": "string", "minLength": 1}
                        },
                        "required": ["content", "status", "activeForm"],
                        "additionalProperties": false
                    }
                }
            },
            "required": ["todos"],
            "additionalProperties": false
        }),
    }
}

/// The plan an input gives, or the tool error that says what is wrong
/// with it (and that nothing changed).
pub fn parse(input: &Value) -> Result<Vec<PlanItem>, ToolOutput> {
    let refuse = |why: String| {
        ToolOutput::error(format!(
            "Invalid TodoWrite input: {why}. Nothing was changed; send the whole list again."
        ))
    };
    let todos = match input.get("todos") {
        Some(Value::Array(todos)) => todos,
        Some(other) => {
            return Err(refuse(format!(
                "`todos` must be an array of items, not {}",
                kind(other)
            )));
        }
        None => return Err(refuse("`todos` (an array of items) is required".into())),
    };
    if todos.len() > MAX_ITEMS {
        return Err(refuse(format!(
            "`todos` has {} items; a plan holds at most {MAX_ITEMS}: merge or drop some",
            todos.len()
        )));
    }
    todos
        .iter()
        .enumerate()
        .map(|(i, todo)| match todo {
            Value::Object(item) => item_of(i, item),
            other => Err(format!("todos[{i}] must be an object, not {}", kind(other))),
        })
        .collect::<Result<Vec<_>, String>>()
        .map_err(refuse)
}

fn item_of(i: usize, item: &Map<String, Value>) -> Result<PlanItem, String> {
    let status = match item.get("status") {
        Some(Value::String(s)) => PlanStatus::parse(s).ok_or_else(|| {
            format!(
                "todos[{i}].status is \"{}\"; it must be one of pending, in_progress, completed",
                crate::domain::text::quote(s)
            )
        })?,
        Some(other) => {
            return Err(format!(
                "todos[{i}].status must be a string (pending, in_progress or completed), not {}",
                kind(other)
            ));
        }
        None => return Err(format!("todos[{i}].status is required")),
    };
    Ok(PlanItem {
        content: line_of(i, item, "content")?,
        status,
        active_form: line_of(i, item, "activeForm")?,
    })
}

/// A required one-line text field: not blank, no control characters (it
/// is shown one item a line), at most `MAX_FIELD_BYTES`.
fn line_of(i: usize, item: &Map<String, Value>, field: &str) -> Result<String, String> {
    let text = match item.get(field) {
        Some(Value::String(s)) => s,
        Some(other) => {
            return Err(format!(
                "todos[{i}].{field} must be a string, not {}",
                kind(other)
            ));
        }
        None => return Err(format!("todos[{i}].{field} is required")),
    };
    if text.trim().is_empty() {
        return Err(format!("todos[{i}].{field} is empty"));
    }
    if text.len() > MAX_FIELD_BYTES {
        return Err(format!(
            "todos[{i}].{field} is {} bytes; at most {MAX_FIELD_BYTES} are allowed: say it shorter",
            text.len()
        ));
    }
    if text.chars().any(char::is_control) {
        return Err(format!(
            "todos[{i}].{field} holds a line break or another control character; each item is one line"
        ));
    }
    Ok(text.clone())
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The answer to a call whose list was set.
pub fn done() -> ToolOutput {
    ToolOutput::ok(DONE)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn todo(content: &str, status: &str, active: &str) -> Value {
        json!({"content": content, "status": status, "activeForm": active})
    }

    fn refusal(input: Value) -> String {
        let out = parse(&input).unwrap_err();
        assert!(out.is_error);
        assert!(
            out.content.contains("Nothing was changed"),
            "{}",
            out.content
        );
        out.content
    }

    #[test]
    fn a_valid_list_becomes_the_plan_in_order() {
        let plan = parse(&json!({"todos": [
            todo("Read the code", "completed", "Reading the code"),
            todo("Fix the bug", "in_progress", "Fixing the bug"),
            // Fields of older schemas are ignored.
            {"content": "Run the tests", "status": "pending", "activeForm": "Running the tests", "id": "3", "priority": "high"},
        ]}))
        .unwrap();
        assert_eq!(plan.len(), 3);
        assert_eq!(plan[0].status, PlanStatus::Completed);
        assert_eq!(plan[1].content, "Fix the bug");
        assert_eq!(plan[1].status, PlanStatus::InProgress);
        assert_eq!(plan[2].active_form, "Running the tests");
        assert_eq!(parse(&json!({"todos": []})).unwrap(), Vec::new());
    }

    #[test]
    fn an_unknown_status_is_refused_naming_the_item_and_the_choices() {
        let why = refusal(json!({"todos": [
            todo("a", "pending", "aing"),
            todo("b", "done", "bing"),
        ]}));
        assert!(why.contains("todos[1].status is \"done\""), "{why}");
        assert!(why.contains("pending, in_progress, completed"), "{why}");
        let why = refusal(json!({"todos": [{"content": "a", "status": 2, "activeForm": "x"}]}));
        assert!(why.contains("must be a string"), "{why}");
    }

    #[test]
    fn missing_empty_and_mistyped_fields_are_refused() {
        for (input, says) in [
            (json!({}), "`todos` (an array of items) is required"),
            (json!({"todos": "x"}), "not a string"),
            (json!({"todos": {"a": 1}}), "not an object"),
            (json!({"todos": [1]}), "todos[0] must be an object"),
            (
                json!({"todos": [{"status": "pending", "activeForm": "x"}]}),
                "todos[0].content is required",
            ),
            (
                json!({"todos": [todo("  ", "pending", "x")]}),
                "todos[0].content is empty",
            ),
            (
                json!({"todos": [todo("a", "pending", "")]}),
                "todos[0].activeForm is empty",
            ),
            (
                json!({"todos": [{"content": "a", "activeForm": "x"}]}),
                "todos[0].status is required",
            ),
            (
                json!({"todos": [{"content": ["a"], "status": "pending", "activeForm": "x"}]}),
                "todos[0].content must be a string, not an array",
            ),
            (
                json!({"todos": [todo("two\nlines", "pending", "x")]}),
                "one line",
            ),
            (
                json!({"todos": [todo("a", "pending", "esc \u{1b}[31m")]}),
                "control character",
            ),
        ] {
            let why = refusal(input.clone());
            assert!(why.contains(says), "{input}: {why}");
        }
    }

    #[test]
    fn the_caps_are_refused_with_their_numbers() {
        let many: Vec<Value> = (0..=MAX_ITEMS)
            .map(|i| todo(&format!("step {i}"), "pending", "x"))
            .collect();
        let why = refusal(json!({"todos": many}));
        assert!(
            why.contains("101 items") && why.contains("at most 100"),
            "{why}"
        );
        let exactly: Vec<Value> = (0..MAX_ITEMS)
            .map(|i| todo(&format!("step {i}"), "pending", "x"))
            .collect();
        assert_eq!(parse(&json!({"todos": exactly})).unwrap().len(), MAX_ITEMS);
        let long = "é".repeat(MAX_FIELD_BYTES / 2 + 1);
        let why = refusal(json!({"todos": [todo(&long, "pending", "x")]}));
        assert!(
            why.contains("1026 bytes") && why.contains("at most 1024"),
            "{why}"
        );
        let fits = "a".repeat(MAX_FIELD_BYTES);
        assert!(parse(&json!({"todos": [todo(&fits, "pending", &fits)]})).is_ok());
    }

    #[test]
    fn the_answer_is_claude_codes() {
        let out = done();
        assert!(!out.is_error);
        assert!(
            out.content
                .starts_with("Todos have been modified successfully.")
        );
        assert!(
            out.content
                .ends_with("Please proceed with the current tasks if applicable")
        );
    }
}
