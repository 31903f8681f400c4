//! The allow rules an answer "always, and remember it" keeps (DESIGN §24):
//! the narrowest rules that allow the call asked about, as a person would
//! write them — `Bash(npm test)` for each simple command of the line (the
//! exact command: no wildcard is ever made up), `Read(//abs/path)` or
//! `Edit(//abs/path)` for a file tool's target, `mcp__server__tool`,
//! `Agent(type)`. A call none can be written for (a line that cannot be
//! taken apart, a name or path holding a wildcard) has none: "always"
//! then holds for the agent only. Every rule offered is checked to parse
//! and to allow the call it is for.

use std::path::Path;

use crate::{Call, Decision, Kind, Rule, decide, shell};

/// Characters that would make a made-up rule match more than was asked.
const WILDCARDS: &[char] = &['*', '?', '[', ']'];

fn candidates(call: &Call<'_>) -> Vec<String> {
    match call.tool {
        "Bash" => {
            let line = call.input["command"].as_str().unwrap_or("");
            match shell::parse(line) {
                shell::Parsed::Commands(c) if !c.iter().any(|c| c.contains(WILDCARDS)) => {
                    c.iter().map(|c| format!("Bash({c})")).collect()
                }
                _ => Vec::new(),
            }
        }
        "Read" | "Grep" | "Glob" | "Write" | "Edit" | "NotebookEdit" => {
            let Some((edit, path)) = crate::target(call) else {
                return Vec::new();
            };
            let shown = path.to_string_lossy();
            if shown.contains(WILDCARDS) || path == Path::new("/") {
                return Vec::new();
            }
            let tool = if edit { "Edit" } else { "Read" };
            vec![format!("{tool}(/{shown})")]
        }
        "Agent" => match call.input["subagent_type"].as_str() {
            Some(t) if !t.contains(WILDCARDS) => vec![format!("Agent({t})")],
            _ => Vec::new(),
        },
        t if t.starts_with("mcp__") && !t.contains('*') => vec![t.to_string()],
        _ => Vec::new(),
    }
}

/// The rules to keep for `call`, or none when none can be written.
pub fn rules_for(call: &Call<'_>, root: &Path) -> Vec<String> {
    let texts = candidates(call);
    let mut rules = Vec::with_capacity(texts.len());
    for text in &texts {
        match Rule::new(Kind::Allow, text, "", root) {
            Ok(r) => rules.push(r),
            Err(_) => return Vec::new(),
        }
    }
    match decide(&rules, call) {
        Decision::Allow(_) => texts,
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rules(tool: &str, input: serde_json::Value) -> Vec<String> {
        let call = Call {
            tool,
            input: &input,
            cwd: Path::new("/w"),
            home: Path::new("/home/p"),
        };
        rules_for(&call, Path::new("/cfg"))
    }

    #[test]
    fn the_narrowest_rules_that_allow_the_call_are_kept() {
        assert_eq!(
            rules("Bash", json!({"command": "npm test"})),
            ["Bash(npm test)"]
        );
        assert_eq!(
            rules(
                "Bash",
                json!({"command": "timeout 5 cargo build && ls -la"})
            ),
            ["Bash(cargo build)", "Bash(ls -la)"]
        );
        assert_eq!(
            rules("Edit", json!({"file_path": "src/a.rs"})),
            ["Edit(//w/src/a.rs)"]
        );
        assert_eq!(
            rules("Grep", json!({"pattern": "x", "path": "/etc"})),
            ["Read(//etc)"]
        );
        assert_eq!(
            rules("mcp__github__create_issue", json!({})),
            ["mcp__github__create_issue"]
        );
        assert_eq!(
            rules("Agent", json!({"subagent_type": "Explore"})),
            ["Agent(Explore)"]
        );
    }

    #[test]
    fn nothing_broader_than_the_call_is_made_up() {
        let none: [&str; 0] = [];
        // A wildcard in the command would become a glob.
        assert_eq!(rules("Bash", json!({"command": "rm *.log"})), none);
        // Cannot be taken apart safely.
        assert_eq!(rules("Bash", json!({"command": "echo $(id)"})), none);
        assert_eq!(rules("Read", json!({"file_path": "/a/[x]"})), none);
        assert_eq!(rules("Bash", json!({"command": ""})), none);
        assert_eq!(rules("TodoWrite", json!({})), none);
    }
}
