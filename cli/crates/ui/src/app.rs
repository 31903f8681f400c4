//! The event loop: keys (crossterm's EventStream), the link's Watch events,
//! the selected agent's Attach stream, finished actions, signals, and a
//! frame timer that draws only when something changed. One task owns all
//! the state; the streams and actions run on their own tasks and report
//! through channels, so nothing here waits on the daemon.

use std::time::{Duration, Instant};

use agentd_shared::proto as pb;
use crossterm::event::{Event, EventStream, KeyEvent};
use futures::StreamExt;
use ratatui::Terminal;
use ratatui::backend::Backend;
use tokio::sync::mpsc;
use tokio::time::MissedTickBehavior;

use super::actions::{self, Done, Request};
use super::attach::{AttachMsg, Attachment};
use super::bar::{Bar, Link};
use super::keys::{self, Action, Answer, Mode};
use super::link::LinkMsg;
use super::model::Model;
use super::output::Output;
use super::prompt::{Ask, Prompt};
use super::screen::{self, View};
use super::screen_guard;
use crate::autostart::Client;
use crate::exit::{FAILURE, INTERRUPTED, SUCCESS};
use crate::follow::{Signal, Signals};
use crate::permission_prompt::answer;

/// The shortest time between two frames (at most 40 a second).
pub const FRAME: Duration = Duration::from_millis(25);
/// The selection must rest this long before the output pane re-attaches,
/// so holding `j` does not open a stream per agent passed.
const SETTLE: Duration = Duration::from_millis(120);
/// How often costs are re-read while agents change.
const COSTS_EVERY: Duration = Duration::from_secs(5);

/// Why the loop returned.
pub enum Exit {
    Quit(u8),
    /// Enter: follow this agent full screen, then come back.
    Attach(Box<pb::Agent>),
}

/// Frame times, for `--bench-frames`.
#[derive(Debug, Default)]
pub struct Frames {
    pub wanted: usize,
    pub times: Vec<Duration>,
    pub events: u64,
}

pub struct App {
    pub model: Model,
    pub output: Output,
    pub bar: Bar,
    prompt: Option<Prompt>,
    help: bool,
    color: bool,
    client: Option<Client>,
    done_tx: mpsc::UnboundedSender<Done>,
    done_rx: mpsc::UnboundedReceiver<Done>,
    attach: Option<Attachment>,
    attach_tx: mpsc::Sender<(u64, AttachMsg)>,
    attach_rx: mpsc::Receiver<(u64, AttachMsg)>,
    generation: u64,
    moved_at: Instant,
    costs_due: bool,
    /// A fork just made, selected once Watch shows it.
    select_when_seen: Option<String>,
    clear_screen: bool,
}

impl App {
    pub fn new(color: bool) -> App {
        let (done_tx, done_rx) = mpsc::unbounded_channel();
        let (attach_tx, attach_rx) = mpsc::channel(1024);
        App {
            model: Model::default(),
            output: Output::default(),
            bar: Bar::default(),
            prompt: None,
            help: false,
            color,
            client: None,
            done_tx,
            done_rx,
            attach: None,
            attach_tx,
            attach_rx,
            generation: 0,
            moved_at: Instant::now(),
            costs_due: true,
            select_when_seen: None,
            clear_screen: false,
        }
    }

    pub fn client(&self) -> Option<Client> {
        self.client.clone()
    }

    /// Runs until quit, a signal, or Enter. `keys` is None without a
    /// keyboard (the bench); `frames` counts and times frames and ends
    /// the loop once it has as many as it wants.
    pub async fn run<B: Backend>(
        &mut self,
        tui: &mut Terminal<B>,
        link: &mut mpsc::Receiver<LinkMsg>,
        mut keys: Option<&mut EventStream>,
        signals: &mut Signals,
        mut frames: Option<&mut Frames>,
    ) -> Exit {
        let mut frame = tokio::time::interval(FRAME);
        frame.set_missed_tick_behavior(MissedTickBehavior::Skip);
        let mut clock = tokio::time::interval(Duration::from_secs(1));
        let mut costs = tokio::time::interval(COSTS_EVERY);
        self.model.dirty = true;
        loop {
            tokio::select! {
                k = next_event(&mut keys) => match k {
                    Some(Ok(Event::Key(key))) => {
                        if let Some(exit) = self.key(key) {
                            return exit;
                        }
                    }
                    Some(Ok(_)) => self.model.dirty = true,
                    // stdin closed or unreadable: nobody can press keys.
                    Some(Err(_)) | None => keys = None,
                },
                m = link.recv() => {
                    let Some(m) = m else { return Exit::Quit(FAILURE) };
                    let n = self.link_batch(m, link);
                    if let Some(f) = frames.as_deref_mut() {
                        f.events += n;
                    }
                }
                Some((generation, msg)) = self.attach_rx.recv() => self.attach_msg(generation, msg),
                Some(done) = self.done_rx.recv() => self.done(done),
                _ = frame.tick() => {
                    self.settle_selection();
                    if self.draw(tui, frames.as_deref_mut()) {
                        return Exit::Quit(SUCCESS);
                    }
                }
                // Ages move on.
                _ = clock.tick() => self.model.dirty = true,
                _ = costs.tick() => self.refresh_costs(),
                s = signals.next() => {
                    return Exit::Quit(match s {
                        Signal::TermOrHangup | Signal::Interrupt => INTERRUPTED,
                    });
                }
            }
        }
    }

    /// Draws a frame if anything changed; true when the bench has all the
    /// frames it wanted.
    fn draw<B: Backend>(&mut self, tui: &mut Terminal<B>, frames: Option<&mut Frames>) -> bool {
        if self.clear_screen {
            self.clear_screen = false;
            let _ = tui.clear();
            self.model.dirty = true;
        }
        if !self.model.dirty {
            return false;
        }
        let started = Instant::now();
        self.model.lines();
        self.model.dirty = false;
        let view = View {
            model: &self.model,
            output: &self.output,
            bar: &self.bar,
            prompt: self.prompt.as_ref(),
            help: self.help,
            color: self.color,
        };
        let _ = tui.draw(|f| screen::draw(f, &view));
        screen_guard::panic_on_purpose();
        match frames {
            Some(f) => {
                f.times.push(started.elapsed());
                f.times.len() >= f.wanted
            }
            None => false,
        }
    }

    /// Applies `first` and whatever else the link has queued (up to a
    /// bound, so keys and frames still get their turn); events applied.
    fn link_batch(&mut self, first: LinkMsg, link: &mut mpsc::Receiver<LinkMsg>) -> u64 {
        let mut n = 1;
        self.link_msg(first);
        while n < 512 {
            match link.try_recv() {
                Ok(m) => {
                    self.link_msg(m);
                    n += 1;
                }
                Err(_) => break,
            }
        }
        n
    }

    fn link_msg(&mut self, m: LinkMsg) {
        match m {
            LinkMsg::Connected(client, agents) => {
                let was_lost = self.bar.link == Link::Reconnecting;
                self.client = Some(client);
                self.bar.link = Link::Connected;
                if was_lost {
                    self.bar.say("reconnected to agentd");
                }
                self.model.replace_all(agents);
                self.model.lines();
                // Whatever was attached belonged to the old connection.
                self.attach = None;
                self.costs_due = true;
                self.refresh_costs();
            }
            LinkMsg::Event(e) => {
                if let Some(pb::watch_event::Event::Status(_)) = &e.event {
                    self.costs_due = true;
                }
                self.model.apply(&e);
                if self.select_when_seen.as_deref() == Some(e.agent_id.as_str()) {
                    self.select_when_seen = None;
                    self.model.select(&e.agent_id);
                }
            }
            LinkMsg::Lost(reason) => {
                self.client = None;
                self.attach = None;
                self.bar.link = Link::Reconnecting;
                self.bar.error(format!("lost agentd: {reason}"));
                self.model.dirty = true;
            }
        }
    }

    fn refresh_costs(&mut self) {
        if let (true, Some(c)) = (self.costs_due, &self.client) {
            self.costs_due = false;
            actions::spawn(c, Request::Costs, self.done_tx.clone());
        }
    }

    /// Re-attaches the output pane once the selection has rested on an
    /// agent other than the one shown.
    fn settle_selection(&mut self) {
        let Some(id) = self.model.selected_id().map(str::to_string) else {
            return;
        };
        if self.attach.as_ref().is_some_and(|a| a.id == id) || self.moved_at.elapsed() < SETTLE {
            return;
        }
        let Some(client) = &self.client else { return };
        let Some(agent) = self.model.row(&id).map(|r| r.agent.clone()) else {
            return;
        };
        self.generation += 1;
        self.attach = Some(Attachment::open(
            client,
            &agent,
            self.generation,
            self.attach_tx.clone(),
        ));
        self.output = Output::for_agent(Some(agent));
        self.model.dirty = true;
    }

    fn attach_msg(&mut self, generation: u64, msg: AttachMsg) {
        if generation != self.generation {
            return;
        }
        match msg {
            AttachMsg::Event(e) => {
                if let pb::attach_event::Event::Agent(a) = e.as_ref() {
                    self.model.update_agent(a.clone());
                }
                self.output.apply(*e);
            }
            AttachMsg::Ended(why) => {
                self.output
                    .apply(pb::attach_event::Event::Notice(pb::Notice {
                        text: format!("output stream ended: {why}"),
                        is_error: false,
                    }))
            }
        }
        self.model.dirty = true;
    }

    fn done(&mut self, done: Done) {
        self.model.dirty = true;
        match done {
            Done::Said(text) => self.bar.say(text),
            Done::Failed(text) => self.bar.error(text),
            Done::Diff { id, text } => {
                if self.output.agent_id() == Some(id.as_str()) {
                    self.output.diff = Some(text);
                    self.output.scroll = 0;
                }
            }
            Done::Checkpoints { id, text } => {
                if self.output.agent_id() == Some(id.as_str()) {
                    self.output.diff = Some(text);
                    self.output.scroll = 0;
                }
            }
            Done::RmPreview { id, short, holds } => {
                self.prompt = Some(Prompt::new(Ask::Rm { id, short, holds }));
            }
            Done::Removed { id, text } => {
                self.model.remove(&id);
                self.bar.say(text);
            }
            Done::Forked(a) => {
                self.bar
                    .say(format!("forked {} from its parent", a.short_id));
                self.select_when_seen = Some(a.id);
            }
            Done::Costs(costs) => self.model.set_costs(costs),
        }
    }

    fn request(&mut self, r: Request) {
        match &self.client {
            Some(c) => actions::spawn(c, r, self.done_tx.clone()),
            None => self.bar.error("not connected to agentd"),
        }
    }

    /// The key's action; Some when the loop must return.
    pub fn key(&mut self, key: KeyEvent) -> Option<Exit> {
        let mode = match (&self.prompt, self.help) {
            (_, true) => Mode::Help,
            (Some(p), _) => p.mode(),
            (None, _) => Mode::Normal,
        };
        let action = keys::action(mode, key)?;
        self.model.dirty = true;
        self.act(action)
    }

    /// Does one action; Some when the loop must return.
    pub fn act(&mut self, action: Action) -> Option<Exit> {
        let selected = self
            .model
            .selected()
            .map(|r| (r.agent.id.clone(), r.agent.short_id.clone()));
        match action {
            Action::Quit => return Some(Exit::Quit(SUCCESS)),
            Action::Move(d) => {
                self.model.move_selection(d);
                self.moved_at = Instant::now();
            }
            Action::Attach => {
                return self
                    .model
                    .selected()
                    .map(|r| Exit::Attach(Box::new(r.agent.clone())));
            }
            Action::Filter => self.prompt = Some(Prompt::filter(self.model.filter())),
            Action::ClearFilter => self.model.set_filter(""),
            Action::ToggleAll => {
                self.model.toggle_all();
                self.bar.say(if self.model.show_all() {
                    "showing all agents"
                } else {
                    "hiding agents that ended over a day ago"
                });
            }
            Action::Help => self.help = true,
            Action::Scroll(n) => {
                self.output.scroll = self.output.scroll.saturating_add_signed(n);
            }
            Action::Redraw => self.clear_screen = true,
            Action::Type(c) => {
                if let Some(p) = &mut self.prompt {
                    p.type_char(c);
                }
            }
            Action::Erase => {
                if let Some(p) = &mut self.prompt {
                    p.erase();
                }
            }
            Action::Submit => self.submit(),
            Action::Cancel => self.cancel(),
            Action::Answer(a) => self.answer(a),
            _ => {
                let Some((id, short)) = selected else {
                    self.bar.error("no agent selected");
                    return None;
                };
                self.on_agent(action, id, short);
            }
        }
        None
    }

    /// An action on the selected agent.
    fn on_agent(&mut self, action: Action, id: String, short: String) {
        match action {
            Action::Send => self.prompt = Some(Prompt::new(Ask::Send { id, short })),
            Action::Fork => self.prompt = Some(Prompt::new(Ask::Fork { id, short })),
            Action::Stop => self.prompt = Some(Prompt::new(Ask::Stop { id, short })),
            Action::Merge => self.prompt = Some(Prompt::new(Ask::Merge { id, short })),
            Action::Background => self.request(Request::Background(id)),
            Action::Interrupt => self.request(Request::Interrupt(id)),
            Action::Rm => {
                self.bar
                    .say(format!("{short}: looking at what its worktree holds…"));
                self.request(Request::RmPreview(id));
            }
            // Shown: d again goes back to the output.
            Action::Diff if self.output.diff.take().is_some() => {}
            Action::Diff => {
                self.bar.say(format!("{short}: reading its diff…"));
                self.request(Request::Diff(id));
            }
            // Shown in the diff's place: c again goes back to the output.
            Action::Checkpoints if self.output.diff.take().is_some() => {}
            Action::Checkpoints => {
                self.bar.say(format!("{short}: reading its checkpoints…"));
                self.request(Request::Checkpoints(id));
            }
            Action::Rewind => self.prompt = Some(Prompt::new(Ask::Rewind { id, short })),
            Action::Permission => self.permission(&id, &short),
            _ => {}
        }
    }

    /// `p`: the selected agent's open ask (or a descendant's, seen on its
    /// stream) is put to the user.
    fn permission(&mut self, id: &str, short: &str) {
        let attached = self.attach.as_ref().filter(|a| a.id == id);
        let ask = attached.and_then(|_| {
            let asks = &self.output.asks;
            asks.iter()
                .rev()
                .find(|a| a.agent_id == id)
                .or(asks.last())
                .cloned()
        });
        match ask {
            Some(request) => {
                self.prompt = Some(Prompt::new(Ask::Permission {
                    agent_id: id.to_string(),
                    request,
                }))
            }
            None => self.bar.say(format!("{short} has no open permission ask")),
        }
    }

    fn submit(&mut self) {
        let Some(p) = self.prompt.take() else { return };
        let text = p.text.trim().to_string();
        match p.ask {
            Ask::Filter => self.model.set_filter(&text),
            _ if text.is_empty() => self.bar.say("nothing typed; nothing sent"),
            Ask::Send { id, .. } => self.request(Request::Send { id, message: text }),
            Ask::Fork { id, .. } => self.request(Request::Fork {
                id,
                directive: text,
            }),
            Ask::Rewind { id, .. } => match rewind_of(&text) {
                Some((to, scope)) => self.request(Request::Rewind { id, to, scope }),
                None => self.bar.error(format!(
                    "not a turn: {text:?} (type N, \"N code\" or \"N conversation\")"
                )),
            },
            other => self.prompt = Some(Prompt { ask: other, text }),
        }
    }

    fn cancel(&mut self) {
        if self.help {
            self.help = false;
            return;
        }
        if let Some(p) = self.prompt.take()
            && p.ask == Ask::Filter
        {
            self.model.set_filter("");
        }
    }

    fn answer(&mut self, a: Answer) {
        let Some(p) = self.prompt.take() else { return };
        match p.ask {
            Ask::Stop { id, .. } => self.request(Request::Stop(id)),
            Ask::Merge { id, .. } => self.request(Request::Merge(id)),
            Ask::Rm { id, .. } => self.request(Request::Rm(id)),
            Ask::Permission { agent_id, request } => {
                use pb::permission_answer::Decision;
                let decision = match a {
                    Answer::Yes => Decision::AllowOnce,
                    Answer::Always => Decision::AllowAlways,
                    Answer::No => Decision::Deny,
                };
                let sent = self
                    .attach
                    .as_ref()
                    .filter(|att| att.id == agent_id)
                    .is_some_and(|att| {
                        att.answer(answer(&request.request_id, decision, String::new()))
                    });
                if sent {
                    self.output
                        .asks
                        .retain(|x| x.request_id != request.request_id);
                    self.bar
                        .say(format!("answered {}'s ask", request.agent_short_id));
                } else {
                    self.bar
                        .error("the agent's stream closed before the answer; press p again");
                }
            }
            _ => {}
        }
    }
}

/// What the rewind line asks for: a turn from 1 and, optionally, only
/// the code or only the conversation.
fn rewind_of(text: &str) -> Option<(u32, pb::RewindScope)> {
    let mut words = text.split_whitespace();
    let to: u32 = words.next()?.parse().ok().filter(|n| *n > 0)?;
    let scope = match words.next() {
        None => pb::RewindScope::Both,
        Some("code") => pb::RewindScope::Code,
        Some("conversation" | "conv") => pb::RewindScope::Conversation,
        Some(_) => return None,
    };
    words.next().is_none().then_some((to, scope))
}

async fn next_event(keys: &mut Option<&mut EventStream>) -> Option<std::io::Result<Event>> {
    match keys {
        Some(k) => k.next().await,
        None => std::future::pending().await,
    }
}
