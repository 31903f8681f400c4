//! The right pane: the selected agent's live output, built from its Attach
//! stream — text as it streams, thinking folded to one line, one line per
//! tool call with its outcome — above its plan and its worktree's state.
//! `d` swaps the output for the agent's diff. The buffer is bounded: the
//! oldest lines go first.

use std::collections::VecDeque;

use agentd_shared::proto as pb;
use agentd_shared::tool_summary::summarize;
use agentd_shared::visible;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Widget, Wrap};
use serde_json::Value;

use super::tree::status_style;
use crate::view::{plan, render, status, worktree};

/// Output lines kept per agent.
pub const MAX_LINES: usize = 2000;

/// How a tool call went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Running,
    Ok,
    Error,
}

/// One line of output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OutLine {
    Text(String),
    /// A thought, folded: its first words and its length.
    Thought(String, usize),
    Tool {
        id: String,
        name: String,
        summary: String,
        outcome: Outcome,
    },
    /// The user's message.
    User(String),
    /// Something the daemon said about the agent or the stream.
    Note(String),
}

/// The selected agent's output, as its Attach stream told it.
#[derive(Debug, Default)]
pub struct Output {
    pub agent: Option<pb::Agent>,
    lines: VecDeque<OutLine>,
    /// Text of the response in progress (deltas, not yet an entry).
    live_text: String,
    live_thinking: usize,
    /// Open permission asks of the agent, oldest first.
    pub asks: Vec<pb::PermissionRequest>,
    /// The diff, while it is shown instead of the output.
    pub diff: Option<String>,
    /// Lines scrolled back from the end (0: following).
    pub scroll: usize,
}

impl Output {
    /// An empty pane for `agent` (the selection changed).
    pub fn for_agent(agent: Option<pb::Agent>) -> Output {
        Output {
            agent,
            ..Default::default()
        }
    }

    pub fn agent_id(&self) -> Option<&str> {
        self.agent.as_ref().map(|a| a.id.as_str())
    }

    fn push(&mut self, line: OutLine) {
        if self.lines.len() == MAX_LINES {
            self.lines.pop_front();
        }
        self.lines.push_back(line);
    }

    fn push_text(&mut self, text: &str, user: bool) {
        for l in text.lines() {
            self.push(if user {
                OutLine::User(l.to_string())
            } else {
                OutLine::Text(l.to_string())
            });
        }
    }

    /// Applies one Attach event; returns the agent record when the event
    /// carried a new one (for the tree).
    pub fn apply(&mut self, event: pb::attach_event::Event) {
        use pb::attach_event::Event;
        match event {
            Event::Agent(a) => self.agent = Some(a),
            Event::Entry(e) => self.entry(&e),
            Event::Delta(d) => match d.delta {
                Some(pb::content_delta::Delta::Text(t)) => self.live_text.push_str(&t),
                Some(pb::content_delta::Delta::Thinking(t)) => self.live_thinking += t.len(),
                _ => {}
            },
            Event::Tool(t) => self.tool(&t),
            Event::Status(s) => {
                if let Some(a) = &mut self.agent {
                    a.status = s.status;
                    a.turns = s.turns;
                    a.waiting_for = s.waiting_for.clone();
                }
                if !s.error.is_empty() {
                    self.push(OutLine::Note(format!(
                        "{}: {}",
                        status::name(s.status),
                        s.error
                    )));
                }
            }
            Event::PermissionRequest(p) => {
                self.asks.retain(|a| a.request_id != p.request_id);
                if !p.resolved {
                    self.push(OutLine::Note(crate::permission_prompt::question(&p)));
                    self.asks.push(p);
                }
            }
            Event::Retry(r) => {
                self.live_text.clear();
                self.live_thinking = 0;
                self.push(OutLine::Note(format!(
                    "model call failed (attempt {}): {} — retrying",
                    r.attempt,
                    render::clip(&r.reason, 80)
                )));
            }
            Event::Released(_) => self.push(OutLine::Note("moved to the background".into())),
            Event::Connection(c) => {
                if c.ended_at.is_none() || !c.error.is_empty() {
                    self.push(OutLine::Note(format!(
                        "network: {}",
                        crate::view::network::connection_line(&c)
                    )));
                }
            }
            Event::Notice(n) => self.push(OutLine::Note(n.text)),
            Event::Plan(p) => {
                if let Some(a) = &mut self.agent {
                    a.plan = p.items;
                }
            }
        }
    }

    fn tool(&mut self, t: &pb::ToolActivity) {
        let finished = t.phase == pb::tool_activity::Phase::Finished as i32;
        let outcome = match (finished, t.is_error) {
            (false, _) => Outcome::Running,
            (true, false) => Outcome::Ok,
            (true, true) => Outcome::Error,
        };
        let known = self.lines.iter_mut().rev().find_map(|l| match l {
            OutLine::Tool { id, outcome: o, .. } if *id == t.tool_use_id => Some(o),
            _ => None,
        });
        match known {
            Some(o) => *o = outcome,
            None => {
                // The response's text so far comes before its tool calls.
                self.flush_live();
                self.push(OutLine::Tool {
                    id: t.tool_use_id.clone(),
                    name: t.name.clone(),
                    summary: t.summary.clone(),
                    outcome,
                });
            }
        }
    }

    /// Streamed text not yet in an entry becomes lines (a tool call starts).
    fn flush_live(&mut self) {
        let text = std::mem::take(&mut self.live_text);
        self.push_text(&text, false);
    }

    fn entry(&mut self, e: &pb::TranscriptEntry) {
        let blocks = match render::content(e) {
            Value::Array(blocks) => blocks,
            other => vec![other],
        };
        match pb::Role::try_from(e.role).unwrap_or_default() {
            pb::Role::Assistant => {
                // The entry replaces what streamed of it.
                self.live_text.clear();
                self.live_thinking = 0;
                for block in &blocks {
                    self.assistant_block(block);
                }
            }
            pb::Role::User => {
                for block in &blocks {
                    match block["type"].as_str() {
                        Some("tool_result") => self.tool_result(block),
                        Some("text") => self.push_text(block["text"].as_str().unwrap_or(""), true),
                        _ => {}
                    }
                }
            }
            pb::Role::System if e.compact_boundary.is_some() => {
                self.push(OutLine::Note("context compacted".into()))
            }
            pb::Role::System | pb::Role::Unspecified => {}
        }
    }

    fn assistant_block(&mut self, block: &Value) {
        match block["type"].as_str() {
            Some("text") => self.push_text(block["text"].as_str().unwrap_or(""), false),
            Some("thinking") => {
                let text = block["thinking"].as_str().unwrap_or("");
                let first = text.lines().next().unwrap_or("");
                self.push(OutLine::Thought(render::clip(first, 60), text.len()));
            }
            Some("tool_use") => {
                let id = block["id"].as_str().unwrap_or_default();
                let seen = self
                    .lines
                    .iter()
                    .any(|l| matches!(l, OutLine::Tool { id: i, .. } if i == id));
                if !seen {
                    let name = block["name"].as_str().unwrap_or("?").to_string();
                    self.push(OutLine::Tool {
                        id: id.to_string(),
                        summary: summarize(&name, &block["input"]),
                        name,
                        outcome: Outcome::Running,
                    });
                }
            }
            _ => {}
        }
    }

    fn tool_result(&mut self, block: &Value) {
        let id = block["tool_use_id"].as_str().unwrap_or_default();
        let is_error = block["is_error"].as_bool().unwrap_or(false);
        for l in self.lines.iter_mut().rev() {
            if let OutLine::Tool {
                id: i, outcome: o, ..
            } = l
                && i == id
            {
                *o = if is_error {
                    Outcome::Error
                } else {
                    Outcome::Ok
                };
                return;
            }
        }
    }
}

/// How many lines `drawn_lines` has in all.
fn drawn_count(out: &Output) -> usize {
    out.lines.len() + usize::from(out.live_thinking > 0) + out.live_text.lines().count()
}

/// The lines as drawn, with the live text and thought at the end: only
/// those in `range` are styled (a long output is not laid out whole for
/// the few lines a frame shows).
fn drawn_lines(out: &Output, color: bool, range: std::ops::Range<usize>) -> Vec<Line<'static>> {
    let dim = Style::default().add_modifier(Modifier::DIM);
    let paint = |c: Color| {
        if color {
            Style::default().fg(c)
        } else {
            Style::default()
        }
    };
    // Everything a line holds is an agent's, a tool's or a repository's:
    // made visible where it is drawn (ratatui drops C0 and C1 but would
    // draw a bidi override).
    let shown = |t: &str| visible::line(t).into_owned();
    let styled = |l: &OutLine| match l {
        OutLine::Text(t) => Line::raw(shown(t)),
        OutLine::User(t) => Line::styled(format!("> {}", shown(t)), paint(Color::Blue)),
        OutLine::Thought(first, len) => {
            Line::styled(format!("▸ thought ({len} chars): {}", shown(first)), dim)
        }
        OutLine::Note(t) => Line::styled(format!("[{}]", shown(t)), paint(Color::Yellow)),
        OutLine::Tool {
            name,
            summary,
            outcome,
            ..
        } => {
            let (mark, style) = match outcome {
                Outcome::Running => ("…", paint(Color::Cyan)),
                Outcome::Ok => ("✓", paint(Color::Green)),
                Outcome::Error => ("✗", paint(Color::Red)),
            };
            Line::from(vec![
                Span::styled(format!("{mark} "), style),
                Span::raw(format!("{}({})", shown(name), shown(summary))),
            ])
        }
    };
    let take = range.end.saturating_sub(range.start);
    let mut lines: Vec<Line> = out
        .lines
        .iter()
        .skip(range.start)
        .take(take)
        .map(styled)
        .collect();
    let mut live: Vec<Line> = Vec::new();
    if out.live_thinking > 0 {
        live.push(Line::styled(
            format!("▸ thinking… ({} chars)", out.live_thinking),
            dim,
        ));
    }
    live.extend(out.live_text.lines().map(|l| Line::raw(shown(l))));
    let live_from = range.start.saturating_sub(out.lines.len());
    let room = take - lines.len();
    lines.extend(live.into_iter().skip(live_from).take(room));
    lines
}

/// The header: id, status, model, worktree; then the plan.
fn head_lines(a: &pb::Agent, color: bool) -> Vec<Line<'static>> {
    let name = if a.name.is_empty() {
        &a.description
    } else {
        &a.name
    };
    let name = visible::line(name);
    let mut lines = vec![Line::from(vec![
        Span::styled(
            format!("{} ", visible::line(&a.short_id)),
            Style::default().add_modifier(Modifier::BOLD),
        ),
        Span::styled(
            status::name(a.status).to_string(),
            status_style(a.status, color),
        ),
        Span::raw(format!(
            " · {} · {}",
            visible::line(&a.model),
            render::clip(&name, 60)
        )),
    ])];
    if !a.waiting_for.is_empty() {
        lines.push(Line::raw(format!(
            "waiting for {}",
            visible::line(&a.waiting_for)
        )));
    }
    if let Some(w) = &a.worktree {
        lines.push(Line::raw(format!(
            "worktree {} ({} from {}): {}, {}",
            visible::line(&w.path),
            visible::line(&w.branch),
            visible::line(worktree::base_label(&w.base)),
            worktree::state_name(w.state),
            worktree::work_line(w.work.as_ref())
        )));
    }
    for l in plan::block(&a.plan).lines() {
        lines.push(Line::raw(l.to_string()));
    }
    lines
}

/// Draws the pane: header and plan on top, then the output (or the diff)
/// following its end unless scrolled back.
pub fn render(out: &Output, area: Rect, buf: &mut Buffer, color: bool) {
    let Some(agent) = &out.agent else {
        buf.set_string(area.x + 1, area.y, "no agent selected", Style::default());
        return;
    };
    let head = head_lines(agent, color);
    let head_h = (head.len() as u16).min(area.height / 2);
    let head_area = Rect::new(area.x, area.y, area.width, head_h);
    Paragraph::new(head).render(head_area, buf);
    if area.height <= head_h + 1 {
        return;
    }
    let rule_y = area.y + head_h;
    let title = if out.diff.is_some() {
        " diff (d: back to output) "
    } else {
        " output "
    };
    buf.set_string(
        area.x,
        rule_y,
        format!("──{title}{}", "─".repeat(area.width as usize))
            .chars()
            .take(area.width as usize)
            .collect::<String>(),
        Style::default().add_modifier(Modifier::DIM),
    );
    let body = Rect::new(area.x, rule_y + 1, area.width, area.height - head_h - 1);
    // Only the lines that can be on screen are laid out.
    let h = body.height as usize;
    let window = |total: usize| {
        let end = total.saturating_sub(out.scroll.min(total));
        end.saturating_sub(h)..end
    };
    let shown: Vec<Line> = match &out.diff {
        Some(diff) => {
            let lines = diff_lines(diff, color);
            let range = window(lines.len());
            lines
                .into_iter()
                .skip(range.start)
                .take(range.len())
                .collect()
        }
        None => drawn_lines(out, color, window(drawn_count(out))),
    };
    let para = Paragraph::new(shown).wrap(Wrap { trim: false });
    // Wrapped lines can overflow: keep the end (the newest) in view.
    let wrapped = para.line_count(body.width) as u16;
    para.scroll((wrapped.saturating_sub(body.height), 0))
        .render(body, buf);
}

fn diff_lines(diff: &str, color: bool) -> Vec<Line<'static>> {
    diff.lines()
        .map(|l| {
            let fg = match l.as_bytes().first() {
                Some(b'+') if !l.starts_with("+++") => Some(Color::Green),
                Some(b'-') if !l.starts_with("---") => Some(Color::Red),
                Some(b'@') => Some(Color::Cyan),
                _ => None,
            };
            let l = visible::line(l).into_owned();
            match fg {
                Some(c) if color => Line::styled(l, Style::default().fg(c)),
                _ => Line::raw(l),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(line: &Line<'_>) -> String {
        line.spans.iter().map(|s| s.content.as_ref()).collect()
    }

    #[test]
    fn only_the_lines_in_the_window_are_laid_out_live_text_last() {
        let mut out = Output::default();
        for i in 0..1500 {
            out.lines.push_back(OutLine::Text(format!("line {i}")));
        }
        out.live_text = "live one\nlive two".into();
        let total = drawn_count(&out);
        assert_eq!(total, 1502);
        let last: Vec<String> = drawn_lines(&out, false, total - 4..total)
            .iter()
            .map(text)
            .collect();
        assert_eq!(last, ["line 1498", "line 1499", "live one", "live two"]);
        let middle: Vec<String> = drawn_lines(&out, false, 10..12).iter().map(text).collect();
        assert_eq!(middle, ["line 10", "line 11"]);
        let tail: Vec<String> = drawn_lines(&out, false, total - 1..total)
            .iter()
            .map(text)
            .collect();
        assert_eq!(tail, ["live two"]);
    }
}
