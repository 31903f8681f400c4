//! The foreground-to-background race (DESIGN §4), decided in one place.
//!
//! A foreground run has a waiter: a parent's `Agent` call blocked on the
//! result, or a client's `run` following it. Two things race to end the
//! wait: the agent finishing, and a release (`agentctl bg`, Ctrl-B, the
//! `Background` RPC, the auto-background timer). [`Foreground`] holds the
//! run's one background flag, and both sides take the same lock, so exactly
//! one wins: either the waiter gets the result, or it is released at once
//! and the parent hears of the end later through a task notification. The
//! agent itself is never disturbed by a release: no request is aborted or
//! re-sent.

use std::sync::Mutex;

use tokio::sync::oneshot;

use crate::domain::AgentRecord;
use agentd_shared::sync::Unpoisoned as _;

/// How a foreground waiter's wait ended.
#[derive(Debug)]
pub enum WaitEnd {
    /// The agent stopped (completed, failed, cancelled, paused, interrupted).
    Finished(Box<AgentRecord>),
    /// The agent was moved to the background and keeps running.
    Released,
}

enum State {
    /// Someone waits: a parent's `Agent` call (with its channel), or a
    /// client following the run (no channel).
    Foreground {
        waiter: Option<oneshot::Sender<WaitEnd>>,
    },
    /// Released during this run.
    Released,
    /// Nobody ever waited on this run.
    Background,
    /// The run ended.
    Ended,
}

/// The result of asking for a release.
#[derive(Debug, PartialEq, Eq)]
pub enum Release {
    /// The waiter is released; the agent runs on in the background.
    Released,
    /// Nothing to do: the run is in the background already.
    AlreadyBackground,
    /// Nothing to do: the run has ended.
    Ended,
}

/// Who learns how the run ended.
pub enum EndRoute {
    /// The foreground waiter: it gets the final record.
    Waiter(oneshot::Sender<WaitEnd>),
    /// Nobody waits: the parent, if any, gets a task notification.
    Notify,
    /// A client followed the run in the foreground: it sees the end on its
    /// stream; no notification (a client-started agent has no parent).
    Client,
}

pub struct Foreground {
    state: Mutex<State>,
}

impl Foreground {
    /// A run someone waits for (`waiter` for a parent's `Agent` call).
    pub fn waited(waiter: Option<oneshot::Sender<WaitEnd>>) -> Foreground {
        Foreground {
            state: Mutex::new(State::Foreground { waiter }),
        }
    }

    /// A run in the background from the start.
    pub fn background() -> Foreground {
        Foreground {
            state: Mutex::new(State::Background),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.locked()
    }

    /// The run's background flag, as the agent's record shows it.
    pub fn is_background(&self) -> bool {
        matches!(*self.state(), State::Released | State::Background)
    }

    /// Releases the waiter, if any still waits.
    pub fn release(&self) -> Release {
        let waiter = {
            let mut state = self.state();
            match &mut *state {
                State::Foreground { waiter } => {
                    let waiter = waiter.take();
                    *state = State::Released;
                    waiter
                }
                State::Released | State::Background => return Release::AlreadyBackground,
                State::Ended => return Release::Ended,
            }
        };
        if let Some(w) = waiter {
            let _ = w.send(WaitEnd::Released);
        }
        Release::Released
    }

    /// Ends the run: from now on a release finds nothing to release.
    pub fn end(&self) -> EndRoute {
        let mut state = self.state();
        match std::mem::replace(&mut *state, State::Ended) {
            State::Foreground { waiter: Some(w) } => EndRoute::Waiter(w),
            State::Foreground { waiter: None } => EndRoute::Client,
            State::Released | State::Background | State::Ended => EndRoute::Notify,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_release_and_an_end_never_both_win() {
        let (tx, mut rx) = oneshot::channel();
        let fg = Foreground::waited(Some(tx));
        assert!(!fg.is_background());
        assert_eq!(fg.release(), Release::Released);
        assert!(matches!(rx.try_recv(), Ok(WaitEnd::Released)));
        assert!(fg.is_background());
        assert_eq!(
            fg.release(),
            Release::AlreadyBackground,
            "a second release says so"
        );
        assert!(matches!(fg.end(), EndRoute::Notify));
        assert_eq!(fg.release(), Release::Ended);

        let (tx, _rx) = oneshot::channel();
        let fg = Foreground::waited(Some(tx));
        assert!(matches!(fg.end(), EndRoute::Waiter(_)));
        assert_eq!(fg.release(), Release::Ended);
        assert!(matches!(Foreground::background().end(), EndRoute::Notify));
        assert!(matches!(Foreground::waited(None).end(), EndRoute::Client));
    }
}
