//! How far the editor has seen a session's agent, so that an attachment
//! made again (the daemon went away and came back) continues exactly
//! there: from the next transcript entry (each entry is shown once, none
//! is lost), and with the response that was being streamed settled — it
//! either was recorded (its entry comes first, and its text was shown
//! already) or was cut off with the daemon and never will be (the
//! revived turn asks again: a new message, as for a retried response).

/// What the editor has of the agent's transcript and of the response in
/// progress.
#[derive(Debug)]
pub struct Resume {
    /// The first entry the editor has not been shown.
    next_seq: u64,
    /// The text of the response in progress streamed as deltas.
    streamed: String,
    /// The attachment was lost while a response was streaming; what comes
    /// next says whether it was recorded.
    cut: bool,
}

/// What an assistant entry's text needs.
#[derive(Debug, PartialEq, Eq)]
pub enum Text {
    /// Shown already, delta by delta.
    Streamed,
    /// Show it (as a new message when `new_message`: the text streamed
    /// before was a response cut off with the daemon, not this one).
    Show { new_message: bool },
}

impl Resume {
    /// Following from entry `from_seq` on.
    pub fn new(from_seq: u64) -> Resume {
        Resume {
            next_seq: from_seq,
            streamed: String::new(),
            cut: false,
        }
    }

    /// Where an attachment made again starts.
    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }

    /// Entry `seq` arrived: false when the editor was shown it already
    /// (it is then skipped).
    pub fn entry(&mut self, seq: u64) -> bool {
        if seq < self.next_seq {
            return false;
        }
        self.next_seq = seq + 1;
        true
    }

    /// A text delta: true when it starts a new message (the response
    /// streamed before the daemon went away was never recorded).
    pub fn delta(&mut self, text: &str) -> bool {
        let new_message = std::mem::take(&mut self.cut);
        if new_message {
            self.streamed.clear();
        }
        self.streamed.push_str(text);
        new_message
    }

    /// The response in progress was discarded (a retry): what comes is a
    /// new attempt.
    pub fn retried(&mut self) {
        self.streamed.clear();
        self.cut = false;
    }

    /// The attachment was lost.
    pub fn lost(&mut self) {
        self.cut = !self.streamed.is_empty();
    }

    /// An assistant entry whose text blocks read `text` was recorded: it
    /// is the response streamed, unless that one was cut off and this one
    /// differs.
    pub fn response(&mut self, text: &str) -> Text {
        let streamed = std::mem::take(&mut self.streamed);
        let cut = std::mem::take(&mut self.cut);
        match (streamed.is_empty(), cut) {
            (true, _) => Text::Show { new_message: false },
            (false, false) => Text::Streamed,
            (false, true) if streamed == text => Text::Streamed,
            (false, true) => Text::Show { new_message: true },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_attachment_made_again_starts_after_the_last_entry_shown() {
        let mut r = Resume::new(4);
        assert_eq!(r.next_seq(), 4);
        assert!(r.entry(4));
        assert!(r.entry(5));
        assert_eq!(r.next_seq(), 6);
        // Nothing shown twice, whatever the daemon sends.
        assert!(!r.entry(5));
        assert!(!r.entry(0));
        assert_eq!(r.next_seq(), 6);
        assert!(r.entry(6));
        assert_eq!(r.next_seq(), 7);
    }

    #[test]
    fn a_response_recorded_before_the_daemon_went_away_is_not_shown_twice() {
        let mut r = Resume::new(0);
        assert!(!r.delta("Hello, "));
        assert!(!r.delta("world"));
        r.lost();
        // Its entry comes with the catch-up: its text was streamed.
        assert_eq!(r.response("Hello, world"), Text::Streamed);
        // Later responses stream as usual.
        assert!(!r.delta("more"));
        assert_eq!(r.response("more"), Text::Streamed);
    }

    #[test]
    fn a_response_cut_off_with_the_daemon_gives_way_to_a_new_message() {
        // The revived turn streams a new response.
        let mut r = Resume::new(0);
        r.delta("Half a sen");
        r.lost();
        assert!(r.delta("A whole"), "a new message");
        assert!(!r.delta(" answer"));
        assert_eq!(r.response("A whole answer"), Text::Streamed);
        // The new response was recorded before the bridge was back: shown
        // whole, as a new message.
        let mut r = Resume::new(0);
        r.delta("Half a sen");
        r.lost();
        assert_eq!(
            r.response("A whole answer"),
            Text::Show { new_message: true }
        );
        // Nothing streamed: an entry's text is shown as it comes.
        let mut r = Resume::new(0);
        r.lost();
        assert_eq!(r.response("x"), Text::Show { new_message: false });
        // A retry discards what streamed.
        let mut r = Resume::new(0);
        r.delta("discarded");
        r.retried();
        assert_eq!(r.response("x"), Text::Show { new_message: false });
    }
}
