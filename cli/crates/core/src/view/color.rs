//! Colour on standard output: only on a terminal, never with `NO_COLOR`
//! set (https://no-color.org), and as `--color never|always|auto` says.
//! Decided once, in main, before anything is printed.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};

use agentd_shared::proto as pb;

/// `--color`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ColorChoice {
    /// On a terminal, unless NO_COLOR is set or TERM is dumb.
    #[default]
    Auto,
    Always,
    Never,
}

static ON: AtomicBool = AtomicBool::new(false);

/// Whether to colour, given the choice and what the environment says.
pub fn decide(choice: ColorChoice, no_color: Option<&str>, term: Option<&str>, tty: bool) -> bool {
    match choice {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => no_color.is_none_or(str::is_empty) && term != Some("dumb") && tty,
    }
}

pub fn init(choice: ColorChoice) {
    let no_color = std::env::var("NO_COLOR").ok();
    let term = std::env::var("TERM").ok();
    ON.store(
        decide(
            choice,
            no_color.as_deref(),
            term.as_deref(),
            std::io::stdout().is_terminal(),
        ),
        Ordering::Relaxed,
    );
}

/// Whether colour was decided on (`ui` styles its widgets by it).
pub fn enabled() -> bool {
    ON.load(Ordering::Relaxed)
}

fn paint(code: &str, text: &str) -> String {
    if ON.load(Ordering::Relaxed) {
        format!("\x1b[{code}m{text}\x1b[0m")
    } else {
        text.to_string()
    }
}

pub fn green(text: &str) -> String {
    paint("32", text)
}

pub fn yellow(text: &str) -> String {
    paint("33", text)
}

pub fn red(text: &str) -> String {
    paint("31", text)
}

pub fn cyan(text: &str) -> String {
    paint("36", text)
}

/// An agent's status word, coloured by what it means.
pub fn status(status: i32) -> String {
    let name = super::status::name(status);
    match pb::AgentStatus::try_from(status).unwrap_or_default() {
        pb::AgentStatus::Completed => green(name),
        pb::AgentStatus::Failed | pb::AgentStatus::Interrupted => red(name),
        pb::AgentStatus::Running | pb::AgentStatus::Pending => cyan(name),
        pb::AgentStatus::Waiting | pb::AgentStatus::Paused => yellow(name),
        _ => name.to_string(),
    }
}

/// The width a terminal shows `text` in: escape sequences take none.
pub fn visible_width(text: &str) -> usize {
    let mut width = 0;
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            // CSI: ESC [ parameters final-byte
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            width += 1;
        }
    }
    width
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_color_and_terminals_decide_auto_and_the_flag_wins() {
        use ColorChoice::*;
        assert!(decide(Auto, None, Some("xterm"), true));
        assert!(!decide(Auto, None, Some("xterm"), false));
        assert!(!decide(Auto, Some("1"), Some("xterm"), true));
        // An empty NO_COLOR does not count (no-color.org).
        assert!(decide(Auto, Some(""), Some("xterm"), true));
        assert!(!decide(Auto, None, Some("dumb"), true));
        assert!(decide(Always, Some("1"), None, false));
        assert!(!decide(Never, None, Some("xterm"), true));
    }

    #[test]
    fn escapes_take_no_width() {
        assert_eq!(visible_width("\x1b[32mcompleted\x1b[0m"), 9);
        assert_eq!(visible_width("plain"), 5);
    }
}
