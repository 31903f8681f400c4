//! Following an agent in the terminal: the one loop behind a foreground
//! `run` and an interactive `attach` (DESIGN §12).
//!
//! With a terminal: Ctrl-B moves the agent to the background (a `run`
//! returns, printing its id; an `attach` keeps following), Ctrl-D detaches,
//! Ctrl-C asks, then cancels the agent and its subagents; permission asks
//! are answered in place with y (once), a (always) or n (deny, with an
//! optional reason). Every answer comes from the same key reader.
//!
//! Without a terminal there are no keys: Ctrl-C (SIGINT) leaves the agent
//! running and says how to find it again.

use agentd_shared::proto as pb;
use agentd_shared::visible;
use futures::StreamExt;
use pb::attach_request::Request;
use pb::permission_answer::Decision;
use tokio::sync::mpsc;

use crate::autostart::Client;
use crate::exit::{FAILURE, Failure, INTERRUPTED, SUCCESS};
use crate::keyboard::{Key, Keyboard};
use crate::permission_prompt::{answer, keys, question};
use crate::view::transcript::TranscriptView;
use crate::view::{plan, status};

/// Which command follows, which decides what ends the loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Follower {
    /// A foreground `run`: ends when the agent stops (exit 0 only if it
    /// completed) or is moved to the background (exit 0, its id on stdout).
    Run,
    /// `attach`: ends when the agent stops or the user detaches; a move to
    /// the background is only reported.
    Attach,
    /// `attach` from the dashboard (`agentctl ui`): as `Attach`, but an
    /// agent that stops is only reported, so the person reads what it did
    /// and goes back with Ctrl-D.
    Dashboard,
}

/// What the keys are doing.
enum Input {
    Normal,
    /// Ctrl-C was pressed: y cancels, anything else does not.
    ConfirmCancel,
    /// n was pressed for this ask: a reason is being typed.
    DenyReason(Box<pb::PermissionRequest>, String),
}

struct Session {
    follower: Follower,
    id: String,
    short: String,
    view: TranscriptView,
    /// Open permission asks, oldest first.
    asks: Vec<pb::PermissionRequest>,
    keys: Option<Keyboard>,
    input: Input,
    tx: mpsc::Sender<pb::AttachRequest>,
    /// The plan as the attachment started, shown once the history is
    /// through (the first status); later changes are shown as they come.
    initial_plan: Option<Vec<pb::PlanItem>>,
}

/// How a key or an event left the loop.
enum Next {
    Continue,
    Exit(u8),
}

/// Opens an attach stream at `from_seq` and follows the agent.
pub async fn follow(
    client: &mut Client,
    agent: &pb::Agent,
    from_seq: u64,
    follower: Follower,
) -> Result<u8, Failure> {
    // The request stream stays open for the life of the call (ending it
    // means "detach"); keys and answers go up through it.
    let (tx, mut events) = agentd_shared::attach::open(client, &agent.id, from_seq, 8).await?;
    let keys = Keyboard::start();
    let mut session = Session {
        follower,
        id: agent.id.clone(),
        short: agent.short_id.clone(),
        view: match follower {
            Follower::Run => TranscriptView::default(),
            Follower::Attach | Follower::Dashboard => TranscriptView::with_user_text(),
        },
        asks: Vec::new(),
        input: Input::Normal,
        tx,
        keys,
        initial_plan: None,
    };
    if session.keys.is_some() {
        eprintln!(
            "[{}: Ctrl-B background · Ctrl-D detach · Ctrl-C cancel]",
            session.short
        );
    }
    // Made once: a signal that arrives while an event is being handled
    // still ends the loop at its next turn.
    let mut signals = Signals::new(session.keys.is_none());
    loop {
        let next = tokio::select! {
            e = events.next() => match e {
                None => {
                    session.view.finish();
                    return Err(Failure::failed("the daemon closed the stream before the agent ended"));
                }
                Some(Err(status)) => return Err(status.into()),
                Some(Ok(pb::AttachEvent { event: Some(e) })) => session.event(e),
                Some(Ok(_)) => Next::Continue,
            },
            k = next_key(&mut session.keys) => match k {
                Some(key) => session.key(key, client).await?,
                // stdin closed: nobody can press keys any more.
                None => {
                    session.keys = None;
                    Next::Continue
                }
            },
            signal = signals.next() => match signal {
                Signal::TermOrHangup => {
                    session.view.finish();
                    drop(session.keys.take());
                    return Ok(INTERRUPTED);
                }
                Signal::Interrupt => {
                session.view.finish();
                let s = &session.short;
                eprintln!("agentctl: agent {s} keeps running; `agentctl attach {s}` follows it, `agentctl stop {s}` cancels it");
                Next::Exit(INTERRUPTED)
            }
            },
        };
        if let Next::Exit(code) = next {
            session.view.finish();
            return Ok(code);
        }
    }
}

async fn next_key(keys: &mut Option<Keyboard>) -> Option<Key> {
    match keys {
        Some(k) => k.next().await,
        None => std::future::pending().await,
    }
}

/// What the loop listens for besides events and keys (also `ui`'s loop).
pub enum Signal {
    /// SIGTERM or SIGHUP: agentctl is told to go (its terminal closed).
    TermOrHangup,
    /// SIGINT, when there is no keyboard to read Ctrl-C from.
    Interrupt,
}

pub struct Signals {
    term: Option<tokio::signal::unix::Signal>,
    hangup: Option<tokio::signal::unix::Signal>,
    interrupt: Option<tokio::signal::unix::Signal>,
}

impl Signals {
    pub fn new(listen_for_sigint: bool) -> Signals {
        use tokio::signal::unix::{SignalKind, signal};
        Signals {
            term: signal(SignalKind::terminate()).ok(),
            hangup: signal(SignalKind::hangup()).ok(),
            interrupt: listen_for_sigint
                .then(|| signal(SignalKind::interrupt()).ok())
                .flatten(),
        }
    }

    pub async fn next(&mut self) -> Signal {
        async fn recv(s: &mut Option<tokio::signal::unix::Signal>) {
            match s {
                Some(s) => {
                    s.recv().await;
                }
                None => std::future::pending().await,
            }
        }
        tokio::select! {
            _ = recv(&mut self.term) => Signal::TermOrHangup,
            _ = recv(&mut self.hangup) => Signal::TermOrHangup,
            _ = recv(&mut self.interrupt) => Signal::Interrupt,
        }
    }
}

impl Session {
    async fn send(&self, r: Request) {
        let _ = self.tx.send(agentd_shared::attach::request(r)).await;
    }

    /// A line of the daemon's or agentctl's, in brackets. What it quotes
    /// (an error, what an agent waits for) may be anyone's: it is shown
    /// made visible.
    fn note(&mut self, text: &str) {
        self.view.finish();
        eprintln!("[{}]", visible::text(text));
    }

    /// After an answer, the ask now on top (if any) is shown again.
    fn show_next_ask(&mut self) {
        if let Some(next) = self.asks.last() {
            let text = format!("{} — {}", question(next), keys(next));
            self.note(&text);
        }
    }

    fn event(&mut self, event: pb::attach_event::Event) -> Next {
        use pb::attach_event::Event;
        match event {
            Event::Agent(a) => self.initial_plan = Some(a.plan),
            Event::Tool(_) => {}
            Event::Connection(c) => {
                // A decision is shown as it is made; its end only when it
                // failed (the byte counts are in `agentctl network`).
                if c.ended_at.is_none() || !c.error.is_empty() {
                    self.note(&format!(
                        "network {}: {}",
                        c.agent_short_id,
                        crate::view::network::connection_line(&c)
                    ));
                }
            }
            Event::Plan(p) => {
                // Newer than the plan the attachment started with.
                self.initial_plan = None;
                self.plan(&p.items);
            }
            Event::Entry(e) => self.view.entry(&e),
            Event::Delta(d) => self.view.delta(&d),
            Event::Retry(r) => self.view.retry(&r),
            Event::Notice(n) => {
                let text = if n.is_error {
                    format!("error: {}", n.text)
                } else {
                    n.text
                };
                self.note(&text);
            }
            Event::PermissionRequest(p) => {
                self.asks.retain(|a| a.request_id != p.request_id);
                if !p.resolved {
                    let how = if self.keys.is_some() {
                        keys(&p)
                    } else {
                        format!(
                            "waiting for an answer: `agentctl attach {}` in a terminal",
                            p.agent_short_id
                        )
                    };
                    self.note(&format!("{} — {how}", question(&p)));
                    self.asks.push(p);
                }
            }
            Event::Released(_) => match self.follower {
                Follower::Run => {
                    self.view.finish();
                    let s = &self.short;
                    eprintln!(
                        "agent {s} moved to the background and keeps running; `agentctl attach {s}` or `agentctl wait {s}`"
                    );
                    println!("{}", self.id);
                    return Next::Exit(SUCCESS);
                }
                Follower::Attach | Follower::Dashboard => {
                    let s = self.short.clone();
                    self.note(&format!("{s} moved to the background"));
                }
            },
            Event::Status(s) => {
                if let Some(plan) = self.initial_plan.take()
                    && !plan.is_empty()
                {
                    self.plan(&plan);
                }
                return self.status(&s);
            }
        }
        Next::Continue
    }

    /// The plan, on stderr with the tool lines (stdout keeps only what
    /// the agent says).
    fn plan(&mut self, items: &[pb::PlanItem]) {
        self.view.finish();
        if items.is_empty() {
            eprintln!("[plan cleared]");
        } else {
            eprint!("{}", plan::block(items));
        }
    }

    fn status(&mut self, s: &pb::StatusChange) -> Next {
        let name = status::name(s.status);
        let status = pb::AgentStatus::try_from(s.status).unwrap_or_default();
        match status {
            pb::AgentStatus::Pending | pb::AgentStatus::Running => Next::Continue,
            pb::AgentStatus::Waiting => {
                if !s.waiting_for.is_empty() {
                    let text = format!("{} waiting for {}", self.short, s.waiting_for);
                    self.note(&text);
                }
                Next::Continue
            }
            _ => {
                let why = if s.error.is_empty() {
                    String::new()
                } else {
                    format!(": {}", s.error)
                };
                let completed = status == pb::AgentStatus::Completed;
                match self.follower {
                    Follower::Run if completed => Next::Exit(SUCCESS),
                    Follower::Run => {
                        self.view.finish();
                        eprintln!("agent {} {name}{}", self.short, visible::text(&why));
                        Next::Exit(FAILURE)
                    }
                    Follower::Attach => {
                        let text = format!("{} {name}{why}", self.short);
                        self.note(&text);
                        Next::Exit(SUCCESS)
                    }
                    Follower::Dashboard => {
                        let text = format!(
                            "{} {name}{why} — Ctrl-D returns to the dashboard",
                            self.short
                        );
                        self.note(&text);
                        Next::Continue
                    }
                }
            }
        }
    }

    /// A key, read as the keys' mode says: an answer to "cancel?", a
    /// letter of a deny reason, or a command.
    async fn key(&mut self, key: Key, client: &mut Client) -> Result<Next, Failure> {
        match std::mem::replace(&mut self.input, Input::Normal) {
            Input::ConfirmCancel => self.confirm_cancel(key, client).await,
            Input::DenyReason(ask, reason) => self.deny_reason_key(key, ask, reason, client).await,
            Input::Normal => self.command_key(key, client).await,
        }
    }

    /// The answer to "Cancel agent …? [y/N]".
    async fn confirm_cancel(&mut self, key: Key, client: &mut Client) -> Result<Next, Failure> {
        if key == Key::Char('y') || key == Key::Char('Y') {
            eprintln!("y");
            client
                .cancel_agent(pb::CancelAgentRequest {
                    id: self.id.clone(),
                })
                .await?;
        } else {
            eprintln!("n — the agent keeps running");
        }
        Ok(Next::Continue)
    }

    /// A key while the reason for denying `ask` is typed: Enter sends it,
    /// Esc leaves the ask unanswered.
    async fn deny_reason_key(
        &mut self,
        key: Key,
        ask: Box<pb::PermissionRequest>,
        mut reason: String,
        client: &mut Client,
    ) -> Result<Next, Failure> {
        match key {
            Key::Enter => {
                eprintln!();
                self.send_answer(&ask, Decision::Deny, reason).await;
                self.show_next_ask();
            }
            Key::Escape => eprintln!(" — not answered"),
            // Ctrl-C and Ctrl-D keep their meaning: the ask stays
            // open, and the key is handled as always.
            Key::Interrupt | Key::Detach => {
                eprintln!(" — not answered");
                self.asks.push(*ask);
                return self.command_key(key, client).await;
            }
            Key::Backspace => {
                if reason.pop().is_some() {
                    eprint!("\u{8} \u{8}");
                }
                self.input = Input::DenyReason(ask, reason);
            }
            Key::Char(c) => {
                eprint!("{c}");
                reason.push(c);
                self.input = Input::DenyReason(ask, reason);
            }
            _ => self.input = Input::DenyReason(ask, reason),
        }
        Ok(Next::Continue)
    }

    /// A key that commands: background, detach, cancel, interrupt, or an
    /// answer to the ask on screen.
    async fn command_key(&mut self, key: Key, client: &mut Client) -> Result<Next, Failure> {
        match key {
            Key::Background => self.send(Request::Background(pb::Background {})).await,
            Key::Detach => return Ok(self.detach().await),
            Key::Interrupt => {
                self.view.finish();
                eprint!("Cancel agent {} and its subagents? [y/N] ", self.short);
                self.input = Input::ConfirmCancel;
            }
            Key::Escape => self.interrupt(client),
            Key::Char(c @ ('y' | 'a' | 'n' | 'e' | 'r')) if !self.asks.is_empty() => {
                self.answer_ask(c).await
            }
            _ => {}
        }
        Ok(Next::Continue)
    }

    async fn detach(&mut self) -> Next {
        self.send(Request::Detach(pb::Detach {})).await;
        self.view.finish();
        let s = &self.short;
        eprintln!("detached from {s}; it keeps running (`agentctl attach {s}` to follow it again)");
        if self.follower == Follower::Run {
            println!("{}", self.id);
        }
        Next::Exit(SUCCESS)
    }

    /// Stops what runs now and leaves the agent paused; the events that
    /// follow show it stop.
    fn interrupt(&mut self, client: &Client) {
        self.view.finish();
        eprintln!("interrupting {} (send continues it)", self.short);
        let mut interrupting = client.clone();
        let id = self.id.clone();
        tokio::spawn(async move {
            if let Err(status) = interrupting
                .interrupt_agent(pb::InterruptAgentRequest { id })
                .await
            {
                eprintln!("agentctl: {}", visible::text(status.message()));
            }
        });
    }

    /// y, a or n for the newest ask, the one on screen; n asks why first.
    async fn answer_ask(&mut self, c: char) {
        let Some(ask) = self.asks.pop() else {
            return;
        };
        let decision = match c {
            'y' => Decision::AllowOnce,
            'a' => Decision::AllowAlways,
            'e' if ask.tool_name == crate::permission_prompt::NETWORK => Decision::AllowEveryAgent,
            'r' if !ask.remember_rules.is_empty() => {
                let answer = crate::permission_prompt::remembered(&ask.request_id);
                self.send(Request::PermissionAnswer(answer)).await;
                self.show_next_ask();
                return;
            }
            'r' => {
                // No rule can be written for it: it stays on screen.
                self.asks.push(ask);
                return;
            }
            'e' => {
                // Not an answer to a tool's ask: it stays on screen.
                self.asks.push(ask);
                return;
            }
            _ => {
                self.view.finish();
                eprint!("Deny: why (Enter to skip, Esc to leave unanswered)? ");
                self.input = Input::DenyReason(Box::new(ask), String::new());
                return;
            }
        };
        self.send_answer(&ask, decision, String::new()).await;
        self.show_next_ask();
    }

    async fn send_answer(&self, ask: &pb::PermissionRequest, decision: Decision, reason: String) {
        self.send(Request::PermissionAnswer(answer(
            &ask.request_id,
            decision,
            reason,
        )))
        .await;
    }
}
