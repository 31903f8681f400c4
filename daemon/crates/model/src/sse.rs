//! Server-sent events, as both providers stream them: `event:` and `data:`
//! fields, events separated by a blank line (WHATWG "server-sent events").

/// One event: its name (empty when the stream names none, as OpenAI's) and
/// its data lines joined with '\n'.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    pub event: String,
    pub data: String,
}

/// Incremental parser: feed it bytes as they arrive, take complete events.
/// Bytes are buffered until a line is complete, so multi-byte characters and
/// lines split across network reads are handled.
#[derive(Debug, Default)]
pub struct SseParser {
    buf: Vec<u8>,
    event: String,
    data: Vec<String>,
}

impl SseParser {
    pub fn feed(&mut self, bytes: &[u8], out: &mut Vec<SseEvent>) {
        self.buf.extend_from_slice(bytes);
        let mut start = 0;
        while let Some(pos) = self.buf[start..].iter().position(|b| *b == b'\n') {
            let end = start + pos;
            let mut line = &self.buf[start..end];
            if line.last() == Some(&b'\r') {
                line = &line[..line.len() - 1];
            }
            let line = String::from_utf8_lossy(line).into_owned();
            self.line(&line, out);
            start = end + 1;
        }
        self.buf.drain(..start);
    }

    fn line(&mut self, line: &str, out: &mut Vec<SseEvent>) {
        if line.is_empty() {
            if !self.data.is_empty() || !self.event.is_empty() {
                out.push(SseEvent {
                    event: std::mem::take(&mut self.event),
                    data: std::mem::take(&mut self.data).join("\n"),
                });
            }
            return;
        }
        if line.starts_with(':') {
            return; // comment
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        match field {
            "event" => self.event = value.to_string(),
            "data" => self.data.push(value.to_string()),
            _ => {} // id, retry: unused by model APIs
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_split_anywhere_are_reassembled() {
        let stream = "event: ping\ndata: {\"type\": \"ping\"}\n\n: comment\r\nevent: message_stop\r\ndata: {\"a\":\r\ndata: 1}\r\n\r\ndata: [DONE]\n\n";
        for split in 1..stream.len() {
            let mut p = SseParser::default();
            let mut out = Vec::new();
            let (a, b) = stream.as_bytes().split_at(split);
            p.feed(a, &mut out);
            p.feed(b, &mut out);
            assert_eq!(out.len(), 3, "split at {split}");
            assert_eq!(out[0].event, "ping");
            assert_eq!(out[1].data, "{\"a\":\n1}");
            assert_eq!(
                out[2],
                SseEvent {
                    event: String::new(),
                    data: "[DONE]".into()
                }
            );
        }
    }

    #[test]
    fn multibyte_characters_split_across_reads_survive() {
        let s = "data: héllo ✓\n\n".as_bytes();
        let mut p = SseParser::default();
        let mut out = Vec::new();
        for b in s {
            p.feed(std::slice::from_ref(b), &mut out);
        }
        assert_eq!(out[0].data, "héllo ✓");
    }
}
