//! The left pane: every visible agent as one line of the tree — marks,
//! short id under its parent, name or description, type, status (in its
//! colour), age, turns, plan progress and cost. Only the lines on screen
//! are laid out, so a thousand agents cost what fifty do.

use std::time::SystemTime;

use agentd_shared::proto as pb;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Widget};

use super::model::{Model, Row};
use crate::view::{cost, plan, render, status};

/// Mark of an agent waiting for a permission answer.
pub const MARK_WAITING: &str = "?";
/// Mark of a background agent that ended since it was last selected.
pub const MARK_FINISHED: &str = "●";

/// Widths of the fixed columns (the name takes the rest).
const TYPE_W: usize = 12;
const STATUS_W: usize = 11;
const AGE_W: usize = 4;
const TURNS_W: usize = 5;
const PLAN_W: usize = 5;
const COST_W: usize = 8;

/// The colour of a status, or none without colour.
pub fn status_style(s: i32, color: bool) -> Style {
    if !color {
        return Style::default();
    }
    let fg = match pb::AgentStatus::try_from(s).unwrap_or_default() {
        pb::AgentStatus::Completed => Color::Green,
        pb::AgentStatus::Failed | pb::AgentStatus::Interrupted => Color::Red,
        pb::AgentStatus::Running | pb::AgentStatus::Pending => Color::Cyan,
        pb::AgentStatus::Waiting | pb::AgentStatus::Paused => Color::Yellow,
        _ => return Style::default(),
    };
    Style::default().fg(fg)
}

/// What kind of agent: its external executor, its subagent type ("fork"
/// for a fork), or "agent" for a client's own.
pub fn kind(a: &pb::Agent) -> &str {
    if !a.executor.is_empty() {
        &a.executor
    } else if !a.subagent_type.is_empty() {
        &a.subagent_type
    } else {
        "agent"
    }
}

/// `text` cut or padded to exactly `width` columns.
pub fn fit(text: &str, width: usize) -> String {
    let count = text.chars().count();
    if count <= width {
        format!("{text}{}", " ".repeat(width - count))
    } else if width == 0 {
        String::new()
    } else {
        let mut s: String = text.chars().take(width - 1).collect();
        s.push('…');
        s
    }
}

/// Right-aligned in `width` columns.
fn right(text: &str, width: usize) -> String {
    let count = text.chars().count();
    if count >= width {
        fit(text, width)
    } else {
        format!("{}{text}", " ".repeat(width - count))
    }
}

fn header(name_w: usize, id_w: usize) -> String {
    format!(
        "  {} {} {} {} {} {} {} {}",
        fit("ID", id_w),
        fit("NAME", name_w),
        fit("TYPE", TYPE_W),
        fit("STATUS", STATUS_W),
        right("AGE", AGE_W),
        right("TURNS", TURNS_W),
        right("PLAN", PLAN_W),
        right("COST", COST_W),
    )
}

fn row_line(
    prefix: &str,
    row: &Row,
    widths: (usize, usize),
    now: SystemTime,
    color: bool,
) -> Line<'static> {
    let (id_w, name_w) = widths;
    let a = &row.agent;
    let mark = if row.waits_for_permission() {
        MARK_WAITING
    } else if row.finished_unseen {
        MARK_FINISHED
    } else {
        " "
    };
    let mark_style = if color {
        Style::default()
            .fg(Color::Magenta)
            .add_modifier(Modifier::BOLD)
    } else {
        Style::default().add_modifier(Modifier::BOLD)
    };
    let name = if a.name.is_empty() {
        a.description.lines().next().unwrap_or_default()
    } else {
        &a.name
    };
    let age = render::age(render::system_time(a.created_at.as_ref()), now);
    let cost = row.cost.map(cost::usd).unwrap_or_else(|| "-".into());
    let plan = if a.plan.is_empty() {
        String::new()
    } else {
        plan::progress(&a.plan)
    };
    Line::from(vec![
        Span::styled(format!("{mark} "), mark_style),
        Span::raw(format!(
            "{} {} {} ",
            fit(&format!("{prefix}{}", a.short_id), id_w),
            fit(name, name_w),
            fit(kind(a), TYPE_W)
        )),
        Span::styled(
            fit(status::name(a.status), STATUS_W),
            status_style(a.status, color),
        ),
        Span::raw(format!(
            " {} {} {} {}",
            right(&age, AGE_W),
            right(&a.turns.to_string(), TURNS_W),
            right(&plan, PLAN_W),
            right(&cost, COST_W)
        )),
    ])
}

/// Draws the tree into `area`, scrolled so the selection is in view.
pub fn render(model: &Model, area: Rect, buf: &mut Buffer, color: bool) {
    let title = match (model.filter().is_empty(), model.show_all()) {
        (true, false) => format!(" agents ({}) ", model.built_lines().len()),
        (true, true) => format!(" agents ({}, all) ", model.built_lines().len()),
        (false, _) => format!(
            " agents ({}) filter: {} ",
            model.built_lines().len(),
            model.filter()
        ),
    };
    let block = Block::default().borders(Borders::RIGHT).title(title);
    let inner = block.inner(area);
    block.render(area, buf);
    if inner.height < 2 || inner.width < 20 {
        return;
    }
    let lines = model.built_lines();
    let fixed = 2 + TYPE_W + STATUS_W + AGE_W + TURNS_W + PLAN_W + COST_W + 8;
    let deepest = lines.iter().map(|l| l.prefix.chars().count()).max();
    let id_w = (deepest.unwrap_or(0) + 8).min(24);
    let name_w = (inner.width as usize).saturating_sub(fixed + id_w).max(4);
    buf.set_string(
        inner.x,
        inner.y,
        fit(&header(name_w, id_w), inner.width as usize),
        Style::default().add_modifier(Modifier::BOLD),
    );
    let height = inner.height as usize - 1;
    let selected = model.selected_index();
    let mut offset = model.offset.get();
    if let Some(s) = selected {
        if s < offset {
            offset = s;
        } else if s >= offset + height {
            offset = s + 1 - height;
        }
    }
    offset = offset.min(lines.len().saturating_sub(height));
    model.offset.set(offset);
    model.shown.set(height);
    let now = model.now();
    for (i, line) in lines.iter().enumerate().skip(offset).take(height) {
        let Some(row) = model.row(&line.id) else {
            continue;
        };
        let y = inner.y + 1 + (i - offset) as u16;
        let drawn = row_line(&line.prefix, row, (id_w, name_w), now, color);
        buf.set_line(inner.x, y, &drawn, inner.width);
        if Some(i) == selected {
            let r = Rect::new(inner.x, y, inner.width, 1);
            buf.set_style(r, Style::default().add_modifier(Modifier::REVERSED));
        }
    }
    if lines.is_empty() {
        let text = if model.filter().is_empty() {
            "no agents"
        } else {
            "no agent matches the filter (Esc on `/` clears it)"
        };
        buf.set_string(inner.x + 2, inner.y + 1, text, Style::default());
    }
}
