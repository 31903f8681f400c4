//! Deltas coalesced for a client that falls behind: the text waiting for
//! it goes out in fewer, larger messages, never merged across blocks.

use tokio::sync::broadcast;

use crate::agent::events::AgentEvent;
use crate::model::StreamDelta;

/// Largest text sent as one coalesced delta.
const MAX_COALESCED: usize = 16 * 1024;

pub(super) fn delta_len(d: &StreamDelta) -> usize {
    match d {
        StreamDelta::Text { text: s, .. }
        | StreamDelta::Thinking { thinking: s, .. }
        | StreamDelta::InputJson { json: s, .. } => s.len(),
        StreamDelta::ToolUseStart { .. } => usize::MAX,
    }
}

/// Appends `next` to `d` when both continue the same block the same way;
/// otherwise gives `next` back.
pub(super) fn coalesce(d: &mut StreamDelta, next: StreamDelta) -> Result<(), StreamDelta> {
    match (d, next) {
        (
            StreamDelta::Text { index, text },
            StreamDelta::Text {
                index: i,
                text: more,
            },
        )
        | (
            StreamDelta::Thinking {
                index,
                thinking: text,
            },
            StreamDelta::Thinking {
                index: i,
                thinking: more,
            },
        )
        | (
            StreamDelta::InputJson { index, json: text },
            StreamDelta::InputJson {
                index: i,
                json: more,
            },
        ) if *index == i => {
            text.push_str(&more);
            Ok(())
        }
        (_, next) => Err(next),
    }
}

/// Deltas already waiting are sent as one: a slow client gets the same
/// text in fewer messages. Returns the delta and the first event that could
/// not join it; counts the deltas taken in `sent_deltas`, and every event
/// taken off the channel in `took`.
pub(super) fn gather(
    mut d: StreamDelta,
    events: &mut broadcast::Receiver<AgentEvent>,
    sent_deltas: &mut usize,
    took: &mut usize,
) -> (
    StreamDelta,
    Option<Result<AgentEvent, broadcast::error::RecvError>>,
) {
    *sent_deltas += 1;
    while delta_len(&d) < MAX_COALESCED {
        let next = events.try_recv();
        if next.is_ok() {
            *took += 1;
        }
        match next {
            Ok(AgentEvent::Delta(next)) => match coalesce(&mut d, next) {
                Ok(()) => *sent_deltas += 1,
                Err(next) => return (d, Some(Ok(AgentEvent::Delta(next)))),
            },
            Err(broadcast::error::TryRecvError::Empty) => break,
            Err(broadcast::error::TryRecvError::Lagged(n)) => {
                return (d, Some(Err(broadcast::error::RecvError::Lagged(n))));
            }
            Err(broadcast::error::TryRecvError::Closed) => {
                return (d, Some(Err(broadcast::error::RecvError::Closed)));
            }
            Ok(other) => return (d, Some(Ok(other))),
        }
    }
    (d, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_deltas_continuing_the_same_block_coalesce() {
        let text = |index, t: &str| StreamDelta::Text {
            index,
            text: t.into(),
        };
        let mut d = text(0, "Hel");
        assert!(coalesce(&mut d, text(0, "lo")).is_ok());
        assert_eq!(d, text(0, "Hello"));
        assert_eq!(coalesce(&mut d, text(1, "x")), Err(text(1, "x")));
        let json = StreamDelta::InputJson {
            index: 0,
            json: "{".into(),
        };
        assert_eq!(coalesce(&mut d, json.clone()), Err(json));
        let start = StreamDelta::ToolUseStart {
            index: 2,
            name: "Bash".into(),
        };
        let mut s = start.clone();
        assert!(coalesce(&mut s, start.clone()).is_err());
        assert_eq!(
            delta_len(&start),
            usize::MAX,
            "a tool start is never merged into"
        );
    }
}
