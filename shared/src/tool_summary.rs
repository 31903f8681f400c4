//! How a tool call reads in one line ("Bash: cargo test", "Read: src/lib.rs"),
//! for the daemon's tool activity events and for clients printing transcripts.

use serde_json::Value;

/// Longest summary, in characters, before it is cut with an ellipsis.
const MAX_CHARS: usize = 100;

fn one_line(s: &str) -> String {
    let first = s.lines().next().unwrap_or("");
    let mut out: String = first.chars().take(MAX_CHARS).collect();
    if out.len() < s.len() {
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
}
