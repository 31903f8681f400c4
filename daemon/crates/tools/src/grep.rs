//! `Grep`: searches file contents with a regular expression.

use std::io::{BufRead, BufReader, Cursor, Read as _};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use globset::{GlobBuilder, GlobMatcher};
use regex::bytes::{Regex, RegexBuilder};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::context::{ToolContext, ToolOutput, ToolSpec};
use super::glob::walker;
use super::input::{optional_bool, optional_str, required_str};
use super::paths::{BINARY_SNIFF_BYTES, looks_binary};
use super::read::truncate_line;

/// The most files listed in `files_with_matches` and `count` modes.
const MAX_FILES: usize = 250;
/// The most characters of output (content mode stops searching there).
const MAX_OUTPUT_CHARS: usize = 30_000;

pub fn spec() -> ToolSpec {
    ToolSpec {
        name: "Grep",
        description: "Searches the contents of files for a regular expression (Rust regex \
syntax, similar to ripgrep's; escape literal braces and other special characters).\n\
\n\
- `path` is the file or directory to search (default: the agent's working directory). Files \
ignored by .gitignore, the .git directory and binary files are skipped.\n\
- `glob` limits the search to files whose name matches it, e.g. `*.rs` or `*.{ts,tsx}`; a glob \
containing `/` is matched against the path relative to `path`.\n\
- `output_mode`: `files_with_matches` (default) lists the matching files, most recently \
modified first; `content` shows the matching lines as `path:line`, or `path:number:line` \
with `-n`; `count` shows `path:count` for each file.\n\
- `-i` makes the search case-insensitive. Patterns match within a single line.\n\
- Results are capped at 250 files or 30000 characters, with a note when more were found; \
narrow the pattern, path or glob to see the rest.\n\
- Use this instead of running grep or rg through Bash.",
        input_schema: json!({
            "type": "object",
            "properties": {
                "pattern": {
                    "type": "string",
                    "description": "The regular expression to search for."
                },
                "path": {
                    "type": "string",
                    "description": "The file or directory to search (default: the working directory)."
                },
                "glob": {
                    "type": "string",
                    "description": "Only search files matching this glob, e.g. \"*.rs\" or \"*.{ts,tsx}\"."
                },
                "output_mode": {
                    "type": "string",
                    "enum": ["files_with_matches", "content", "count"],
                    "description": "What to return: matching file paths (default), matching lines, or match counts per file."
                },
                "-i": {
                    "type": "boolean",
                    "description": "Search case-insensitively."
                },
                "-n": {
                    "type": "boolean",
                    "description": "Show line numbers in content mode."
                }
            },
            "required": ["pattern"],
            "additionalProperties": false
        }),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    FilesWithMatches,
    Content,
    Count,
}

/// A compiled `glob` filter: matched against the file name, or against the
/// path relative to the search root when it contains a `/`.
struct FileFilter {
    matcher: GlobMatcher,
    whole_path: bool,
}

impl FileFilter {
    fn matches(&self, root: &Path, path: &Path) -> bool {
        if self.whole_path {
            path.strip_prefix(root)
                .is_ok_and(|relative| self.matcher.is_match(relative))
        } else {
            path.file_name()
                .is_some_and(|name| self.matcher.is_match(name))
        }
    }
}

struct Search {
    regex: Regex,
    mode: Mode,
    line_numbers: bool,
    filter: Option<FileFilter>,
}

/// Runs the tool; a refusal or failure is the `Err` the model is told.
pub async fn run(input: &Value, ctx: &ToolContext) -> Result<ToolOutput, ToolOutput> {
    let pattern = required_str(input, "pattern")?;
    let path = optional_str(input, "path")?;
    let glob = optional_str(input, "glob")?;
    let mode = match optional_str(input, "output_mode")? {
        None | Some("files_with_matches") => Mode::FilesWithMatches,
        Some("content") => Mode::Content,
        Some("count") => Mode::Count,
        Some(other) => {
            return Err(ToolOutput::error(format!(
                "`output_mode` must be one of files_with_matches, content or count, not {other:?}."
            )));
        }
    };
    let case_insensitive = optional_bool(input, "-i")?.unwrap_or(false);
    let line_numbers = optional_bool(input, "-n")?.unwrap_or(false);

    let regex = RegexBuilder::new(pattern)
        .case_insensitive(case_insensitive)
        .build()
        .map_err(|e| ToolOutput::error(format!("Invalid regex `{pattern}`: {e}")))?;
    let filter = match glob {
        None => None,
        Some(glob) => Some(FileFilter {
            matcher: GlobBuilder::new(glob)
                .literal_separator(true)
                .build()
                .map_err(|e| ToolOutput::error(format!("Invalid `glob` {glob:?}: {e}")))?
                .compile_matcher(),
            whole_path: glob.contains('/'),
        }),
    };
    let root = ctx.resolve("path", path.unwrap_or("."))?;
    if tokio::fs::metadata(&root).await.is_err() {
        return Err(ToolOutput::error(format!(
            "Path does not exist: {}",
            root.display()
        )));
    }

    let search = Search {
        regex,
        mode,
        line_numbers,
        filter,
    };
    let cancel = ctx.cancel.clone();
    tokio::task::spawn_blocking(move || search.run(&root, &cancel))
        .await
        .map_err(|e| ToolOutput::error(format!("The search failed: {e}")))?
}

/// What was found in one file.
struct FileMatches {
    path: PathBuf,
    modified: SystemTime,
    count: usize,
}

impl Search {
    fn run(&self, root: &Path, cancel: &CancellationToken) -> Result<ToolOutput, ToolOutput> {
        let mut files: Vec<FileMatches> = Vec::new();
        // Content mode output, built while searching.
        let mut content = String::new();
        let mut content_full = false;

        let mut visit = |path: &Path| -> bool {
            let Some(found) = self.search_file(path, &mut content, &mut content_full) else {
                return !content_full;
            };
            files.push(found);
            !content_full
        };

        if root.is_file() {
            visit(root);
        } else {
            for entry in walker(root).build() {
                if cancel.is_cancelled() {
                    return Err(ToolOutput::error("The search was cancelled."));
                }
                let Ok(entry) = entry else { continue };
                if !entry.file_type().is_some_and(|t| t.is_file()) {
                    continue;
                }
                if self
                    .filter
                    .as_ref()
                    .is_some_and(|filter| !filter.matches(root, entry.path()))
                {
                    continue;
                }
                if !visit(entry.path()) {
                    break;
                }
            }
        }

        if files.is_empty() {
            return Ok(ToolOutput::ok("No matches found"));
        }
        Ok(ToolOutput::ok(match self.mode {
            Mode::Content => {
                if content_full {
                    content.push_str(&format!(
                        "\n(Output cut at {MAX_OUTPUT_CHARS} characters; there may be more \
matches. Narrow the pattern, path or glob to see them.)"
                    ));
                }
                content
            }
            Mode::FilesWithMatches => {
                files.sort_by(|a, b| {
                    b.modified
                        .cmp(&a.modified)
                        .then_with(|| a.path.cmp(&b.path))
                });
                let total = files.len();
                let mut out = format!(
                    "Found {total} {}\n",
                    if total == 1 { "file" } else { "files" }
                );
                let mut shown = 0;
                for file in &files {
                    let line = format!("{}\n", file.path.display());
                    if shown == MAX_FILES || out.len() + line.len() > MAX_OUTPUT_CHARS {
                        break;
                    }
                    out.push_str(&line);
                    shown += 1;
                }
                if shown < total {
                    out.push_str(&format!(
                        "(Showing {shown} of {total} files, most recently modified first; \
narrow the search to see the rest.)\n"
                    ));
                }
                out.trim_end().to_string()
            }
            Mode::Count => {
                let total_files = files.len();
                let total_matches: usize = files.iter().map(|f| f.count).sum();
                let mut out = String::new();
                let mut shown = 0;
                for file in &files {
                    let line = format!("{}:{}\n", file.path.display(), file.count);
                    if shown == MAX_FILES || out.len() + line.len() > MAX_OUTPUT_CHARS {
                        break;
                    }
                    out.push_str(&line);
                    shown += 1;
                }
                if shown < total_files {
                    out.push_str(&format!("(Showing {shown} of {total_files} files.)\n"));
                }
                out.push_str(&format!(
                    "\n{total_matches} matching {} in {total_files} {}.",
                    if total_matches == 1 { "line" } else { "lines" },
                    if total_files == 1 { "file" } else { "files" }
                ));
                out
            }
        }))
    }

    /// Searches one file; `None` when it has no matches, is binary or cannot
    /// be read. In content mode, matching lines are appended to `content`
    /// until it is full.
    fn search_file(
        &self,
        path: &Path,
        content: &mut String,
        content_full: &mut bool,
    ) -> Option<FileMatches> {
        // Never a FIFO or device: opening one could wait forever.
        let mut file = agentd_sandbox::beneath::open_regular(path).ok()?;
        let mut prefix = Vec::with_capacity(BINARY_SNIFF_BYTES);
        (&mut file)
            .take(BINARY_SNIFF_BYTES as u64)
            .read_to_end(&mut prefix)
            .ok()?;
        if looks_binary(&prefix) {
            return None;
        }
        let mut reader = BufReader::with_capacity(64 * 1024, Cursor::new(prefix).chain(file));
        let mut line = Vec::new();
        let mut line_no: u64 = 0;
        let mut count = 0;
        loop {
            line.clear();
            match reader.read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            line_no += 1;
            let text = line.strip_suffix(b"\n").unwrap_or(&line);
            let text = text.strip_suffix(b"\r").unwrap_or(text);
            if !self.regex.is_match(text) {
                continue;
            }
            count += 1;
            match self.mode {
                Mode::FilesWithMatches => break,
                Mode::Count => {}
                Mode::Content => {
                    let text = String::from_utf8_lossy(text);
                    let (text, cut) = truncate_line(&text);
                    let rendered = if self.line_numbers {
                        format!("{}:{line_no}:{text}", path.display())
                    } else {
                        format!("{}:{text}", path.display())
                    };
                    let marker = if cut { " [... line cut]" } else { "" };
                    let needed = rendered.len() + marker.len() + 1;
                    if content.len() + needed > MAX_OUTPUT_CHARS {
                        *content_full = true;
                        break;
                    }
                    if !content.is_empty() {
                        content.push('\n');
                    }
                    content.push_str(&rendered);
                    content.push_str(marker);
                }
            }
        }
        if count == 0 {
            return None;
        }
        let modified = std::fs::metadata(path)
            .and_then(|m| m.modified())
            .unwrap_or(SystemTime::UNIX_EPOCH);
        Some(FileMatches {
            path: path.to_path_buf(),
            modified,
            count,
        })
    }
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

    fn write(root: &Path, rel: &str, content: &str, age_secs: u64) {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, content).unwrap();
        let file = std::fs::File::options().write(true).open(&path).unwrap();
        file.set_modified(SystemTime::now() - Duration::from_secs(age_secs))
            .unwrap();
    }

    /// A small tree: two Rust files and a text file mentioning `needle`.
    fn tree(root: &Path) {
        write(
            root,
            "src/lib.rs",
            "fn needle() {}\nfn other() {}\nlet x = NEEDLE;\n",
            100,
        );
        write(root, "src/main.rs", "fn main() {\n    needle();\n}\n", 10);
        write(root, "notes.txt", "a needle in a haystack\n", 50);
        write(root, "empty.rs", "nothing here\n", 1);
    }

    fn p(root: &Path, rel: &str) -> String {
        root.join(rel).display().to_string()
    }

    #[tokio::test]
    async fn lists_matching_files_newest_first() {
        let (_dir, root, ctx) = setup();
        tree(&root);
        let out = run(&json!({"pattern": "needle"}), &ctx).await;
        let expected = format!(
            "Found 3 files\n{}\n{}\n{}",
            p(&root, "src/main.rs"),
            p(&root, "notes.txt"),
            p(&root, "src/lib.rs")
        );
        assert_eq!(out, ToolOutput::ok(expected));
    }

    #[tokio::test]
    async fn content_mode_with_and_without_line_numbers() {
        let (_dir, root, ctx) = setup();
        tree(&root);
        let out = run(
            &json!({"pattern": "needle", "output_mode": "content", "-n": true, "glob": "*.rs"}),
            &ctx,
        )
        .await;
        let expected = format!(
            "{}:1:fn needle() {{}}\n{}:2:    needle();",
            p(&root, "src/lib.rs"),
            p(&root, "src/main.rs")
        );
        assert_eq!(out, ToolOutput::ok(expected));
        let out = run(
            &json!({"pattern": "need.e", "output_mode": "content", "path": "notes.txt"}),
            &ctx,
        )
        .await;
        assert_eq!(
            out,
            ToolOutput::ok(format!("{}:a needle in a haystack", p(&root, "notes.txt")))
        );
    }

    #[tokio::test]
    async fn case_insensitive_search() {
        let (_dir, root, ctx) = setup();
        tree(&root);
        let out = run(&json!({"pattern": "NEEDLE", "output_mode": "count"}), &ctx).await;
        assert_eq!(
            out,
            ToolOutput::ok(format!(
                "{}:1\n\n1 matching line in 1 file.",
                p(&root, "src/lib.rs")
            ))
        );
        let out = run(
            &json!({"pattern": "NEEDLE", "output_mode": "count", "-i": true}),
            &ctx,
        )
        .await;
        let expected = format!(
            "{}:1\n{}:2\n{}:1\n\n4 matching lines in 3 files.",
            p(&root, "notes.txt"),
            p(&root, "src/lib.rs"),
            p(&root, "src/main.rs")
        );
        assert_eq!(out, ToolOutput::ok(expected));
    }

    #[tokio::test]
    async fn glob_filters_files() {
        let (_dir, root, ctx) = setup();
        tree(&root);
        let out = run(&json!({"pattern": "needle", "glob": "*.txt"}), &ctx).await;
        assert_eq!(
            out,
            ToolOutput::ok(format!("Found 1 file\n{}", p(&root, "notes.txt")))
        );
        let out = run(&json!({"pattern": "needle", "glob": "src/m*.rs"}), &ctx).await;
        assert_eq!(
            out,
            ToolOutput::ok(format!("Found 1 file\n{}", p(&root, "src/main.rs")))
        );
        let out = run(&json!({"pattern": "needle", "glob": "*.{txt,md}"}), &ctx).await;
        assert_eq!(
            out,
            ToolOutput::ok(format!("Found 1 file\n{}", p(&root, "notes.txt")))
        );
    }

    #[tokio::test]
    async fn path_narrows_the_search() {
        let (_dir, root, ctx) = setup();
        tree(&root);
        let out = run(&json!({"pattern": "needle", "path": "src"}), &ctx).await;
        assert_eq!(
            out,
            ToolOutput::ok(format!(
                "Found 2 files\n{}\n{}",
                p(&root, "src/main.rs"),
                p(&root, "src/lib.rs")
            ))
        );
    }

    #[tokio::test]
    async fn skips_binary_ignored_and_git_files() {
        let (_dir, root, ctx) = setup();
        write(&root, "bin.dat", "needle\0binary", 1);
        write(&root, ".gitignore", "ignored.txt\n", 1);
        write(&root, "ignored.txt", "needle\n", 1);
        write(&root, ".git/config", "needle\n", 1);
        write(&root, ".hidden.txt", "needle\n", 1);
        let out = run(&json!({"pattern": "needle"}), &ctx).await;
        assert_eq!(
            out,
            ToolOutput::ok(format!("Found 1 file\n{}", p(&root, ".hidden.txt")))
        );
    }

    #[tokio::test]
    async fn no_matches_says_so() {
        let (_dir, root, ctx) = setup();
        tree(&root);
        let out = run(&json!({"pattern": "absent_word"}), &ctx).await;
        assert_eq!(out, ToolOutput::ok("No matches found"));
    }

    #[tokio::test]
    async fn invalid_input_is_a_tool_error() {
        let (_dir, root, ctx) = setup();
        tree(&root);
        let out = run(&json!({"pattern": "fn (unclosed"}), &ctx).await;
        assert!(out.is_error);
        assert!(out.content.contains("Invalid regex"), "{}", out.content);
        assert!(out.content.contains("unclosed group"), "{}", out.content);
        let out = run(&json!({"pattern": "x", "output_mode": "lines"}), &ctx).await;
        assert!(
            out.is_error && out.content.contains("`output_mode`"),
            "{}",
            out.content
        );
        let out = run(&json!({"pattern": "x", "-i": 3}), &ctx).await;
        assert!(
            out.is_error && out.content.contains("`-i`"),
            "{}",
            out.content
        );
        let out = run(&json!({}), &ctx).await;
        assert!(out.is_error && out.content.contains("`pattern` is required"));
        let out = run(&json!({"pattern": "x", "path": "/etc"}), &ctx).await;
        assert!(
            out.is_error && out.content.contains("outside"),
            "{}",
            out.content
        );
        let out = run(&json!({"pattern": "x", "path": "missing"}), &ctx).await;
        assert!(
            out.is_error && out.content.contains("does not exist"),
            "{}",
            out.content
        );
    }

    #[tokio::test]
    async fn content_output_is_capped() {
        let (_dir, root, ctx) = setup();
        let big: String = (0..5000).map(|i| format!("match line {i}\n")).collect();
        write(&root, "big.txt", &big, 1);
        let out = run(&json!({"pattern": "match", "output_mode": "content"}), &ctx).await;
        assert!(!out.is_error);
        assert!(
            out.content.len() < MAX_OUTPUT_CHARS + 300,
            "{}",
            out.content.len()
        );
        assert!(
            out.content
                .starts_with(&format!("{}:match line 0\n", p(&root, "big.txt")))
        );
        assert!(out.content.contains("Output cut at 30000 characters"));
    }

    #[tokio::test]
    async fn files_output_is_capped() {
        let (_dir, root, ctx) = setup();
        for i in 0..300 {
            write(&root, &format!("f{i:03}.txt"), "hit\n", 1);
        }
        let out = run(&json!({"pattern": "hit"}), &ctx).await;
        let lines: Vec<&str> = out.content.lines().collect();
        assert_eq!(lines[0], "Found 300 files");
        assert_eq!(lines.len(), 1 + MAX_FILES + 1);
        assert!(
            lines[MAX_FILES + 1].contains("Showing 250 of 300"),
            "{}",
            lines[MAX_FILES + 1]
        );
    }

    #[test]
    fn spec_is_well_formed() {
        let spec = spec();
        assert_eq!(spec.name, "Grep");
        assert_eq!(spec.input_schema["required"], json!(["pattern"]));
        let keys: Vec<_> = spec.input_schema["properties"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect();
        assert_eq!(keys, ["pattern", "path", "glob", "output_mode", "-i", "-n"]);
    }
}
