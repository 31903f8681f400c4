//! `Write`: creates or replaces a file.

use serde_json::{Value, json};

use super::context::{ToolContext, ToolOutput, ToolSpec};
use super::input::{required_str, required_string};
use crate::domain::{FileChange, RECORDED_BYTES};

pub fn spec() -> ToolSpec {
    ToolSpec {
        name: "Write",
        description: "Writes `content` to a file, replacing the file if it exists and creating it, \
along with any missing parent directories, if it does not.\n\
\n\
- `file_path` is absolute or relative to the agent's working directory, and must be inside it.\n\
- The whole file is replaced. To change part of an existing file, prefer Edit, which only \
sends the changed text; Read a file before overwriting it.\n\
- The result says how many bytes and lines were written and whether the file was created or \
overwritten.",
        input_schema: json!({
            "type": "object",
            "properties": {
                "file_path": {
                    "type": "string",
                    "description": "The file to write, absolute or relative to the working directory."
                },
                "content": {
                    "type": "string",
                    "description": "The complete new content of the file."
                }
            },
            "required": ["file_path", "content"],
            "additionalProperties": false
        }),
    }
}

/// Runs the tool; a refusal or failure is the `Err` the model is told.
pub async fn run(input: &Value, ctx: &ToolContext) -> Result<ToolOutput, ToolOutput> {
    let file_path = required_str(input, "file_path")?;
    let content = required_string(input, "content")?;
    let path = ctx.resolve("file_path", file_path)?;

    let existed = match tokio::fs::metadata(&path).await {
        Ok(meta) if meta.is_dir() => {
            return Err(ToolOutput::error(format!(
                "{} is a directory; give the path of a file to write.",
                path.display()
            )));
        }
        Ok(_) => true,
        Err(_) => false,
    };
    let (root, rel, outside_git) = ctx.below_for_writing(&path)?;
    let bytes = content.as_bytes().to_vec();
    // What the file held, as much as the record of the change can use
    // (the window starts within the new content's length).
    let wanted = content.len() + RECORDED_BYTES;
    let (before, written) = tokio::task::spawn_blocking(move || {
        let before = super::beneath::read_start(&root, &rel, wanted);
        let written = agentd_sandbox::umask::as_the_person(|| {
            super::beneath::write(&root, &rel, &bytes, outside_git)
        });
        (before, written)
    })
    .await
    .map_err(|e| ToolOutput::error(format!("Cannot write {}: {e}", path.display())))?;
    written.map_err(|e| {
        ToolOutput::error(format!(
            "Cannot write {}",
            super::beneath::explain(&e, &path)
        ))
    })?;
    let change = match before {
        Ok((start, size)) => Some(FileChange::between(
            path.clone(),
            Some((&start, size)),
            content,
        )),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            Some(FileChange::between(path.clone(), None, content))
        }
        // Written but not readable: what it held is unknown, so no change
        // is claimed.
        Err(e) => {
            tracing::debug!(path = %path.display(), "Write: the old content could not be read: {e}");
            None
        }
    };

    let lines = content.lines().count();
    let verb = if existed { "Overwrote" } else { "Created" };
    let output = ToolOutput::ok(format!(
        "{verb} {} ({} bytes, {lines} {}).",
        path.display(),
        content.len(),
        if lines == 1 { "line" } else { "lines" }
    ));
    Ok(match change {
        Some(change) => output.with_change(change),
        None => output,
    })
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

    fn ctx(dir: &Path) -> ToolContext {
        ToolContext::new(dir.to_path_buf(), CancellationToken::new())
    }

    #[tokio::test]
    async fn a_confined_agent_cannot_write_into_git_directly_or_through_a_link() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".git/hooks")).unwrap();
        std::os::unix::fs::symlink(".git/hooks", dir.path().join("innocent")).unwrap();
        let mut confined = ctx(dir.path());
        confined.sandbox = agentd_sandbox::Policy::workspace_for_server(dir.path());
        assert!(confined.sandbox.is_some());
        for path in [".git/hooks/pre-commit", "innocent/pre-commit", ".git"] {
            let out = run(
                &json!({"file_path": path, "content": "echo owned"}),
                &confined,
            )
            .await;
            assert!(out.is_error, "{path}: {}", out.content);
            assert!(out.content.contains(".git"), "{path}: {}", out.content);
        }
        assert!(!dir.path().join(".git/hooks/pre-commit").exists());
        // Unconfined, the agent writes where it likes (its own choice).
        let out = run(
            &json!({"file_path": ".git/hooks/pre-commit", "content": "x"}),
            &ctx(dir.path()),
        )
        .await;
        assert!(!out.is_error, "{}", out.content);
    }

    #[tokio::test]
    async fn creates_the_file_and_its_directories() {
        let dir = tempfile::tempdir().unwrap();
        let out = run(
            &json!({"file_path": "a/b/c.txt", "content": "one\ntwo\n"}),
            &ctx(dir.path()),
        )
        .await;
        assert!(!out.is_error, "{}", out.content);
        assert!(out.content.starts_with("Created "), "{}", out.content);
        assert!(out.content.contains("a/b/c.txt"));
        assert!(
            out.content.contains("(8 bytes, 2 lines)"),
            "{}",
            out.content
        );
        assert_eq!(
            std::fs::read_to_string(dir.path().join("a/b/c.txt")).unwrap(),
            "one\ntwo\n"
        );
        let change = out.change.unwrap();
        assert_eq!(change.before, crate::domain::Before::Absent);
        assert_eq!(change.after.text, "one\ntwo\n");
    }

    #[tokio::test]
    async fn overwrites_an_existing_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f.txt"), "old content that is longer").unwrap();
        let out = run(
            &json!({"file_path": "f.txt", "content": "new"}),
            &ctx(dir.path()),
        )
        .await;
        assert!(out.content.starts_with("Overwrote "), "{}", out.content);
        assert!(out.content.contains("(3 bytes, 1 line)"), "{}", out.content);
        assert_eq!(
            std::fs::read_to_string(dir.path().join("f.txt")).unwrap(),
            "new"
        );
        // What it replaced is recorded, from the bytes read before the write.
        let change = out.change.unwrap();
        assert_eq!(
            change.before,
            crate::domain::Before::Text(crate::domain::FileText {
                text: "old content that is longer".into(),
                size: 26,
                cut: false
            })
        );
        assert_eq!(change.after.text, "new");
        assert_eq!(
            change.path,
            std::fs::canonicalize(dir.path()).unwrap().join("f.txt")
        );
    }

    #[tokio::test]
    async fn empty_content_is_allowed() {
        let dir = tempfile::tempdir().unwrap();
        let out = run(
            &json!({"file_path": "empty", "content": ""}),
            &ctx(dir.path()),
        )
        .await;
        assert!(!out.is_error, "{}", out.content);
        assert_eq!(std::fs::read(dir.path().join("empty")).unwrap(), b"");
    }

    #[tokio::test]
    async fn refuses_paths_outside() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("out")).unwrap();
        for path in ["../escape.txt", "out/escape.txt"] {
            let out = run(
                &json!({"file_path": path, "content": "x"}),
                &ctx(dir.path()),
            )
            .await;
            assert!(
                out.is_error && out.content.contains("outside"),
                "{}",
                out.content
            );
        }
        let abs = outside.path().join("escape.txt");
        let out = run(
            &json!({"file_path": abs.to_str().unwrap(), "content": "x"}),
            &ctx(dir.path()),
        )
        .await;
        assert!(
            out.is_error && out.content.contains("outside"),
            "{}",
            out.content
        );
        assert!(!outside.path().join("escape.txt").exists());
    }

    #[tokio::test]
    async fn refuses_a_directory_and_bad_input() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("d")).unwrap();
        let out = run(&json!({"file_path": "d", "content": "x"}), &ctx(dir.path())).await;
        assert!(
            out.is_error && out.content.contains("directory"),
            "{}",
            out.content
        );
        let out = run(&json!({"file_path": "f"}), &ctx(dir.path())).await;
        assert!(
            out.is_error && out.content.contains("`content` is required"),
            "{}",
            out.content
        );
        let out = run(&json!({"content": "x"}), &ctx(dir.path())).await;
        assert!(
            out.is_error && out.content.contains("`file_path` is required"),
            "{}",
            out.content
        );
        let out = run(&json!({"file_path": "f", "content": 1}), &ctx(dir.path())).await;
        assert!(
            out.is_error && out.content.contains("`content`"),
            "{}",
            out.content
        );
    }

    #[test]
    fn spec_is_well_formed() {
        let spec = spec();
        assert_eq!(spec.name, "Write");
        assert_eq!(
            spec.input_schema["required"],
            json!(["file_path", "content"])
        );
        assert_eq!(spec.input_schema["additionalProperties"], json!(false));
    }
}
