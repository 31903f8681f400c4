//! The key map (DESIGN §20, fixed so scripts and docs can rely on it), as a
//! pure function from what the screen is doing and a key to an action.
//! The event loop does the action; nothing here has effects.

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

/// The keys, as `agentctl ui --help` and `?` show them.
pub const HELP: &str = "\
Keys:
  ↑/↓ or j/k  move                    Enter  attach full screen (Ctrl-D back)
  s  send a message                   b      move to the background
  i  interrupt                        x      stop (asks y/n)
  f  fork (asks for the directive)    d      diff (d again: back to output)
  m  merge (asks y/n)                 r      rm (asks y/n; says what work its tree holds)
  c  checkpoints: its turns, what each changed (c again: back)
  w  rewind to the beginning of a turn (type N, or N code / N conversation)
  p  answer the selected agent's permission ask (y once / a always / n deny)
  /  filter by name, description or id (Enter applies, Esc clears)
  a  show all (also agents that ended over a day ago)
  PgUp/PgDn  scroll the output        ?      help
  q  quit
Marks: ? waits for a permission answer · ● a background agent finished since you last looked";

/// What the screen is doing, as far as keys care.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// The tree has the keys.
    Normal,
    /// A line is being typed (send, fork, filter).
    Typing,
    /// A y/n question (stop, merge, rm).
    Confirm,
    /// A permission ask: y, a or n.
    Permission,
    /// The help is shown; any key closes it.
    Help,
}

/// An answer to a question.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// y: yes, or allow once.
    Yes,
    /// a: allow always.
    Always,
    /// n: deny.
    No,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Quit,
    Move(isize),
    Attach,
    Send,
    Background,
    Interrupt,
    Stop,
    Fork,
    Diff,
    Merge,
    Rm,
    Checkpoints,
    Rewind,
    Permission,
    Filter,
    /// Esc with nothing open: the filter is cleared.
    ClearFilter,
    ToggleAll,
    Help,
    /// Lines of output scrolled back (positive) or forward.
    Scroll(isize),
    /// Ctrl-L: draw everything again.
    Redraw,
    // While typing or asked:
    Type(char),
    Erase,
    Submit,
    Cancel,
    Answer(Answer),
}

/// The action `key` asks for in `mode`, if any.
pub fn action(mode: Mode, key: KeyEvent) -> Option<Action> {
    if key.kind == KeyEventKind::Release {
        return None;
    }
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    if ctrl {
        return match (key.code, mode) {
            (KeyCode::Char('c'), Mode::Normal | Mode::Help) => Some(Action::Quit),
            (KeyCode::Char('c'), _) => Some(Action::Cancel),
            (KeyCode::Char('l'), _) => Some(Action::Redraw),
            _ => None,
        };
    }
    match mode {
        Mode::Normal => normal(key.code),
        Mode::Typing => match key.code {
            KeyCode::Enter => Some(Action::Submit),
            KeyCode::Esc => Some(Action::Cancel),
            KeyCode::Backspace => Some(Action::Erase),
            KeyCode::Char(c) => Some(Action::Type(c)),
            _ => None,
        },
        Mode::Confirm => match key.code {
            KeyCode::Char('y' | 'Y') => Some(Action::Answer(Answer::Yes)),
            KeyCode::Char('n' | 'N') | KeyCode::Esc => Some(Action::Cancel),
            _ => None,
        },
        Mode::Permission => match key.code {
            KeyCode::Char('y') => Some(Action::Answer(Answer::Yes)),
            KeyCode::Char('a') => Some(Action::Answer(Answer::Always)),
            KeyCode::Char('n') => Some(Action::Answer(Answer::No)),
            KeyCode::Esc => Some(Action::Cancel),
            _ => None,
        },
        Mode::Help => Some(Action::Cancel),
    }
}

fn normal(code: KeyCode) -> Option<Action> {
    Some(match code {
        KeyCode::Up | KeyCode::Char('k') => Action::Move(-1),
        KeyCode::Down | KeyCode::Char('j') => Action::Move(1),
        KeyCode::Home => Action::Move(isize::MIN / 2),
        KeyCode::End => Action::Move(isize::MAX / 2),
        KeyCode::PageUp => Action::Scroll(10),
        KeyCode::PageDown => Action::Scroll(-10),
        KeyCode::Enter => Action::Attach,
        KeyCode::Char('s') => Action::Send,
        KeyCode::Char('b') => Action::Background,
        KeyCode::Char('i') => Action::Interrupt,
        KeyCode::Char('x') => Action::Stop,
        KeyCode::Char('f') => Action::Fork,
        KeyCode::Char('d') => Action::Diff,
        KeyCode::Char('m') => Action::Merge,
        KeyCode::Char('r') => Action::Rm,
        KeyCode::Char('c') => Action::Checkpoints,
        KeyCode::Char('w') => Action::Rewind,
        KeyCode::Char('p') => Action::Permission,
        KeyCode::Char('/') => Action::Filter,
        KeyCode::Esc => Action::ClearFilter,
        KeyCode::Char('a') => Action::ToggleAll,
        KeyCode::Char('?') => Action::Help,
        KeyCode::Char('q') => Action::Quit,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    fn ch(c: char) -> KeyEvent {
        key(KeyCode::Char(c))
    }

    #[test]
    fn the_documented_keys_do_what_the_issue_says_in_the_tree() {
        let table = [
            (key(KeyCode::Up), Action::Move(-1)),
            (ch('k'), Action::Move(-1)),
            (key(KeyCode::Down), Action::Move(1)),
            (ch('j'), Action::Move(1)),
            (key(KeyCode::Enter), Action::Attach),
            (ch('s'), Action::Send),
            (ch('b'), Action::Background),
            (ch('i'), Action::Interrupt),
            (ch('x'), Action::Stop),
            (ch('f'), Action::Fork),
            (ch('d'), Action::Diff),
            (ch('m'), Action::Merge),
            (ch('r'), Action::Rm),
            (ch('c'), Action::Checkpoints),
            (ch('w'), Action::Rewind),
            (ch('p'), Action::Permission),
            (ch('/'), Action::Filter),
            (ch('a'), Action::ToggleAll),
            (ch('?'), Action::Help),
            (ch('q'), Action::Quit),
        ];
        for (k, want) in table {
            assert_eq!(action(Mode::Normal, k), Some(want), "{k:?}");
        }
        assert_eq!(action(Mode::Normal, ch('z')), None);
        let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
        assert_eq!(action(Mode::Normal, ctrl_c), Some(Action::Quit));
    }

    #[test]
    fn typing_takes_every_letter_so_q_and_j_are_text_there() {
        assert_eq!(action(Mode::Typing, ch('q')), Some(Action::Type('q')));
        assert_eq!(action(Mode::Typing, ch('j')), Some(Action::Type('j')));
        assert_eq!(
            action(Mode::Typing, key(KeyCode::Enter)),
            Some(Action::Submit)
        );
        assert_eq!(
            action(Mode::Typing, key(KeyCode::Esc)),
            Some(Action::Cancel)
        );
        assert_eq!(
            action(Mode::Typing, key(KeyCode::Backspace)),
            Some(Action::Erase)
        );
        let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
        assert_eq!(action(Mode::Typing, ctrl_c), Some(Action::Cancel));
    }

    #[test]
    fn a_question_takes_only_its_answers() {
        assert_eq!(
            action(Mode::Confirm, ch('y')),
            Some(Action::Answer(Answer::Yes))
        );
        assert_eq!(action(Mode::Confirm, ch('n')), Some(Action::Cancel));
        assert_eq!(
            action(Mode::Confirm, key(KeyCode::Esc)),
            Some(Action::Cancel)
        );
        // `a` is not an answer to y/n, and `q` does not quit mid-question.
        assert_eq!(action(Mode::Confirm, ch('a')), None);
        assert_eq!(action(Mode::Confirm, ch('q')), None);
        assert_eq!(
            action(Mode::Permission, ch('y')),
            Some(Action::Answer(Answer::Yes))
        );
        assert_eq!(
            action(Mode::Permission, ch('a')),
            Some(Action::Answer(Answer::Always))
        );
        assert_eq!(
            action(Mode::Permission, ch('n')),
            Some(Action::Answer(Answer::No))
        );
        assert_eq!(action(Mode::Permission, ch('x')), None);
    }

    #[test]
    fn any_key_closes_the_help_and_key_releases_do_nothing() {
        assert_eq!(action(Mode::Help, ch('j')), Some(Action::Cancel));
        let mut release = ch('q');
        release.kind = KeyEventKind::Release;
        assert_eq!(action(Mode::Normal, release), None);
    }
}
