//! `Glob`: finds files by name pattern.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use globset::GlobBuilder;
use ignore::WalkBuilder;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::context::{ToolContext, ToolOutput, ToolSpec};
use super::input::{optional_str, required_str};
use super::paths::resolve_contained;

/// The most paths returned.
const MAX_RESULTS: usize = 100;

pub fn spec() -> ToolSpec {
    ToolSpec {
        name: "Glob",
        description: "Finds files whose paths match a glob pattern, such as `**/*.rs` or \
`src/**/*.{ts,tsx}`, and lists them as absolute paths, most recently modified first.\n\
\n\
- The pattern is matched against paths relative to `path` (default: the agent's working \
directory). `*` and `?` stay within one path component, `**` spans any number of \
directories, `[abc]` and `{a,b}` work as usual.\n\
- Files ignored by .gitignore (and .ignore) files and the .git directory are skipped; other \
hidden files are included. Only files are listed, not directories.\n\
- At most 100 paths are returned; narrow the pattern or path if there are more.\n\
- To search file contents, use Grep.",
        input_schema: json!({
            "type": "object",
            "properties": {
                "pattern": {
                    "type": "string",
                    "description": "The glob pattern to match file paths against."
                },
                "path": {
                    "type": "string",
                    "description": "The directory to search in (default: the working directory)."
                }
            },
            "required": ["pattern"],
            "additionalProperties": false
        }),
    }
}

/// A directory walker that honours ignore files (even outside a git
/// repository), includes hidden files, skips `.git` and visits entries in a
/// stable order.
pub(super) fn walker(root: &Path) -> WalkBuilder {
    let mut builder = WalkBuilder::new(root);
    builder
        .hidden(false)
        .require_git(false)
        .follow_links(false)
        .filter_entry(|entry| entry.file_name() != ".git")
        .sort_by_file_name(|a, b| a.cmp(b));
    builder
}

/// Runs the tool; a refusal or failure is the `Err` the model is told.
pub async fn run(input: &Value, ctx: &ToolContext) -> Result<ToolOutput, ToolOutput> {
    let pattern = required_str(input, "pattern")?;
    let dir = match optional_str(input, "path")? {
        Some(path) => {
            let dir = ctx.resolve("path", path)?;
            match tokio::fs::metadata(&dir).await {
                Ok(meta) if meta.is_dir() => {}
                Ok(_) => {
                    return Err(ToolOutput::error(format!(
                        "`path` {} is a file; give the directory to search in.",
                        dir.display()
                    )));
                }
                Err(_) => {
                    return Err(ToolOutput::error(format!(
                        "Directory does not exist: {}",
                        dir.display()
                    )));
                }
            }
            dir
        }
        None => ctx.resolve("path", ".")?,
    };

    // Walk only the directories named literally at the start of the pattern,
    // which also keeps `../` and absolute patterns inside the root.
    let (prefix, rest) = split_literal_prefix(pattern);
    let base = if prefix.is_empty() {
        dir
    } else {
        let joined = dir.join(&prefix);
        resolve_contained(&ctx.cwd, &joined.to_string_lossy())
            .map_err(|e| ToolOutput::error(format!("Invalid `pattern`: {e}")))?
    };
    let matcher = GlobBuilder::new(&rest)
        .literal_separator(true)
        .build()
        .map_err(|e| ToolOutput::error(format!("Invalid glob pattern `{pattern}`: {e}")))?
        .compile_matcher();

    let cancel = ctx.cancel.clone();
    let found = tokio::task::spawn_blocking(move || find(&base, &matcher, &cancel))
        .await
        .map_err(|e| ToolOutput::error(format!("The search failed: {e}")))??;

    if found.is_empty() {
        return Ok(ToolOutput::ok("No files found"));
    }
    let total = found.len();
    let mut out: Vec<String> = found
        .into_iter()
        .take(MAX_RESULTS)
        .map(|(path, _)| path.display().to_string())
        .collect();
    if total > MAX_RESULTS {
        out.push(format!(
            "(Showing the {MAX_RESULTS} most recently modified of {total} matching files; use a \
more specific pattern or path to see the rest.)"
        ));
    }
    Ok(ToolOutput::ok(out.join("\n")))
}

/// Splits `pattern` into its leading directories without glob syntax and the
/// rest. The last component always stays in the rest. An absolute pattern has
/// an absolute prefix.
fn split_literal_prefix(pattern: &str) -> (String, String) {
    let components: Vec<&str> = pattern.split('/').collect();
    let literal = components[..components.len() - 1]
        .iter()
        .take_while(|c| !c.contains(['*', '?', '[', ']', '{', '}', '\\']))
        .count();
    let mut prefix = components[..literal].join("/");
    if prefix.is_empty() && pattern.starts_with('/') {
        prefix = "/".to_string();
    }
    (prefix, components[literal..].join("/"))
}

/// The files under `base` matching `matcher` (relative to `base`), newest
/// first.
fn find(
    base: &Path,
    matcher: &globset::GlobMatcher,
    cancel: &CancellationToken,
) -> Result<Vec<(PathBuf, SystemTime)>, ToolOutput> {
    if !base.is_dir() {
        return Ok(Vec::new());
    }
    let mut found = Vec::new();
    for entry in walker(base).build() {
        if cancel.is_cancelled() {
            return Err(ToolOutput::error("The search was cancelled."));
        }
        let Ok(entry) = entry else { continue };
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let Ok(relative) = entry.path().strip_prefix(base) else {
            continue;
        };
        if matcher.is_match(relative) {
            let modified = entry
                .metadata()
                .ok()
                .and_then(|m| m.modified().ok())
                .unwrap_or(SystemTime::UNIX_EPOCH);
            found.push((entry.into_path(), modified));
        }
    }
    found.sort_by(|(a_path, a_time), (b_path, b_time)| {
        b_time.cmp(a_time).then_with(|| a_path.cmp(b_path))
    });
    Ok(found)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// The tool's answer as the model gets it.
    async fn run(input: &Value, ctx: &ToolContext) -> ToolOutput {
        ToolOutput::either(super::run(input, ctx).await)
    }

    use super::super::context::scratch as setup;

    fn touch(root: &Path, rel: &str, age_secs: u64) {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let file = std::fs::File::create(&path).unwrap();
        file.set_modified(SystemTime::now() - Duration::from_secs(age_secs))
            .unwrap();
    }

    async fn glob(ctx: &ToolContext, input: Value) -> ToolOutput {
        run(&input, ctx).await
    }

    fn lines(root: &Path, rels: &[&str]) -> String {
        rels.iter()
            .map(|r| root.join(r).display().to_string())
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[tokio::test]
    async fn lists_matches_newest_first() {
        let (_dir, root, ctx) = setup();
        touch(&root, "old.rs", 300);
        touch(&root, "src/new.rs", 10);
        touch(&root, "src/deep/mid.rs", 100);
        touch(&root, "notes.txt", 1);
        let out = glob(&ctx, json!({"pattern": "**/*.rs"})).await;
        assert_eq!(
            out,
            ToolOutput::ok(lines(&root, &["src/new.rs", "src/deep/mid.rs", "old.rs"]))
        );
    }

    #[tokio::test]
    async fn star_stays_in_one_directory() {
        let (_dir, root, ctx) = setup();
        touch(&root, "top.rs", 10);
        touch(&root, "src/nested.rs", 10);
        let out = glob(&ctx, json!({"pattern": "*.rs"})).await;
        assert_eq!(out, ToolOutput::ok(lines(&root, &["top.rs"])));
        let out = glob(&ctx, json!({"pattern": "src/*.rs"})).await;
        assert_eq!(out, ToolOutput::ok(lines(&root, &["src/nested.rs"])));
        let out = glob(&ctx, json!({"pattern": "*.rs", "path": "src"})).await;
        assert_eq!(out, ToolOutput::ok(lines(&root, &["src/nested.rs"])));
        let out = glob(&ctx, json!({"pattern": "**/*.{rs,txt}"})).await;
        assert_eq!(out.content.lines().count(), 2);
    }

    #[tokio::test]
    async fn skips_gitignored_files_and_git_but_not_hidden_files() {
        let (_dir, root, ctx) = setup();
        std::fs::write(root.join(".gitignore"), "ignored.rs\ntarget/\n").unwrap();
        touch(&root, "kept.rs", 10);
        touch(&root, "ignored.rs", 10);
        touch(&root, "target/build.rs", 10);
        touch(&root, ".hidden/secret.rs", 20);
        touch(&root, ".git/hooks/hook.rs", 10);
        let out = glob(&ctx, json!({"pattern": "**/*.rs"})).await;
        assert_eq!(
            out,
            ToolOutput::ok(lines(&root, &["kept.rs", ".hidden/secret.rs"]))
        );
    }

    #[tokio::test]
    async fn gitignore_applies_outside_a_git_repository() {
        let (_dir, root, ctx) = setup();
        std::fs::write(root.join(".gitignore"), "*.log\n").unwrap();
        touch(&root, "a.txt", 10);
        touch(&root, "debug.log", 10);
        let out = glob(&ctx, json!({"pattern": "*"})).await;
        assert_eq!(out, ToolOutput::ok(lines(&root, &[".gitignore", "a.txt"])));
    }

    #[tokio::test]
    async fn caps_the_number_of_results() {
        let (_dir, root, ctx) = setup();
        for i in 0..120 {
            touch(&root, &format!("f{i:03}.txt"), 1000 - i);
        }
        let out = glob(&ctx, json!({"pattern": "*.txt"})).await;
        let out_lines: Vec<&str> = out.content.lines().collect();
        assert_eq!(out_lines.len(), MAX_RESULTS + 1);
        assert_eq!(out_lines[0], root.join("f119.txt").display().to_string());
        assert!(out_lines[MAX_RESULTS].contains("100 most recently modified of 120"));
    }

    #[tokio::test]
    async fn no_match_says_so() {
        let (_dir, root, ctx) = setup();
        touch(&root, "a.rs", 1);
        assert_eq!(
            glob(&ctx, json!({"pattern": "**/*.py"})).await,
            ToolOutput::ok("No files found")
        );
        assert_eq!(
            glob(&ctx, json!({"pattern": "nonexistent/**/*.rs"})).await,
            ToolOutput::ok("No files found")
        );
    }

    #[tokio::test]
    async fn absolute_patterns_inside_work_and_outside_are_refused() {
        let (_dir, root, ctx) = setup();
        touch(&root, "src/a.rs", 1);
        let pattern = format!("{}/src/*.rs", root.display());
        let out = glob(&ctx, json!({"pattern": pattern})).await;
        assert_eq!(out, ToolOutput::ok(lines(&root, &["src/a.rs"])));
        let out = glob(&ctx, json!({"pattern": "/etc/*"})).await;
        assert!(
            out.is_error && out.content.contains("outside"),
            "{}",
            out.content
        );
        let out = glob(&ctx, json!({"pattern": "../**/*.rs"})).await;
        assert!(
            out.is_error && out.content.contains("outside"),
            "{}",
            out.content
        );
        let out = glob(&ctx, json!({"pattern": "*", "path": ".."})).await;
        assert!(
            out.is_error && out.content.contains("outside"),
            "{}",
            out.content
        );
    }

    #[tokio::test]
    async fn bad_input_is_a_tool_error() {
        let (_dir, root, ctx) = setup();
        touch(&root, "file.rs", 1);
        let out = glob(&ctx, json!({})).await;
        assert!(out.is_error && out.content.contains("`pattern` is required"));
        let out = glob(&ctx, json!({"pattern": "*", "path": "file.rs"})).await;
        assert!(
            out.is_error && out.content.contains("is a file"),
            "{}",
            out.content
        );
        let out = glob(&ctx, json!({"pattern": "*", "path": "missing"})).await;
        assert!(
            out.is_error && out.content.contains("does not exist"),
            "{}",
            out.content
        );
        let out = glob(&ctx, json!({"pattern": "[unclosed"})).await;
        assert!(
            out.is_error && out.content.contains("Invalid glob"),
            "{}",
            out.content
        );
    }

    #[test]
    fn literal_prefixes_are_split_off() {
        let split = |p: &str| split_literal_prefix(p);
        assert_eq!(split("**/*.rs"), (String::new(), "**/*.rs".into()));
        assert_eq!(split("src/a/*.rs"), ("src/a".into(), "*.rs".into()));
        assert_eq!(split("src/main.rs"), ("src".into(), "main.rs".into()));
        assert_eq!(split("main.rs"), (String::new(), "main.rs".into()));
        assert_eq!(split("/abs/**/x"), ("/abs".into(), "**/x".into()));
        assert_eq!(split("/*.rs"), ("/".into(), "*.rs".into()));
        assert_eq!(split("a/{b,c}/d"), ("a".into(), "{b,c}/d".into()));
    }

    #[test]
    fn spec_is_well_formed() {
        let spec = spec();
        assert_eq!(spec.name, "Glob");
        assert_eq!(spec.input_schema["required"], json!(["pattern"]));
        assert_eq!(spec.input_schema["additionalProperties"], json!(false));
    }
}
