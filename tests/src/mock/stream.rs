//! Response body streams and the deterministic chunking of streamed text.

use std::time::Duration;

use bytes::Bytes;
use futures::Stream;

/// How a streamed reply ends.
pub enum Tail {
    /// All events, the stream ends properly.
    Finish,
    /// After the limit, this event, then a proper end.
    Error(Bytes),
    /// After the limit, the body fails: the connection is broken.
    Cut,
}

/// A streamed reply: its events, where it stops, and the hook run when the
/// first event goes out (the response "starts": cache entries commit).
pub struct EventStream {
    pub events: Vec<Bytes>,
    pub limit: usize,
    pub tail: Tail,
    pub delay: Duration,
    pub on_start: Option<Box<dyn FnOnce() + Send>>,
    /// Run when the stream ends properly after its last event.
    pub on_finish: Option<Box<dyn FnOnce() + Send>>,
}

impl EventStream {
    pub fn new(events: Vec<Bytes>, delay: Duration) -> EventStream {
        let limit = events.len();
        EventStream {
            events,
            limit,
            tail: Tail::Finish,
            delay,
            on_start: None,
            on_finish: None,
        }
    }

    /// Stops after `n` events (clamped to leave out the final event) and
    /// ends with `tail`.
    pub fn stop_after(mut self, n: usize, tail: Tail) -> EventStream {
        self.limit = n.min(self.events.len().saturating_sub(1));
        self.tail = tail;
        self
    }

    pub fn into_stream(self) -> impl Stream<Item = Result<Bytes, std::io::Error>> + Send {
        futures::stream::unfold((self, 0usize, false), |(mut s, next, done)| async move {
            if done {
                return None;
            }
            let more = next < s.limit;
            if !more && matches!(s.tail, Tail::Finish) {
                if s.limit == s.events.len()
                    && let Some(hook) = s.on_finish.take()
                {
                    hook();
                }
                return None;
            }
            if next > 0 && !s.delay.is_zero() {
                tokio::time::sleep(s.delay).await;
            }
            if more {
                if next == 0
                    && let Some(hook) = s.on_start.take()
                {
                    hook();
                }
                let event = s.events[next].clone();
                return Some((Ok(event), (s, next + 1, false)));
            }
            match std::mem::replace(&mut s.tail, Tail::Finish) {
                Tail::Finish => None,
                Tail::Error(event) => Some((Ok(event), (s, next, true))),
                Tail::Cut => {
                    // Let the server flush what was sent before breaking.
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    let err = std::io::Error::new(
                        std::io::ErrorKind::ConnectionAborted,
                        "mock: stream cut",
                    );
                    Some((Err(err), (s, next, true)))
                }
            }
        })
    }
}

/// Splits `s` into pieces whose byte lengths cycle through `sizes`, each
/// extended to the next char boundary; `forced` adds cut points.
fn split(s: &str, sizes: &[usize], forced: &[usize]) -> Vec<String> {
    let mut cuts: Vec<usize> = Vec::new();
    let mut pos = 0;
    let mut i = 0;
    while pos < s.len() {
        pos += sizes[i % sizes.len()];
        i += 1;
        while pos < s.len() && !s.is_char_boundary(pos) {
            pos += 1;
        }
        if pos < s.len() {
            cuts.push(pos);
        }
    }
    cuts.extend(
        forced
            .iter()
            .copied()
            .filter(|&c| c > 0 && c < s.len() && s.is_char_boundary(c)),
    );
    cuts.sort_unstable();
    cuts.dedup();
    let mut pieces = Vec::with_capacity(cuts.len() + 1);
    let mut start = 0;
    for c in cuts.into_iter().chain(std::iter::once(s.len())) {
        if c > start {
            pieces.push(s[start..c].to_string());
        }
        start = c;
    }
    pieces
}

/// Text deltas: pieces of 4 to 12 bytes.
pub fn split_text(s: &str) -> Vec<String> {
    split(s, &[7, 4, 12, 5, 9, 6], &[])
}

/// Tool-input JSON deltas: pieces of 3 to 8 bytes, always with one cut
/// right after the first backslash (inside an escape) and one right after
/// the first quote inside a string value when there is one.
pub fn split_json(s: &str) -> Vec<String> {
    let mut forced = Vec::new();
    if let Some(i) = s.find('\\') {
        forced.push(i + 1);
    }
    if let Some(i) = s.find(":\"") {
        forced.push(i + 3);
    }
    split(s, &[3, 5, 8, 4, 7, 6], &forced)
}

/// `len` random ASCII letters and digits.
pub fn random_id(len: usize) -> String {
    use rand::Rng;
    rand::rng()
        .sample_iter(&rand::distr::Alphanumeric)
        .take(len)
        .map(char::from)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_reassemble_and_respect_chars() {
        for s in [
            "",
            "a",
            "héllo wörld, ünïcödé ✓✓✓ text that goes on",
            r#"{"command":"echo \"hi\"\nls -la","n":[1,2,3]}"#,
        ] {
            for pieces in [split_text(s), split_json(s)] {
                assert_eq!(pieces.concat(), s);
                assert!(pieces.iter().all(|p| !p.is_empty()));
            }
        }
        let json = r#"{"command":"echo \"hi\""}"#;
        let pieces = split_json(json);
        assert!(pieces.len() >= 5, "{pieces:?}");
        assert!(pieces.iter().any(|p| p.ends_with('\\')), "{pieces:?}");
        assert!(pieces.iter().all(|p| p.len() <= 8));
    }
}
