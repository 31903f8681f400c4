//! `Edit`: replaces exact text in a file.

use serde_json::{Value, json};

use super::context::{ToolContext, ToolOutput, ToolSpec};
use super::input::{optional_bool, required_str, required_string};
use crate::domain::FileChange;

pub fn spec() -> ToolSpec {
    ToolSpec {
        name: "Edit",
        description: "Changes a file by replacing an exact piece of its text, `old_string`, \
with `new_string`.\n\
\n\
- `file_path` is absolute or relative to the agent's working directory, must be inside it, \
and the file must already exist (use Write to create files).\n\
- `old_string` must match the file exactly, including indentation and line breaks; copy it \
from Read's output without the line number prefixes.\n\
- `old_string` must occur exactly once, so include enough surrounding lines to make it \
unique. To change every occurrence instead, set `replace_all` to true.\n\
- `new_string` must differ from `old_string`; it may be empty to delete the text.",
        input_schema: json!({
            "type": "object",
            "properties": {
                "file_path": {
                    "type": "string",
                    "description": "The file to change, absolute or relative to the working directory."
                },
                "old_string": {
                    "type": "string",
                    "description": "The exact text to replace."
                },
                "new_string": {
                    "type": "string",
                    "description": "The text to put in its place."
                },
                "replace_all": {
                    "type": "boolean",
                    "default": false,
                    "description": "Replace every occurrence of old_string instead of exactly one."
                }
            },
            "required": ["file_path", "old_string", "new_string"],
            "additionalProperties": false
        }),
    }
}

/// Runs the tool; a refusal or failure is the `Err` the model is told.
pub async fn run(input: &Value, ctx: &ToolContext) -> Result<ToolOutput, ToolOutput> {
    let file_path = required_str(input, "file_path")?;
    let old_string = required_str(input, "old_string")?;
    let new_string = required_string(input, "new_string")?;
    let replace_all = optional_bool(input, "replace_all")?.unwrap_or(false);
    if old_string == new_string {
        return Err(ToolOutput::error(
            "`old_string` and `new_string` are the same, so there is nothing to change.",
        ));
    }
    let path = ctx.resolve("file_path", file_path)?;

    let (root, rel, outside_git) = ctx.below_for_writing(&path)?;
    let (r, l) = (root.clone(), rel.clone());
    let bytes = tokio::task::spawn_blocking(move || super::beneath::read(&r, &l))
        .await
        .map_err(|e| ToolOutput::error(format!("Cannot read {}: {e}", path.display())))?
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => ToolOutput::error(format!(
                "File does not exist: {}. Use Write to create a new file.",
                path.display()
            )),
            std::io::ErrorKind::IsADirectory => {
                ToolOutput::error(format!("{} is a directory, not a file.", path.display()))
            }
            _ => ToolOutput::error(format!(
                "Cannot read {}",
                super::beneath::explain(&e, &path)
            )),
        })?;
    let content = String::from_utf8(bytes).map_err(|_| {
        ToolOutput::error(format!(
            "{} is not UTF-8 text, so Edit cannot change it.",
            path.display()
        ))
    })?;

    let count = content.matches(old_string).count();
    if count == 0 {
        return Err(ToolOutput::error(format!(
            "`old_string` was not found in {}. It must match the file exactly, including \
whitespace and indentation; Read the file to check its current text.",
            path.display()
        )));
    }
    if count > 1 && !replace_all {
        return Err(ToolOutput::error(format!(
            "`old_string` occurs {count} times in {}. Include more surrounding text to pick out \
a single occurrence, or set `replace_all` to true to replace all {count}.",
            path.display()
        )));
    }
    let updated = if replace_all {
        content.replace(old_string, new_string)
    } else {
        content.replacen(old_string, new_string, 1)
    };
    // The record of the change is made from the text the edit read, not
    // from a second read that could see another writer's bytes.
    let change = FileChange::between(
        path.clone(),
        Some((content.as_bytes(), content.len() as u64)),
        &updated,
    );
    tokio::task::spawn_blocking(move || {
        agentd_sandbox::umask::as_the_person(|| {
            super::beneath::write(&root, &rel, updated.as_bytes(), outside_git)
        })
    })
    .await
    .map_err(|e| ToolOutput::error(format!("Cannot write {}: {e}", path.display())))?
    .map_err(|e| {
        ToolOutput::error(format!(
            "Cannot write {}",
            super::beneath::explain(&e, &path)
        ))
    })?;

    Ok(ToolOutput::ok(format!(
        "Edited {}: replaced {count} {}.",
        path.display(),
        if count == 1 {
            "occurrence"
        } else {
            "occurrences"
        }
    ))
    .with_change(change))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::path::Path;
    use tokio_util::sync::CancellationToken;

    /// The tool's answer as the model gets it.
    async fn run(input: &Value, ctx: &ToolContext) -> ToolOutput {
        ToolOutput::either(super::run(input, ctx).await)
    }

    fn setup(content: &str) -> (tempfile::TempDir, ToolContext) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f.rs"), content).unwrap();
        let ctx = ToolContext::new(dir.path().to_path_buf(), CancellationToken::new());
        (dir, ctx)
    }

    fn read(dir: &Path) -> String {
        std::fs::read_to_string(dir.join("f.rs")).unwrap()
    }

    #[tokio::test]
    async fn replaces_a_unique_occurrence() {
        let (dir, ctx) = setup("fn a() {}\nfn b() {}\n");
        let out = run(
            &json!({"file_path": "f.rs", "old_string": "fn b()", "new_string": "fn renamed()"}),
            &ctx,
        )
        .await;
        assert!(!out.is_error, "{}", out.content);
        assert!(
            out.content.contains("replaced 1 occurrence."),
            "{}",
            out.content
        );
        assert_eq!(read(dir.path()), "fn a() {}\nfn renamed() {}\n");
        // The whole file before and after, not just the strings replaced.
        let change = out.change.unwrap();
        assert_eq!(
            change.before,
            crate::domain::Before::Text(crate::domain::FileText {
                text: "fn a() {}\nfn b() {}\n".into(),
                size: 20,
                cut: false
            })
        );
        assert_eq!(change.after.text, "fn a() {}\nfn renamed() {}\n");
        assert_eq!(change.first_line, 0);
    }

    #[tokio::test]
    async fn refuses_an_ambiguous_match() {
        let (dir, ctx) = setup("x = 1;\nx = 1;\nx = 1;\n");
        let out = run(
            &json!({"file_path": "f.rs", "old_string": "x = 1;", "new_string": "x = 2;"}),
            &ctx,
        )
        .await;
        assert!(out.is_error);
        assert!(out.content.contains("occurs 3 times"), "{}", out.content);
        assert!(out.content.contains("replace_all"), "{}", out.content);
        assert_eq!(read(dir.path()), "x = 1;\nx = 1;\nx = 1;\n");
    }

    #[tokio::test]
    async fn replace_all_replaces_every_occurrence() {
        let (dir, ctx) = setup("x = 1;\ny = 0;\nx = 1;\n");
        let out = run(
            &json!({"file_path": "f.rs", "old_string": "x = 1;", "new_string": "x = 2;", "replace_all": true}),
            &ctx,
        )
        .await;
        assert!(!out.is_error, "{}", out.content);
        assert!(
            out.content.contains("replaced 2 occurrences"),
            "{}",
            out.content
        );
        assert_eq!(read(dir.path()), "x = 2;\ny = 0;\nx = 2;\n");
    }

    #[tokio::test]
    async fn deleting_text_works() {
        let (dir, ctx) = setup("keep\ndrop\nkeep\n");
        let out = run(
            &json!({"file_path": "f.rs", "old_string": "drop\n", "new_string": ""}),
            &ctx,
        )
        .await;
        assert!(!out.is_error, "{}", out.content);
        assert_eq!(read(dir.path()), "keep\nkeep\n");
    }

    #[tokio::test]
    async fn not_found_is_an_error() {
        let (dir, ctx) = setup("hello\n");
        let out = run(
            &json!({"file_path": "f.rs", "old_string": "goodbye", "new_string": "x"}),
            &ctx,
        )
        .await;
        assert!(out.is_error);
        assert!(out.content.contains("was not found"), "{}", out.content);
        assert!(out.change.is_none(), "nothing changed, nothing recorded");
        assert_eq!(read(dir.path()), "hello\n");
    }

    #[tokio::test]
    async fn invalid_requests_are_errors() {
        let (_dir, ctx) = setup("hello\n");
        let out = run(
            &json!({"file_path": "f.rs", "old_string": "", "new_string": "x"}),
            &ctx,
        )
        .await;
        assert!(
            out.is_error && out.content.contains("`old_string` is required"),
            "{}",
            out.content
        );
        let out = run(
            &json!({"file_path": "f.rs", "old_string": "hello", "new_string": "hello"}),
            &ctx,
        )
        .await;
        assert!(
            out.is_error && out.content.contains("the same"),
            "{}",
            out.content
        );
        let out = run(&json!({"file_path": "f.rs", "old_string": "hello"}), &ctx).await;
        assert!(
            out.is_error && out.content.contains("`new_string` is required"),
            "{}",
            out.content
        );
        let out = run(
            &json!({"file_path": "f.rs", "old_string": "hello", "new_string": "x", "replace_all": "yes"}),
            &ctx,
        )
        .await;
        assert!(
            out.is_error && out.content.contains("`replace_all`"),
            "{}",
            out.content
        );
        let out = run(
            &json!({"file_path": "missing.rs", "old_string": "a", "new_string": "b"}),
            &ctx,
        )
        .await;
        assert!(
            out.is_error && out.content.contains("does not exist"),
            "{}",
            out.content
        );
        assert!(out.content.contains("missing.rs"));
        let out = run(
            &json!({"file_path": "../f.rs", "old_string": "a", "new_string": "b"}),
            &ctx,
        )
        .await;
        assert!(
            out.is_error && out.content.contains("outside"),
            "{}",
            out.content
        );
    }

    #[test]
    fn spec_is_well_formed() {
        let spec = spec();
        assert_eq!(spec.name, "Edit");
        assert_eq!(
            spec.input_schema["required"],
            json!(["file_path", "old_string", "new_string"])
        );
        assert_eq!(spec.input_schema["additionalProperties"], json!(false));
    }
}
