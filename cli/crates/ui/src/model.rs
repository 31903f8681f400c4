//! What the dashboard knows about the agents: every agent by id, read once
//! with ListAgents and then kept current by Watch events (never a relist
//! per event), the tree of visible lines in order, the filter, the
//! selection (kept by id across updates) and the marks. A `dirty` flag
//! says whether anything on screen changed since the last frame.

use std::cell::Cell;
use std::collections::{HashMap, HashSet};
use std::time::{Duration, SystemTime};

use agentd_shared::proto as pb;

use crate::view::render;

/// Ended agents older than this are hidden unless `a` (as `agentctl list`).
const HIDE_ENDED_AFTER: Duration = Duration::from_secs(24 * 3600);

/// One agent as the dashboard holds it.
#[derive(Debug, Clone, Default)]
pub struct Row {
    pub agent: pb::Agent,
    /// Open permission asks of this agent (their request ids).
    pub asks: HashSet<String>,
    /// A background agent that ended since the user last selected it.
    pub finished_unseen: bool,
    /// USD, from the daemon's usage report; None when unpriced or unknown.
    pub cost: Option<f64>,
}

impl Row {
    /// Waiting for a permission answer: an open ask seen on Watch, or the
    /// waiting status the listing reported.
    pub fn waits_for_permission(&self) -> bool {
        !self.asks.is_empty()
            || (self.agent.status == pb::AgentStatus::Waiting as i32
                && self.agent.waiting_for.starts_with("permission"))
    }
}

/// One visible line of the tree: the drawing before it and the agent's id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    pub prefix: String,
    pub id: String,
}

pub fn is_ended(status: i32) -> bool {
    matches!(
        pb::AgentStatus::try_from(status).unwrap_or_default(),
        pb::AgentStatus::Completed | pb::AgentStatus::Failed | pb::AgentStatus::Cancelled
    )
}

#[derive(Debug, Default)]
pub struct Model {
    rows: HashMap<String, Row>,
    lines: Vec<Line>,
    selected: Option<String>,
    /// Index of the selection when it was last seen, to land near it when
    /// it disappears (filtered out, removed).
    last_index: usize,
    filter: String,
    show_all: bool,
    /// The lines must be rebuilt (an agent came or went, the filter changed).
    structure_changed: bool,
    /// Something on screen changed since the last frame.
    pub dirty: bool,
    /// First tree line on screen; the tree widget keeps the selection in view.
    pub offset: Cell<usize>,
    /// Tree lines on screen as last drawn (0: not drawn yet, all count).
    pub shown: Cell<usize>,
    /// Each visible line's index by agent id, built with the lines.
    line_of: HashMap<String, usize>,
    now: Option<SystemTime>,
}

impl Model {
    /// Replaces everything with a listing (at start and after a reconnect);
    /// the selection, marks and costs of agents still there are kept.
    pub fn replace_all(&mut self, agents: Vec<pb::Agent>) {
        let mut old = std::mem::take(&mut self.rows);
        for agent in agents {
            let mut row = old.remove(&agent.id).unwrap_or_default();
            row.agent = agent;
            if row.agent.status != pb::AgentStatus::Waiting as i32 {
                row.asks.clear();
            }
            self.rows.insert(row.agent.id.clone(), row);
        }
        self.touch_structure();
    }

    /// Applies one Watch event.
    pub fn apply(&mut self, e: &pb::WatchEvent) {
        use pb::watch_event::Event;
        let Some(event) = &e.event else { return };
        if let Event::Created(a) = event {
            let row = self.rows.entry(a.id.clone()).or_default();
            row.agent = a.clone();
            self.touch_structure();
            return;
        }
        let selected = self.selected.as_deref() == Some(e.agent_id.as_str());
        let Some(row) = self.rows.get_mut(&e.agent_id) else {
            return;
        };
        if let Some(at) = &e.at {
            row.agent.updated_at = Some(*at);
        }
        match event {
            Event::Created(_) => {}
            Event::Status(s) => {
                let was_ended = is_ended(row.agent.status);
                row.agent.status = s.status;
                row.agent.turns = s.turns;
                row.agent.error = s.error.clone();
                row.agent.result = s.result.clone();
                row.agent.waiting_for = s.waiting_for.clone();
                if s.status != pb::AgentStatus::Waiting as i32 {
                    row.asks.clear();
                }
                if is_ended(s.status) && !was_ended && row.agent.background && !selected {
                    row.finished_unseen = true;
                }
            }
            Event::Plan(p) => row.agent.plan = p.items.clone(),
            Event::PermissionRequest(p) => {
                // The ask is the asking agent's, which may be a descendant.
                let asker = if p.agent_id.is_empty() {
                    &e.agent_id
                } else {
                    &p.agent_id
                };
                if let Some(row) = self.rows.get_mut(asker) {
                    if p.resolved {
                        row.asks.remove(&p.request_id);
                    } else {
                        row.asks.insert(p.request_id.clone());
                    }
                }
            }
            Event::Notification(_) => {}
        }
        // A change to a row off screen waits for the screen to reach it:
        // with a thousand agents streaming, redrawing for each would draw
        // at the frame cap for nothing.
        let asker = match event {
            Event::PermissionRequest(p) if !p.agent_id.is_empty() => p.agent_id.as_str(),
            _ => e.agent_id.as_str(),
        };
        if selected || self.on_screen(&e.agent_id) || self.on_screen(asker) {
            self.dirty = true;
        }
    }

    /// Whether `id`'s line is on screen (as last drawn).
    fn on_screen(&self, id: &str) -> bool {
        let shown = self.shown.get();
        if shown == 0 || self.structure_changed {
            return true;
        }
        let offset = self.offset.get();
        self.line_of
            .get(id)
            .is_some_and(|&i| i >= offset && i < offset + shown)
    }

    /// Replaces one agent's record (a fresh GetAgent or the Attach stream's
    /// first event); its marks stay.
    pub fn update_agent(&mut self, agent: pb::Agent) {
        if let Some(row) = self.rows.get_mut(&agent.id) {
            row.agent = agent;
            self.dirty = true;
        }
    }

    /// Costs by agent id from a usage report.
    pub fn set_costs(&mut self, costs: HashMap<String, f64>) {
        for (id, row) in &mut self.rows {
            let cost = costs.get(id).copied();
            if row.cost != cost {
                row.cost = cost;
                self.dirty = true;
            }
        }
    }

    pub fn remove(&mut self, id: &str) {
        if self.rows.remove(id).is_some() {
            self.touch_structure();
        }
    }

    fn touch_structure(&mut self) {
        self.structure_changed = true;
        self.dirty = true;
    }

    /// The clock age and hiding are measured against (tests pin it; None
    /// is the wall clock).
    #[cfg(test)]
    pub fn set_now(&mut self, now: Option<SystemTime>) {
        self.now = now;
        self.touch_structure();
    }

    pub fn now(&self) -> SystemTime {
        self.now.unwrap_or_else(SystemTime::now)
    }

    pub fn row(&self, id: &str) -> Option<&Row> {
        self.rows.get(id)
    }

    pub fn len(&self) -> usize {
        self.rows.len()
    }

    pub fn filter(&self) -> &str {
        &self.filter
    }

    pub fn show_all(&self) -> bool {
        self.show_all
    }

    pub fn set_filter(&mut self, filter: &str) {
        if self.filter != filter {
            self.filter = filter.to_string();
            self.touch_structure();
        }
    }

    pub fn toggle_all(&mut self) {
        self.show_all = !self.show_all;
        self.touch_structure();
    }

    /// The visible lines, rebuilt first if the structure changed.
    pub fn lines(&mut self) -> &[Line] {
        if self.structure_changed {
            self.rebuild();
        }
        &self.lines
    }

    /// The visible lines as last built (for drawing: `lines` rebuilds).
    pub fn built_lines(&self) -> &[Line] {
        &self.lines
    }

    pub fn selected(&self) -> Option<&Row> {
        self.selected.as_deref().and_then(|id| self.rows.get(id))
    }

    pub fn selected_id(&self) -> Option<&str> {
        self.selected.as_deref()
    }

    /// Index of the selection among the visible lines.
    pub fn selected_index(&self) -> Option<usize> {
        let id = self.selected.as_deref()?;
        self.lines.iter().position(|l| l.id == id)
    }

    /// Moves the selection by `delta` lines, stopping at the ends.
    pub fn move_selection(&mut self, delta: isize) {
        let count = self.lines().len();
        if count == 0 {
            return;
        }
        let at = self.selected_index().unwrap_or(self.last_index) as isize;
        let to = (at + delta).clamp(0, count as isize - 1) as usize;
        self.select_index(to);
    }

    fn select_index(&mut self, index: usize) {
        let id = self.lines[index].id.clone();
        self.last_index = index;
        if self.selected.as_deref() != Some(id.as_str()) {
            if let Some(row) = self.rows.get_mut(&id) {
                row.finished_unseen = false;
            }
            self.selected = Some(id);
        }
        self.dirty = true;
    }

    /// Selects an agent by id, if it is visible.
    pub fn select(&mut self, id: &str) {
        if let Some(i) = self.lines().iter().position(|l| l.id == id) {
            self.select_index(i);
        }
    }

    fn visible(&self, row: &Row, now: SystemTime) -> bool {
        if !self.show_all && is_ended(row.agent.status) {
            let at = render::system_time(row.agent.updated_at.as_ref());
            if now.duration_since(at).unwrap_or_default() > HIDE_ENDED_AFTER {
                return false;
            }
        }
        self.filter.is_empty() || matches(&row.agent, &self.filter.to_lowercase())
    }

    /// The tree of visible agents: roots oldest first, children under
    /// their parent oldest first; an agent whose parent is not visible is
    /// a root. Keeps the selection by id, or lands near where it was.
    fn rebuild(&mut self) {
        self.structure_changed = false;
        let now = self.now();
        let mut visible: Vec<&Row> = self
            .rows
            .values()
            .filter(|r| self.visible(r, now))
            .collect();
        visible.sort_by(|a, b| created_key(&a.agent).cmp(&created_key(&b.agent)));
        let ids: HashSet<&str> = visible.iter().map(|r| r.agent.id.as_str()).collect();
        let mut children: HashMap<&str, Vec<&str>> = HashMap::new();
        let mut roots = Vec::new();
        for r in &visible {
            let parent = r.agent.parent_id.as_str();
            if !parent.is_empty() && ids.contains(parent) {
                children.entry(parent).or_default().push(&r.agent.id);
            } else {
                roots.push(r.agent.id.as_str());
            }
        }
        let mut lines = Vec::with_capacity(visible.len());
        for root in roots {
            lines.push(Line {
                prefix: String::new(),
                id: root.to_string(),
            });
            descend(root, "", &children, &mut lines);
        }
        self.line_of = lines
            .iter()
            .enumerate()
            .map(|(i, l)| (l.id.clone(), i))
            .collect();
        self.lines = lines;
        match self.selected_index() {
            Some(i) => self.last_index = i,
            None if !self.lines.is_empty() => {
                let i = self.last_index.min(self.lines.len() - 1);
                self.select_index(i);
            }
            None => self.selected = None,
        }
    }
}

fn descend(parent: &str, indent: &str, children: &HashMap<&str, Vec<&str>>, out: &mut Vec<Line>) {
    let Some(kids) = children.get(parent) else {
        return;
    };
    for (i, kid) in kids.iter().enumerate() {
        let last = i + 1 == kids.len();
        out.push(Line {
            prefix: format!("{indent}{}", if last { "└─ " } else { "├─ " }),
            id: kid.to_string(),
        });
        let deeper = format!("{indent}{}", if last { "   " } else { "│  " });
        descend(kid, &deeper, children, out);
    }
}

/// Creation time, then id: a total order that does not move between frames.
fn created_key(a: &pb::Agent) -> (i64, i32, &str) {
    let t = a.created_at.unwrap_or_default();
    (t.seconds, t.nanos, a.id.as_str())
}

/// The filter matches a name, description or id (case-insensitive;
/// `needle` is lowercase).
fn matches(a: &pb::Agent, needle: &str) -> bool {
    a.name.to_lowercase().contains(needle)
        || a.description.to_lowercase().contains(needle)
        || a.id.starts_with(needle)
        || a.short_id.starts_with(needle)
}

#[cfg(test)]
#[path = "model_tests.rs"]
mod tests;
