//! The layout of one frame: the tree on the left, the selected agent's
//! output on the right, the bar at the bottom, the help over them when
//! asked for. Pure drawing from the state: the event loop, the widget
//! tests and the frame bench all draw through `draw`.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Widget};

use super::ask_box;
use super::bar::{self, Bar};
use super::keys::HELP;
use super::model::Model;
use super::output::{self, Output};
use super::prompt::{Ask, Prompt};
use super::tree;

/// Everything one frame shows.
pub struct View<'a> {
    pub model: &'a Model,
    pub output: &'a Output,
    pub bar: &'a Bar,
    pub prompt: Option<&'a Prompt>,
    pub help: bool,
    pub color: bool,
}

/// Draws one frame. The model's lines must be current (`Model::lines`).
pub fn draw(frame: &mut Frame, v: &View) {
    let area = frame.area();
    let [main, bottom] = Layout::vertical([Constraint::Min(1), Constraint::Length(2)]).areas(area);
    let tree_share = if main.width >= 120 { 55 } else { 60 };
    let [left, right] = Layout::horizontal([
        Constraint::Percentage(tree_share),
        Constraint::Percentage(100 - tree_share),
    ])
    .areas(main);
    let buf = frame.buffer_mut();
    tree::render(v.model, left, buf, v.color);
    let right = Rect::new(
        right.x + 1,
        right.y,
        right.width.saturating_sub(1),
        right.height,
    );
    output::render(v.output, right, buf, v.color);
    let cursor = bar::render(v.bar, v.prompt, bottom, buf, v.color);
    if let Some(Prompt {
        ask: Ask::Permission { request, .. },
        ..
    }) = v.prompt
    {
        ask_box::render(request, main, frame.buffer_mut());
    }
    if v.help {
        help(area, frame.buffer_mut());
    }
    if let Some(at) = cursor {
        frame.set_cursor_position(at);
    }
}

fn help(area: Rect, buf: &mut ratatui::buffer::Buffer) {
    let w = (HELP.lines().map(|l| l.chars().count()).max().unwrap_or(0) as u16 + 4).min(area.width);
    let h = (HELP.lines().count() as u16 + 2).min(area.height);
    let r = Rect::new(
        area.x + (area.width - w) / 2,
        area.y + (area.height - h) / 2,
        w,
        h,
    );
    Clear.render(r, buf);
    Paragraph::new(HELP)
        .block(
            Block::default()
                .borders(Borders::ALL)
                .title(" agentctl ui — any key closes ")
                .title_style(Style::default().add_modifier(Modifier::BOLD)),
        )
        .render(r, buf);
}

#[cfg(test)]
#[path = "widget_tests.rs"]
mod tests;
