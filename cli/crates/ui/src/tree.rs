//! The left pane: every visible agent as one line of the tree — marks,
//! short id under its parent, name or description, type, status (in its
//! colour), age, turns, plan progress and cost. Only the lines on screen
//! are laid out, so a thousand agents cost what fifty do.

use std::time::SystemTime;

use agentd_shared::proto as pb;
use agentd_shared::visible;
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
const BUDGET_W: usize = 6;

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

/// The columns a narrow tree can give up, the first given up first: the
/// id, name and status always stay, and the name keeps `NAME_MIN`
/// characters while anything else can go.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Col {
    /// Shown only while some agent in the tree has a budget.
    Budget,
    Turns,
    Cost,
    Plan,
    Age,
    Type,
}

const GIVE_UP: [Col; 6] = [
    Col::Budget,
    Col::Turns,
    Col::Cost,
    Col::Plan,
    Col::Age,
    Col::Type,
];
const NAME_MIN: usize = 16;

impl Col {
    fn width(self) -> usize {
        match self {
            Col::Budget => BUDGET_W,
            Col::Turns => TURNS_W,
            Col::Cost => COST_W,
            Col::Plan => PLAN_W,
            Col::Age => AGE_W,
            Col::Type => TYPE_W,
        }
    }
}

/// The tree's columns at one width.
#[derive(Clone, Debug)]
struct Columns {
    id_w: usize,
    name_w: usize,
    shown: Vec<Col>,
}

impl Columns {
    /// What fits in `width` with ids `id_w` wide (the budget column only
    /// when `budgets`).
    fn fit(width: usize, id_w: usize, budgets: bool) -> Columns {
        let mut shown = GIVE_UP.to_vec();
        if !budgets {
            shown.retain(|c| *c != Col::Budget);
        }
        let mut gone = GIVE_UP.iter();
        loop {
            // The mark, the spaces after the id and the name, a margin.
            let fixed = 2 + id_w + 2 + STATUS_W + 1;
            let optional: usize = shown.iter().map(|c| c.width() + 1).sum();
            let name_w = width.saturating_sub(fixed + optional);
            if name_w >= NAME_MIN || shown.is_empty() {
                return Columns {
                    id_w,
                    name_w: name_w.max(4),
                    shown,
                };
            }
            if let Some(c) = gone.next() {
                shown.retain(|s| s != c);
            }
        }
    }

    fn has(&self, c: Col) -> bool {
        self.shown.contains(&c)
    }

    /// The columns after the status, each with its leading space.
    fn tail(&self, age: &str, turns: &str, plan: &str, cost: &str, budget: &str) -> String {
        let mut out = String::new();
        for (col, text) in [
            (Col::Age, age),
            (Col::Turns, turns),
            (Col::Plan, plan),
            (Col::Cost, cost),
            (Col::Budget, budget),
        ] {
            if self.has(col) {
                out.push(' ');
                out.push_str(&right(text, col.width()));
            }
        }
        out
    }

    /// The type column with its trailing space, if shown.
    fn kind(&self, text: &str) -> String {
        if self.has(Col::Type) {
            format!("{} ", fit(text, TYPE_W))
        } else {
            String::new()
        }
    }
}

/// How much of its budget an agent's family has spent, the nearer cap of
/// USD and tokens: "37%"; "?" when it cannot be measured (the family is
/// stopped then).
fn budget_spent(b: &pb::AgentBudget) -> String {
    if !b.unmeasured.is_empty() {
        return "?".into();
    }
    let usd = (b.usd > 0.0).then(|| b.spent_usd / b.usd);
    let tokens = (b.tokens > 0).then(|| b.spent_tokens as f64 / b.tokens as f64);
    match usd.into_iter().chain(tokens).reduce(f64::max) {
        Some(share) => format!("{:.0}%", (share * 100.0).min(999.0)),
        None => String::new(),
    }
}

fn header(cols: &Columns) -> String {
    format!(
        "  {} {} {}{}{}",
        fit("ID", cols.id_w),
        fit("NAME", cols.name_w),
        cols.kind("TYPE"),
        fit("STATUS", STATUS_W),
        cols.tail("AGE", "TURNS", "PLAN", "COST", "BUDGET"),
    )
}

fn row_line(
    prefix: &str,
    row: &Row,
    cols: &Columns,
    now: SystemTime,
    color: bool,
) -> Line<'static> {
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
            "{} {} {}",
            fit(&format!("{prefix}{}", a.short_id), cols.id_w),
            // Names, descriptions and types are agents' and
            // repositories': made visible.
            fit(&visible::line(name), cols.name_w),
            cols.kind(&visible::line(kind(a)))
        )),
        Span::styled(
            fit(status::name(a.status), STATUS_W),
            status_style(a.status, color),
        ),
        Span::raw(cols.tail(
            &age,
            &a.turns.to_string(),
            &plan,
            &cost,
            &a.budget.as_ref().map(budget_spent).unwrap_or_default(),
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
    let deepest = lines.iter().map(|l| l.prefix.chars().count()).max();
    let id_w = (deepest.unwrap_or(0) + 8).min(24);
    let budgets = lines
        .iter()
        .any(|l| model.row(&l.id).is_some_and(|r| r.agent.budget.is_some()));
    let cols = Columns::fit(inner.width as usize, id_w, budgets);
    buf.set_string(
        inner.x,
        inner.y,
        fit(&header(&cols), inner.width as usize),
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
        let drawn = row_line(&line.prefix, row, &cols, now, color);
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
