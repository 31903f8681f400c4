//! The keyboard of an interactive terminal, for following an agent: keys
//! arrive one at a time, unechoed, and Ctrl-B, Ctrl-C and Ctrl-D arrive as
//! keys rather than as a signal or an end of file. Output processing stays
//! on, so what is printed meanwhile still lays out line by line.
//!
//! One thread reads the keys and one loop consumes them: a question (cancel
//! the agent? why deny?) is answered through the same keys, so nothing
//! else ever reads stdin behind the loop's back.

use std::io::{IsTerminal, Read};
use std::os::fd::AsFd;

use nix::sys::termios::{self, LocalFlags, SetArg, SpecialCharacterIndices, Termios};
use tokio::sync::mpsc;

/// A key, as the follow loop understands it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    /// Ctrl-B.
    Background,
    /// Ctrl-D.
    Detach,
    /// Ctrl-C.
    Interrupt,
    Escape,
    Enter,
    Backspace,
    Char(char),
}

/// Decodes what one read returned. An escape sequence (arrow keys and the
/// like: ESC then `[` or `O`) is skipped whole, and so is Alt+key (ESC then
/// a character): only a lone ESC is Escape, which interrupts the agent.
pub fn decode(bytes: &[u8]) -> Vec<Key> {
    let mut keys = Vec::new();
    let text = String::from_utf8_lossy(bytes);
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        let key = match c {
            '\u{2}' => Key::Background,
            '\u{4}' => Key::Detach,
            '\u{3}' => Key::Interrupt,
            '\u{1b}' => {
                match chars.peek() {
                    Some('[' | 'O') => {
                        chars.next();
                        // Parameters, then one final byte in @..~.
                        for c in chars.by_ref() {
                            if ('@'..='~').contains(&c) {
                                break;
                            }
                        }
                        continue;
                    }
                    // Alt+key.
                    Some(_) => {
                        chars.next();
                        continue;
                    }
                    None => Key::Escape,
                }
            }
            '\r' | '\n' => Key::Enter,
            '\u{7f}' | '\u{8}' => Key::Backspace,
            c if !c.is_control() => Key::Char(c),
            _ => continue,
        };
        keys.push(key);
    }
    keys
}

/// Keys from stdin while it is in key-at-a-time mode; the terminal's mode
/// is restored when this is dropped.
pub struct Keyboard {
    rx: mpsc::UnboundedReceiver<Key>,
    saved: Termios,
}

impl Keyboard {
    /// None when stdin is not a terminal, when this process is not in the
    /// terminal's foreground (`agentctl run … &`: changing the terminal
    /// would stop it with SIGTTOU, and the keys are not its to read), or
    /// when the terminal cannot be switched.
    pub fn start() -> Option<Keyboard> {
        let stdin = std::io::stdin();
        if !stdin.is_terminal() {
            return None;
        }
        let foreground = nix::unistd::tcgetpgrp(stdin.as_fd()).ok()?;
        if foreground != nix::unistd::getpgrp() {
            return None;
        }
        let saved = termios::tcgetattr(stdin.as_fd()).ok()?;
        let mut keys = saved.clone();
        keys.local_flags &=
            !(LocalFlags::ICANON | LocalFlags::ECHO | LocalFlags::ISIG | LocalFlags::IEXTEN);
        keys.control_chars[SpecialCharacterIndices::VMIN as usize] = 1;
        keys.control_chars[SpecialCharacterIndices::VTIME as usize] = 0;
        termios::tcsetattr(stdin.as_fd(), SetArg::TCSANOW, &keys).ok()?;
        let (tx, rx) = mpsc::unbounded_channel();
        std::thread::spawn(move || {
            let mut buf = [0u8; 64];
            loop {
                // Waits for a key a little at a time, so that once the
                // Keyboard is dropped the thread stops reading: a reader
                // left behind would take the next key from whoever reads
                // the terminal after (`ui` after a full-screen attach).
                if !key_ready() {
                    if tx.is_closed() {
                        return;
                    }
                    continue;
                }
                if tx.is_closed() {
                    return;
                }
                match std::io::stdin().lock().read(&mut buf) {
                    Ok(0) | Err(_) => return,
                    Ok(n) => {
                        for key in decode(&buf[..n]) {
                            if tx.send(key).is_err() {
                                return;
                            }
                        }
                    }
                }
            }
        });
        Some(Keyboard { rx, saved })
    }

    /// The next key; None when stdin closed.
    pub async fn next(&mut self) -> Option<Key> {
        self.rx.recv().await
    }
}

/// Whether stdin has input, waiting at most a tenth of a second.
fn key_ready() -> bool {
    use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
    let stdin = std::io::stdin();
    let mut fds = [PollFd::new(stdin.as_fd(), PollFlags::POLLIN)];
    matches!(poll(&mut fds, PollTimeout::from(100u8)), Ok(n) if n > 0)
}

impl Drop for Keyboard {
    fn drop(&mut self) {
        let _ = termios::tcsetattr(std::io::stdin().as_fd(), SetArg::TCSANOW, &self.saved);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_keys_text_and_escape_sequences_decode() {
        assert_eq!(
            decode(b"\x02\x04\x03y\r"),
            vec![
                Key::Background,
                Key::Detach,
                Key::Interrupt,
                Key::Char('y'),
                Key::Enter
            ]
        );
        // An arrow key is not an Escape.
        assert_eq!(decode(b"\x1b[A"), Vec::<Key>::new());
        assert_eq!(decode(b"\x1b"), vec![Key::Escape]);
        // Nor is Alt+x: only a lone ESC interrupts.
        assert_eq!(decode(b"\x1bx"), Vec::<Key>::new());
        assert_eq!(decode(b"a\x1b"), vec![Key::Char('a'), Key::Escape]);
        assert_eq!(
            decode("é\x7f".as_bytes()),
            vec![Key::Char('é'), Key::Backspace]
        );
    }
}
