//! `Read`: shows a text file with line numbers.

use std::io::{BufRead, BufReader, Cursor, Read as _};
use std::path::Path;

use serde_json::{Value, json};

use super::context::{ToolContext, ToolOutput, ToolSpec};
use super::input::{optional_u64, required_str};
use super::paths::{BINARY_SNIFF_BYTES, looks_binary};

const DEFAULT_LIMIT: u64 = 2000;
/// Longer lines are cut to this many characters.
pub(super) const MAX_LINE_CHARS: usize = 2000;
/// Bytes of a line kept for display; enough for [`MAX_LINE_CHARS`] characters.
const MAX_LINE_BYTES: usize = MAX_LINE_CHARS * 4;
/// Reading stops once the numbered output reaches this size.
const MAX_OUTPUT_BYTES: usize = 256 * 1024;

pub fn spec() -> ToolSpec {
    ToolSpec {
        name: "Read",
        description: "Reads a text file and returns it with line numbers, formatted like \
`cat -n`: each line is prefixed with its number and a tab.\n\
\n\
- `file_path` is absolute or relative to the agent's working directory, and must be inside it.\n\
- Up to 2000 lines are returned from the start of the file; for longer files use `offset` \
(the 1-based line to start at) and `limit` (how many lines) to read the rest in parts.\n\
- Lines longer than 2000 characters are cut off, and very large results are cut short with \
a note saying where to continue.\n\
- Directories cannot be read (use Glob, or `ls` through Bash), and neither can binary files.\n\
- The line number prefixes are not part of the file: leave them out of Edit's `old_string`.",
        input_schema: json!({
            "type": "object",
            "properties": {
                "file_path": {
                    "type": "string",
                    "description": "The file to read, absolute or relative to the working directory."
                },
                "offset": {
                    "type": "integer",
                    "minimum": 1,
                    "description": "The 1-based line number to start reading at (default 1)."
                },
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "description": "How many lines to read (default 2000)."
                }
            },
            "required": ["file_path"],
            "additionalProperties": false
        }),
    }
}

/// Runs the tool; a refusal or failure is the `Err` the model is told.
pub async fn run(input: &Value, ctx: &ToolContext) -> Result<ToolOutput, ToolOutput> {
    let file_path = required_str(input, "file_path")?;
    let offset = optional_u64(input, "offset")?.unwrap_or(1).max(1);
    let limit = optional_u64(input, "limit")?.unwrap_or(DEFAULT_LIMIT);
    if limit == 0 {
        return Err(ToolOutput::error("`limit` must be at least 1."));
    }
    let path = ctx.resolve("file_path", file_path)?;
    let meta = tokio::fs::metadata(&path).await.map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            ToolOutput::error(format!("File does not exist: {}", path.display()))
        } else {
            ToolOutput::error(format!("Cannot read {}: {e}", path.display()))
        }
    })?;
    if meta.is_dir() {
        return Err(ToolOutput::error(format!(
            "{} is a directory, not a file. To see what it contains, use Glob or run `ls` with Bash.",
            path.display()
        )));
    }
    if !meta.is_file() {
        return Err(not_a_file(&path));
    }
    tokio::task::spawn_blocking(move || read_lines(&path, offset, limit))
        .await
        .map_err(|e| ToolOutput::error(format!("Reading the file failed: {e}")))?
}

fn not_a_file(path: &Path) -> ToolOutput {
    ToolOutput::error(format!(
        "{} is not a regular file (a FIFO, socket or device); Read only reads files.",
        path.display()
    ))
}

/// The numbered lines `offset..offset + limit` of the file at `path`.
fn read_lines(path: &Path, offset: u64, limit: u64) -> Result<ToolOutput, ToolOutput> {
    let io_error =
        |e: std::io::Error| ToolOutput::error(format!("Cannot read {}: {e}", path.display()));
    // Checked again on what is opened (without blocking): it may have been
    // swapped for a FIFO since.
    let mut file = agentd_sandbox::beneath::open_regular(path).map_err(|e| {
        if e.raw_os_error().is_none() {
            not_a_file(path)
        } else {
            io_error(e)
        }
    })?;
    let mut prefix = Vec::with_capacity(BINARY_SNIFF_BYTES);
    (&mut file)
        .take(BINARY_SNIFF_BYTES as u64)
        .read_to_end(&mut prefix)
        .map_err(io_error)?;
    if prefix.is_empty() {
        return Ok(ToolOutput::ok(format!(
            "(The file {} exists but is empty.)",
            path.display()
        )));
    }
    if looks_binary(&prefix) {
        return Err(ToolOutput::error(format!(
            "{} looks like a binary file (it contains NUL bytes); Read only shows text files.",
            path.display()
        )));
    }
    let mut reader = BufReader::with_capacity(64 * 1024, Cursor::new(prefix).chain(file));

    let mut out = String::new();
    let mut line = Vec::new();
    let mut line_no: u64 = 0;
    let mut shown: u64 = 0;
    // Set when reading stopped before the end of the file.
    let mut stopped_early = false;
    let mut output_full = false;
    loop {
        line.clear();
        let consumed =
            read_line_capped(&mut reader, &mut line, MAX_LINE_BYTES).map_err(io_error)?;
        if consumed == 0 {
            break;
        }
        line_no += 1;
        if line_no < offset {
            continue;
        }
        if shown == limit {
            stopped_early = true;
            break;
        }
        let rendered = render_line(line_no, &line, consumed > line.len());
        if !out.is_empty() && out.len() + rendered.len() > MAX_OUTPUT_BYTES {
            stopped_early = true;
            output_full = true;
            break;
        }
        out.push_str(&rendered);
        shown += 1;
    }

    if shown == 0 {
        return Ok(ToolOutput::ok(format!(
            "(The file {} has {line_no} lines; offset {offset} is past its end.)",
            path.display()
        )));
    }
    if stopped_early {
        let last = offset + shown - 1;
        let why = if output_full {
            "the output size limit was reached"
        } else {
            "the line limit was reached"
        };
        out.push_str(&format!(
            "\n(Showed lines {offset}-{last}; {why} and the file continues. Read on with offset={}.)\n",
            last + 1
        ));
    }
    Ok(ToolOutput::ok(out))
}

/// One line in `cat -n` style, cut to [`MAX_LINE_CHARS`]. `cut_already` says
/// the stored bytes are only the start of the line.
fn render_line(number: u64, bytes: &[u8], cut_already: bool) -> String {
    let bytes = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
    let text = String::from_utf8_lossy(bytes);
    let (text, cut) = truncate_line(&text);
    let marker = if cut || cut_already {
        " [... line cut at 2000 characters]"
    } else {
        ""
    };
    format!("{number:>6}\t{text}{marker}\n")
}

/// `line` cut to [`MAX_LINE_CHARS`] characters, and whether it was cut.
pub(super) fn truncate_line(line: &str) -> (&str, bool) {
    match line.char_indices().nth(MAX_LINE_CHARS) {
        Some((end, _)) => (&line[..end], true),
        None => (line, false),
    }
}

/// Reads one line (through its `\n`, if any) from `reader`, storing at most
/// `cap` bytes of it in `buf`. Returns how many bytes the line had; 0 at the
/// end of the input.
fn read_line_capped<R: BufRead>(
    reader: &mut R,
    buf: &mut Vec<u8>,
    cap: usize,
) -> std::io::Result<usize> {
    let mut total = 0;
    loop {
        let available = reader.fill_buf()?;
        if available.is_empty() {
            return Ok(total);
        }
        let (chunk, done) = match available.iter().position(|&b| b == b'\n') {
            Some(i) => (&available[..=i], true),
            None => (available, false),
        };
        let room = cap.saturating_sub(buf.len()).min(chunk.len());
        buf.extend_from_slice(&chunk[..room]);
        let used = chunk.len();
        total += used;
        reader.consume(used);
        if done {
            return Ok(total);
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use tokio_util::sync::CancellationToken;

    /// The tool's answer as the model gets it.
    async fn run(input: &Value, ctx: &ToolContext) -> ToolOutput {
        ToolOutput::either(super::run(input, ctx).await)
    }

    fn ctx(dir: &Path) -> ToolContext {
        ToolContext::new(dir.to_path_buf(), CancellationToken::new())
    }

    fn setup(content: &str) -> (tempfile::TempDir, ToolContext) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f.txt"), content).unwrap();
        let ctx = ctx(dir.path());
        (dir, ctx)
    }

    #[tokio::test]
    async fn numbers_lines_like_cat_n() {
        let (_dir, ctx) = setup("alpha\nbeta\r\n\ngamma");
        let out = run(&json!({"file_path": "f.txt"}), &ctx).await;
        assert_eq!(
            out,
            ToolOutput::ok("     1\talpha\n     2\tbeta\n     3\t\n     4\tgamma\n")
        );
    }

    #[tokio::test]
    async fn offset_and_limit_select_lines() {
        let content: String = (1..=10).map(|i| format!("line {i}\n")).collect();
        let (_dir, ctx) = setup(&content);
        let out = run(
            &json!({"file_path": "f.txt", "offset": 3, "limit": 2}),
            &ctx,
        )
        .await;
        assert!(!out.is_error);
        assert!(
            out.content
                .starts_with("     3\tline 3\n     4\tline 4\n\n(Showed lines 3-4;"),
            "{}",
            out.content
        );
        assert!(out.content.contains("offset=5"), "{}", out.content);
        // Reading to the end has no continuation note.
        let out = run(&json!({"file_path": "f.txt", "offset": 9}), &ctx).await;
        assert_eq!(out, ToolOutput::ok("     9\tline 9\n    10\tline 10\n"));
        // A limit that ends exactly at the last line has none either.
        let out = run(
            &json!({"file_path": "f.txt", "offset": 9, "limit": 2}),
            &ctx,
        )
        .await;
        assert_eq!(out, ToolOutput::ok("     9\tline 9\n    10\tline 10\n"));
    }

    #[tokio::test]
    async fn default_limit_is_2000_lines() {
        let content: String = (1..=2500).map(|i| format!("{i}\n")).collect();
        let (_dir, ctx) = setup(&content);
        let out = run(&json!({"file_path": "f.txt"}), &ctx).await;
        assert!(out.content.contains("  2000\t2000\n"));
        assert!(!out.content.contains("2001\t"));
        assert!(
            out.content.contains("offset=2001"),
            "{}",
            &out.content[out.content.len() - 200..]
        );
    }

    #[tokio::test]
    async fn offset_past_the_end_is_explained() {
        let (_dir, ctx) = setup("a\nb\n");
        let out = run(&json!({"file_path": "f.txt", "offset": 5}), &ctx).await;
        assert!(!out.is_error);
        assert!(
            out.content
                .contains("has 2 lines; offset 5 is past its end"),
            "{}",
            out.content
        );
    }

    #[tokio::test]
    async fn long_lines_are_cut() {
        let long = "x".repeat(5000);
        let (_dir, ctx) = setup(&format!("{long}\nshort\n"));
        let out = run(&json!({"file_path": "f.txt"}), &ctx).await;
        let first = out.content.lines().next().unwrap();
        assert_eq!(
            first,
            format!(
                "     1\t{} [... line cut at 2000 characters]",
                "x".repeat(2000)
            )
        );
        assert!(out.content.contains("     2\tshort\n"));
        // Lines far beyond the stored bytes are cut too.
        let (_dir, ctx) = setup(&"é".repeat(20_000));
        let out = run(&json!({"file_path": "f.txt"}), &ctx).await;
        assert!(out.content.ends_with(&format!(
            "{} [... line cut at 2000 characters]\n",
            "é".repeat(2000)
        )));
    }

    #[tokio::test]
    async fn empty_file_is_noted() {
        let (_dir, ctx) = setup("");
        let out = run(&json!({"file_path": "f.txt"}), &ctx).await;
        assert!(!out.is_error);
        assert!(out.content.contains("is empty"), "{}", out.content);
    }

    #[tokio::test]
    async fn directories_are_refused() {
        let (dir, ctx) = setup("");
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        let out = run(&json!({"file_path": "sub"}), &ctx).await;
        assert!(out.is_error);
        assert!(out.content.contains("is a directory"), "{}", out.content);
        assert!(out.content.contains("Glob") && out.content.contains("ls"));
    }

    #[tokio::test]
    async fn binary_files_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("b.bin"), b"ELF\x00\x01\x02").unwrap();
        let out = run(&json!({"file_path": "b.bin"}), &ctx(dir.path())).await;
        assert!(out.is_error);
        assert!(out.content.contains("binary"), "{}", out.content);
    }

    #[tokio::test]
    async fn missing_file_names_the_path() {
        let (_dir, ctx) = setup("");
        let out = run(&json!({"file_path": "nope/missing.txt"}), &ctx).await;
        assert!(out.is_error);
        assert!(out.content.contains("does not exist"), "{}", out.content);
        assert!(out.content.contains("nope/missing.txt"), "{}", out.content);
    }

    #[tokio::test]
    async fn paths_outside_are_refused() {
        let (_dir, ctx) = setup("");
        let out = run(&json!({"file_path": "/etc/hostname"}), &ctx).await;
        assert!(
            out.is_error && out.content.contains("outside"),
            "{}",
            out.content
        );
        let out = run(&json!({"file_path": "../f.txt"}), &ctx).await;
        assert!(
            out.is_error && out.content.contains("outside"),
            "{}",
            out.content
        );
    }

    #[tokio::test]
    async fn absolute_paths_inside_work() {
        let (dir, ctx) = setup("hi\n");
        let abs = dir.path().join("f.txt");
        let out = run(&json!({"file_path": abs.to_str().unwrap()}), &ctx).await;
        assert_eq!(out, ToolOutput::ok("     1\thi\n"));
    }

    #[tokio::test]
    async fn bad_input_is_a_tool_error() {
        let (_dir, ctx) = setup("x");
        let out = run(&json!({}), &ctx).await;
        assert!(
            out.is_error && out.content.contains("`file_path` is required"),
            "{}",
            out.content
        );
        let out = run(&json!({"file_path": "f.txt", "offset": "x"}), &ctx).await;
        assert!(
            out.is_error && out.content.contains("`offset`"),
            "{}",
            out.content
        );
        let out = run(&json!({"file_path": "f.txt", "limit": 0}), &ctx).await;
        assert!(
            out.is_error && out.content.contains("`limit`"),
            "{}",
            out.content
        );
    }

    #[test]
    fn spec_is_well_formed() {
        let spec = spec();
        assert_eq!(spec.name, "Read");
        assert_eq!(spec.input_schema["required"], json!(["file_path"]));
        assert_eq!(spec.input_schema["additionalProperties"], json!(false));
    }
}
