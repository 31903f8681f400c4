//! Taking the terminal and giving it back: raw mode and the alternate
//! screen while the dashboard runs, and the terminal as it was on every way
//! out — a normal quit (the guard's drop), a panic (a hook that restores
//! before the panic message prints), SIGTERM and SIGHUP (the event loop
//! ends and the guard drops).

use std::io::{Stdout, Write};
use std::sync::Once;
use std::sync::atomic::{AtomicBool, Ordering};

use crossterm::cursor::{Hide, Show};
use crossterm::execute;
use crossterm::terminal::{
    Clear, ClearType, EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
};
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;

pub type Tui = Terminal<CrosstermBackend<Stdout>>;

static PANIC_HOOK: Once = Once::new();
/// Whether the dashboard holds the terminal (raw mode, alternate screen).
static TAKEN: AtomicBool = AtomicBool::new(false);

/// Restores the terminal before the default hook prints, so a panic's
/// message lands on a normal screen and the shell is usable after it.
fn install_panic_hook() {
    PANIC_HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore();
            previous(info);
        }));
    });
}

/// In a debug build with `AGENTCTL_UI_TEST_PANIC` set, panics (after the
/// first frame): the end-to-end test of the panic hook. Nothing in a
/// release build.
pub fn panic_on_purpose() {
    #[cfg(debug_assertions)]
    if std::env::var_os("AGENTCTL_UI_TEST_PANIC").is_some() {
        panic!("AGENTCTL_UI_TEST_PANIC is set: a panic on purpose");
    }
}

/// Raw mode, the alternate screen, the cursor hidden.
pub fn take() -> std::io::Result<()> {
    install_panic_hook();
    enable_raw_mode()?;
    TAKEN.store(true, Ordering::SeqCst);
    let mut out = std::io::stdout();
    if let Err(e) = execute!(out, EnterAlternateScreen, Hide) {
        restore();
        return Err(e);
    }
    Ok(())
}

/// The terminal as it was; only the first call after `take` acts. (Leaving
/// the alternate screen twice would move the cursor back to where it was
/// when the dashboard started, and what prints next — a panic's message,
/// the shell's prompt — would overwrite what printed since.)
pub fn restore() {
    if !TAKEN.swap(false, Ordering::SeqCst) {
        return;
    }
    let _ = disable_raw_mode();
    let mut out = std::io::stdout();
    let _ = execute!(out, LeaveAlternateScreen, Show);
    let _ = out.flush();
}

/// Owns the terminal while the dashboard runs; dropping it gives it back.
pub struct Guard {
    pub tui: Tui,
}

impl Guard {
    pub fn new() -> std::io::Result<Guard> {
        take()?;
        match Terminal::new(CrosstermBackend::new(std::io::stdout())) {
            Ok(tui) => Ok(Guard { tui }),
            Err(e) => {
                restore();
                Err(e)
            }
        }
    }

    /// Gives the terminal back for a while (a full-screen attach).
    pub fn suspend(&mut self) {
        restore();
    }

    /// Takes it again and draws everything anew: a cleared screen and a
    /// new Terminal, whose first frame draws every cell. (Not
    /// `Terminal::clear`, which asks the terminal where its cursor is, and
    /// whose answer did not arrive after a full-screen attach in tmux.)
    pub fn resume(&mut self) -> std::io::Result<()> {
        take()?;
        execute!(std::io::stdout(), Clear(ClearType::All))?;
        self.tui = Terminal::new(CrosstermBackend::new(std::io::stdout()))?;
        Ok(())
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        restore();
    }
}
