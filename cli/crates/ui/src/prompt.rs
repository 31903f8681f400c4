//! The input line at the bottom: a message to send (`s`), a fork's
//! directive (`f`), the filter (`/`), the turn to rewind to (`w`), and the
//! questions asked before an
//! action that cannot be undone — stop (`x`), merge (`m`), rm (`r`, with
//! what work the agent's tree holds) — or that answers an agent
//! (`p`: y / a / n). Each question names the agent it is about by id, so
//! an answer goes to that agent even if the selection moved meanwhile.

use agentd_shared::proto as pb;

use super::keys::Mode;
use crate::permission_prompt::{keys, question};

/// What the line is asking for.
#[derive(Debug, Clone, PartialEq)]
pub enum Ask {
    Send {
        id: String,
        short: String,
    },
    Fork {
        id: String,
        short: String,
    },
    Filter,
    Rewind {
        id: String,
        short: String,
    },
    Stop {
        id: String,
        short: String,
    },
    Merge {
        id: String,
        short: String,
    },
    Rm {
        id: String,
        short: String,
        holds: String,
    },
    Permission {
        agent_id: String,
        request: pb::PermissionRequest,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct Prompt {
    pub ask: Ask,
    pub text: String,
}

impl Prompt {
    pub fn new(ask: Ask) -> Prompt {
        Prompt {
            ask,
            text: String::new(),
        }
    }

    /// The filter prompt starts from the filter in force.
    pub fn filter(current: &str) -> Prompt {
        Prompt {
            ask: Ask::Filter,
            text: current.to_string(),
        }
    }

    /// How keys are read while this prompt is open.
    pub fn mode(&self) -> Mode {
        match self.ask {
            Ask::Send { .. } | Ask::Fork { .. } | Ask::Filter | Ask::Rewind { .. } => Mode::Typing,
            Ask::Stop { .. } | Ask::Merge { .. } | Ask::Rm { .. } => Mode::Confirm,
            Ask::Permission { .. } => Mode::Permission,
        }
    }

    pub fn type_char(&mut self, c: char) {
        // A line, not a document: a pasted newline is a space.
        self.text.push(if c == '\n' || c == '\r' { ' ' } else { c });
    }

    pub fn erase(&mut self) {
        self.text.pop();
    }

    /// The line as shown: the question, then what was typed.
    pub fn line(&self) -> String {
        match &self.ask {
            Ask::Send { short, .. } => format!("message to {short}: {}", self.text),
            Ask::Fork { short, .. } => format!("fork {short}, directive: {}", self.text),
            Ask::Filter => format!("/{}", self.text),
            Ask::Rewind { short, .. } => format!(
                "rewind {short} to the beginning of turn (N, N code, N conversation): {}",
                self.text
            ),
            Ask::Stop { short, .. } => {
                format!("stop {short} and its subagents? [y/n]")
            }
            Ask::Merge { short, .. } => {
                format!("merge {short}'s branch into its checkout? [y/n]")
            }
            // The answer keys first: what the tree holds can be longer than
            // the line.
            Ask::Rm { short, holds, .. } => format!("rm {short}? [y/n] {holds}"),
            // The whole ask is in the box above (`ask_box`); this line
            // has what fits.
            Ask::Permission { request, .. } => {
                format!("{} — {}", question(request), keys(request))
            }
        }
    }

    /// Where the cursor goes: after the text of a typed line.
    pub fn cursor(&self) -> Option<usize> {
        (self.mode() == Mode::Typing).then(|| self.line().chars().count())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_typed_line_shows_its_question_and_text_and_keeps_to_one_line() {
        let mut p = Prompt::new(Ask::Send {
            id: "id".into(),
            short: "3f2a1b9c".into(),
        });
        for c in "hi\nyou".chars() {
            p.type_char(c);
        }
        p.erase();
        assert_eq!(p.line(), "message to 3f2a1b9c: hi yo");
        assert_eq!(p.mode(), Mode::Typing);
        assert_eq!(p.cursor(), Some(p.line().chars().count()));
    }

    #[test]
    fn rm_says_what_the_tree_holds_and_asks_y_or_n() {
        let p = Prompt::new(Ask::Rm {
            id: "id".into(),
            short: "3f2a1b9c".into(),
            holds: "worktree /w (branch agentd/3f2a1b9c): 2 files changed".into(),
        });
        assert_eq!(
            p.line(),
            "rm 3f2a1b9c? [y/n] worktree /w (branch agentd/3f2a1b9c): 2 files changed"
        );
        assert_eq!(p.mode(), Mode::Confirm);
        assert_eq!(p.cursor(), None);
        assert_eq!(Prompt::filter("abc").line(), "/abc");
    }
}
