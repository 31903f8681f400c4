//! The editor's messages: one JSON-RPC message per line on stdin, each at
//! most `MAX_LINE` bytes. A longer line is skipped as it arrives (never
//! held whole: a 300 MiB line must not take 300 MiB), and answered as an
//! invalid request; the conversation goes on.

use tokio::io::{AsyncBufRead, AsyncBufReadExt as _};

/// The longest message the bridge takes: well above the largest prompt the
/// daemon accepts (1 MiB, JSON-escaped) with embedded context.
pub const MAX_LINE: usize = 8 * 1024 * 1024;

/// What one read gave.
#[derive(Debug, PartialEq, Eq)]
pub enum Line {
    /// A whole line is in the buffer (without its newline).
    Message,
    /// A line longer than the cap was skipped; its length in bytes.
    TooLong(usize),
    /// The editor closed stdin (or it failed).
    End,
}

/// Reads the next line into `buf` (cleared first), at most `cap` bytes.
pub async fn next<R: AsyncBufRead + Unpin>(reader: &mut R, buf: &mut Vec<u8>, cap: usize) -> Line {
    buf.clear();
    let mut skipped: Option<usize> = None;
    loop {
        let chunk = match reader.fill_buf().await {
            Ok([]) | Err(_) => {
                return match skipped {
                    Some(n) => Line::TooLong(n),
                    None if buf.is_empty() => Line::End,
                    None => Line::Message,
                };
            }
            Ok(chunk) => chunk,
        };
        let (part, done) = match chunk.iter().position(|b| *b == b'\n') {
            Some(i) => (&chunk[..i], Some(i + 1)),
            None => (chunk, None),
        };
        match &mut skipped {
            Some(n) => *n += part.len(),
            None if buf.len() + part.len() > cap => {
                skipped = Some(buf.len() + part.len());
                buf.clear();
                buf.shrink_to(64 * 1024);
            }
            None => buf.extend_from_slice(part),
        }
        let used = done.unwrap_or(chunk.len());
        reader.consume(used);
        if done.is_some() {
            return match skipped {
                Some(n) => Line::TooLong(n),
                None => Line::Message,
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_line_over_the_cap_is_skipped_and_the_next_one_read() {
        let input = format!("{}\n{{\"a\":1}}\nlast", "x".repeat(100));
        let mut reader = tokio::io::BufReader::with_capacity(16, input.as_bytes());
        let mut buf = Vec::new();
        assert_eq!(next(&mut reader, &mut buf, 50).await, Line::TooLong(100));
        assert!(buf.capacity() <= 64 * 1024);
        assert_eq!(next(&mut reader, &mut buf, 50).await, Line::Message);
        assert_eq!(buf, b"{\"a\":1}");
        assert_eq!(next(&mut reader, &mut buf, 50).await, Line::Message);
        assert_eq!(buf, b"last");
        assert_eq!(next(&mut reader, &mut buf, 50).await, Line::End);
    }
}
