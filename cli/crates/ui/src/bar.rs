//! The bottom of the screen: the prompt when one is open, otherwise what
//! the daemon last said (a notice, an error, "reconnecting"), then the
//! keys. Everything is cut to one line each, whatever it holds, so a long
//! or multi-line message never breaks the layout.

use ratatui::buffer::Buffer;
use ratatui::layout::{Position, Rect};
use ratatui::style::{Color, Modifier, Style};

use super::prompt::Prompt;
use super::tree::fit;

/// The keys line (the full map is behind `?`).
pub const KEYS: &str = "j/k move · Enter attach · s send · b bg · i interrupt · x stop · f fork · d diff · m merge · r rm · p permission · / filter · a all · ? help · q quit";

/// Whether the daemon is there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Link {
    #[default]
    Connected,
    /// The daemon went away; the dashboard retries by itself.
    Reconnecting,
}

#[derive(Debug, Default)]
pub struct Bar {
    /// The last thing said, and whether it is an error.
    pub message: Option<(String, bool)>,
    pub link: Link,
}

impl Bar {
    pub fn say(&mut self, text: impl Into<String>) {
        self.message = Some((text.into(), false));
    }

    pub fn error(&mut self, text: impl Into<String>) {
        self.message = Some((text.into(), true));
    }
}

/// One line of `text`: line breaks and tabs read as spaces; every other
/// control character (escapes, a lone CR, bidi overrides) is shown as a
/// visible stand-in, as everywhere else, so nothing a daemon or an agent
/// says can move the cursor.
pub fn one_line(text: &str) -> String {
    let spaced = text.replace("\r\n", " ").replace(['\n', '\t'], " ");
    agentd_shared::visible::line(&spaced).into_owned()
}

/// Draws the bar into its two lines; returns where the cursor goes when
/// a line is being typed.
pub fn render(
    bar: &Bar,
    prompt: Option<&Prompt>,
    area: Rect,
    buf: &mut Buffer,
    color: bool,
) -> Option<Position> {
    let width = area.width as usize;
    let paint = |c: Color| {
        if color {
            Style::default().fg(c)
        } else {
            Style::default()
        }
    };
    let (text, style) = if let Some(p) = prompt {
        (p.line(), Style::default().add_modifier(Modifier::BOLD))
    } else if bar.link == Link::Reconnecting {
        (
            "reconnecting to agentd…".to_string(),
            paint(Color::Yellow).add_modifier(Modifier::BOLD),
        )
    } else {
        match &bar.message {
            Some((m, true)) => (format!("error: {m}"), paint(Color::Red)),
            Some((m, false)) => (m.clone(), Style::default()),
            None => (String::new(), Style::default()),
        }
    };
    let text = one_line(&text);
    buf.set_string(area.x, area.y, fit(&text, width), style);
    if area.height > 1 {
        buf.set_string(
            area.x,
            area.y + 1,
            fit(KEYS, width),
            Style::default().add_modifier(Modifier::DIM),
        );
    }
    let at = prompt?.cursor()?.min(width.saturating_sub(1));
    Some(Position::new(area.x + at as u16, area.y))
}
