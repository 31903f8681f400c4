//! A command's output: both pipes read concurrently (neither can fill up
//! and block the command), spooled in full, and kept for the model as the
//! first and last bytes of each stream.

use std::collections::VecDeque;
use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio::process::{ChildStderr, ChildStdout};

use super::super::spool::SpoolWriter;

/// The most characters of output returned to the model.
pub const MAX_OUTPUT_CHARS: usize = 30_000;
/// Bytes kept from the start and from the end of each stream while the command
/// runs; the middle of a longer stream is only counted. At least
/// `MAX_OUTPUT_CHARS / 2` characters fit in either half, so whatever is dropped
/// here would be cut by the final truncation anyway.
pub(super) const CAPTURE_BYTES: usize = 64 * 1024;
const READ_CHUNK: usize = 16 * 1024;

/// The command's stdout and stderr, read concurrently so that neither pipe can
/// fill up and block the command.
pub(super) struct Pipes {
    stdout: ChildStdout,
    stderr: ChildStderr,
    spool: SpoolWriter,
    out: Capture,
    err: Capture,
    out_open: bool,
    err_open: bool,
    out_buf: Vec<u8>,
    err_buf: Vec<u8>,
}

impl Pipes {
    pub(super) fn new(stdout: ChildStdout, stderr: ChildStderr, spool: SpoolWriter) -> Self {
        Self {
            stdout,
            stderr,
            spool,
            out: Capture::default(),
            err: Capture::default(),
            out_open: true,
            err_open: true,
            out_buf: vec![0; READ_CHUNK],
            err_buf: vec![0; READ_CHUNK],
        }
    }

    pub(super) fn open(&self) -> bool {
        self.out_open || self.err_open
    }

    /// Reads one chunk from whichever pipe is ready. Cancel safe: a chunk is
    /// stored in the same poll that reads it.
    pub(super) async fn read_chunk(&mut self) {
        tokio::select! {
            read = self.stdout.read(&mut self.out_buf), if self.out_open => match read {
                Ok(0) | Err(_) => self.out_open = false,
                Ok(n) => {
                    self.spool.write(&self.out_buf[..n]);
                    self.out.push(&self.out_buf[..n]);
                }
            },
            read = self.stderr.read(&mut self.err_buf), if self.err_open => match read {
                Ok(0) | Err(_) => self.err_open = false,
                Ok(n) => {
                    self.spool.write(&self.err_buf[..n]);
                    self.err.push(&self.err_buf[..n]);
                }
            },
            else => std::future::pending::<()>().await,
        }
    }

    /// Reads until both pipes are closed or `limit` has passed.
    pub(super) async fn drain_for(&mut self, limit: Duration) {
        let _ = tokio::time::timeout(limit, async {
            while self.open() {
                self.read_chunk().await;
            }
        })
        .await;
    }

    /// The output for the model: stdout, then stderr, shortened in the middle
    /// to [`MAX_OUTPUT_CHARS`].
    pub(super) fn render(&self) -> String {
        let (out, out_omitted) = self.out.text();
        let (err, err_omitted) = self.err.text();
        let out = out.trim_end_matches(['\n', '\r']);
        let err = err.trim_end_matches(['\n', '\r']);
        let combined = match (out.is_empty(), err.is_empty()) {
            (true, true) => String::new(),
            (false, true) => out.to_string(),
            (true, false) => err.to_string(),
            (false, false) => format!("{out}\n[stderr]\n{err}"),
        };
        let text = truncate_middle(&combined, MAX_OUTPUT_CHARS, out_omitted + err_omitted);
        if text.is_empty() {
            "(no output)".to_string()
        } else {
            text
        }
    }
}

/// One output stream: its first and last [`CAPTURE_BYTES`] bytes and how many
/// characters were dropped between them.
#[derive(Default)]
pub(super) struct Capture {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    omitted_chars: usize,
}

/// Whether `byte` starts a UTF-8 character (is not a continuation byte).
fn starts_char(byte: u8) -> bool {
    byte & 0xC0 != 0x80
}

impl Capture {
    pub(super) fn push(&mut self, mut data: &[u8]) {
        if self.head.len() < CAPTURE_BYTES {
            let n = (CAPTURE_BYTES - self.head.len()).min(data.len());
            self.head.extend_from_slice(&data[..n]);
            data = &data[n..];
        }
        if data.is_empty() {
            return;
        }
        if data.len() >= CAPTURE_BYTES {
            self.omitted_chars += self.tail.iter().filter(|b| starts_char(**b)).count();
            self.tail.clear();
            let (dropped, kept) = data.split_at(data.len() - CAPTURE_BYTES);
            self.omitted_chars += dropped.iter().filter(|b| starts_char(**b)).count();
            data = kept;
        }
        self.tail.extend(data);
        if self.tail.len() > CAPTURE_BYTES {
            let excess = self.tail.len() - CAPTURE_BYTES;
            self.omitted_chars += self
                .tail
                .drain(..excess)
                .filter(|b| starts_char(*b))
                .count();
        }
    }

    /// The captured text (head and tail joined) and the number of characters
    /// omitted between them.
    pub(super) fn text(&self) -> (String, usize) {
        let mut bytes = self.head.clone();
        bytes.extend(self.tail.iter());
        (
            String::from_utf8_lossy(&bytes).into_owned(),
            self.omitted_chars,
        )
    }
}

/// Shortens `text` to `max_chars` by keeping its beginning and end, with a
/// marker giving the number of characters left out (plus `already_omitted`,
/// characters dropped earlier).
pub fn truncate_middle(text: &str, max_chars: usize, already_omitted: usize) -> String {
    let total = text.chars().count();
    if total <= max_chars {
        if already_omitted == 0 {
            return text.to_string();
        }
        return format!("{text}\n\n[... {already_omitted} characters omitted ...]");
    }
    let keep_head = max_chars / 2;
    let keep_tail = max_chars - keep_head;
    let head_end = text
        .char_indices()
        .nth(keep_head)
        .map_or(text.len(), |(i, _)| i);
    let tail_start = text
        .char_indices()
        .nth(total - keep_tail)
        .map_or(text.len(), |(i, _)| i);
    let omitted = total - max_chars + already_omitted;
    format!(
        "{}\n\n[... {omitted} characters omitted ...]\n\n{}",
        &text[..head_end],
        &text[tail_start..]
    )
}
