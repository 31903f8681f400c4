//! How a tool call reads: in one line ("Bash: cargo test", "Read:
//! src/lib.rs"), for the daemon's tool activity events and for clients
//! printing transcripts; and in full ([`exact`]), for a permission ask,
//! which must show everything the call would run.
//!
//! A summary is made visible ([`crate::visible::line`]): what a tool call
//! carries is the model's, and a summary is printed as it is.

use serde_json::Value;

use crate::visible;

/// Longest summary, in characters, before it is cut with an ellipsis.
const MAX_CHARS: usize = 100;

/// The first line of `s`, at most [`MAX_CHARS`], control characters made
/// visible, and `…` where anything was left out.
fn one_line(s: &str) -> String {
    let first = s.split('\n').next().unwrap_or("");
    let kept: String = first.chars().take(MAX_CHARS).collect();
    let mut out = visible::line(&kept).into_owned();
    if kept.len() < s.len() {
        out.push('…');
    }
    out
}

/// The interesting part of a tool call's input: the command, the path, the
/// pattern; for unknown tools the input JSON, cut short.
pub fn summarize(name: &str, input: &Value) -> String {
    let field = |k: &str| input.get(k).and_then(Value::as_str).unwrap_or("");
    let said = by_tool(name, input, field);
    // An external agent's call that came with a title only (DESIGN §19).
    if said.is_empty() && !field("title").is_empty() {
        return one_line(field("title"));
    }
    said
}

fn by_tool<'a>(name: &str, input: &'a Value, field: impl Fn(&str) -> &'a str) -> String {
    match name {
        "Bash" => one_line(field("command")),
        "Read" | "Write" | "Edit" => one_line(field("file_path")),
        "Glob" | "Grep" => {
            let path = field("path");
            if path.is_empty() {
                one_line(field("pattern"))
            } else {
                one_line(&format!("{} in {}", field("pattern"), path))
            }
        }
        "Agent" => one_line(field("description")),
        "TodoWrite" => match input.get("todos").and_then(Value::as_array) {
            Some(todos) => {
                let done = todos.iter().filter(|t| t["status"] == "completed").count();
                format!("{done}/{} done", todos.len())
            }
            None => one_line(&input.to_string()),
        },
        _ => one_line(&input.to_string()),
    }
}

/// Everything a call would do, unabridged and as sent (control
/// characters are the printer's to make visible, with
/// [`visible::text`]): a command in full, every line of it; a path; for
/// an MCP or unknown tool its whole input. An external agent's call that
/// came with a title only is its title and what it says it contains.
pub fn exact(name: &str, input: &Value) -> String {
    let field = |k: &str| input.get(k).and_then(Value::as_str).unwrap_or("");
    let said = match name {
        "Bash" => field("command").to_string(),
        "Read" | "Write" | "Edit" => field("file_path").to_string(),
        "Glob" | "Grep" => match field("path") {
            "" => field("pattern").to_string(),
            path => format!("{} in {path}", field("pattern")),
        },
        "Agent" => match (field("description"), field("prompt")) {
            (d, "") => d.to_string(),
            (d, p) => format!("{d}\n{p}"),
        },
        _ => serde_json::to_string_pretty(input).unwrap_or_default(),
    };
    if said.is_empty() && !field("title").is_empty() {
        return match field("content") {
            "" => field("title").to_string(),
            content => format!("{}\n{content}", field("title")),
        };
    }
    said
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn summaries_pick_the_telling_field_and_stay_short() {
        assert_eq!(
            summarize("Bash", &json!({"command": "ls -la\necho hi"})),
            "ls -la…"
        );
        assert_eq!(
            summarize("Read", &json!({"file_path": "src/a.rs"})),
            "src/a.rs"
        );
        assert_eq!(
            summarize("Grep", &json!({"pattern": "fn main", "path": "src"})),
            "fn main in src"
        );
        assert_eq!(
            summarize(
                "TodoWrite",
                &json!({"todos": [{"status": "completed"}, {"status": "pending"}]})
            ),
            "1/2 done"
        );
        // A call that came with its title only reads as its title.
        assert_eq!(
            summarize(
                "Bash",
                &json!({"title": "echo hi > f.txt", "content": "in /p"})
            ),
            "echo hi > f.txt"
        );
        let long = "x".repeat(300);
        assert_eq!(
            summarize("Bash", &json!({"command": long})).chars().count(),
            MAX_CHARS + 1
        );
        assert_eq!(summarize("Mystery", &json!({"a": 1})), r#"{"a":1}"#);
    }

    #[test]
    fn a_summary_shows_control_characters_and_marks_every_cut() {
        let forged = "touch PWNED && echo pwned #\x1b[27D\x1b[K ls -la";
        assert_eq!(
            summarize("Bash", &json!({ "command": forged })),
            "touch PWNED && echo pwned #␛[27D␛[K ls -la"
        );
        // A lone CR is not a line end: it is shown, and what follows too.
        assert_eq!(
            summarize("Bash", &json!({"command": "ls\rrm -rf ~"})),
            "ls␍rm -rf ~"
        );
        assert_eq!(
            summarize("Bash", &json!({"command": "echo hi\nrm -rf ~"})),
            "echo hi…"
        );
    }

    #[test]
    fn exact_keeps_everything_the_call_would_run() {
        let command = format!("{}\nrm -rf ~\x1b[2K", "x".repeat(300));
        assert_eq!(exact("Bash", &json!({ "command": command })), command);
        assert_eq!(
            exact("mcp__db__query", &json!({"sql": "drop table t"})),
            "{\n  \"sql\": \"drop table t\"\n}"
        );
        assert_eq!(
            exact("Bash", &json!({"title": "run it", "content": "in /p"})),
            "run it\nin /p"
        );
    }
}
