//! How a run ends and what can stop it: the signals a run watches, the
//! end it reports, and why its work stopped short. Shared by both drivers.

use tokio_util::sync::CancellationToken;

use crate::domain::Status;
use crate::store::StoreError;

/// How a run of the loop ended.
#[derive(Debug, Clone, PartialEq)]
pub enum RunEnd {
    Completed(String),
    Failed(String),
    Cancelled,
    /// Stopped at a safe point because the daemon is shutting down.
    Interrupted,
    /// Stopped at a safe point on request; continuable.
    Paused,
    /// Stopped at once on request (the model call or tool in flight
    /// aborted, what happened recorded); continuable, as `Paused`.
    Halted,
    /// A run that produced no answer — it only compacted an idle agent,
    /// or found nothing to send — and goes back to this status: its
    /// outcome stays the one an earlier run produced, nobody is notified.
    Unchanged(Status),
    /// Stopped before a model request because its family's budget is
    /// spent (DESIGN §24): paused, and resumable only once the budget is
    /// raised. The reason says which budget.
    BudgetExhausted(String),
}

impl RunEnd {
    pub fn status(&self) -> Status {
        match self {
            RunEnd::Completed(_) => Status::Completed,
            RunEnd::Failed(_) => Status::Failed,
            RunEnd::Cancelled => Status::Cancelled,
            RunEnd::Interrupted => Status::Interrupted,
            RunEnd::Paused | RunEnd::Halted | RunEnd::BudgetExhausted(_) => Status::Paused,
            RunEnd::Unchanged(status) => *status,
        }
    }
}

/// What can stop a turn loop from outside.
#[derive(Debug, Clone)]
pub struct StopSignals {
    /// The agent is cancelled: stop at once.
    pub cancel: CancellationToken,
    /// Stop at once but stay continuable (an interrupt). A child of
    /// `cancel`, so it fires for both: what is in flight aborts on it, and
    /// `aborted` says which of the two it was.
    pub interrupt: CancellationToken,
    /// The daemon is shutting down: stop at the next safe point.
    pub shutdown: CancellationToken,
    /// The agent is paused: stop at the next safe point, continuable.
    pub pause: CancellationToken,
}

impl StopSignals {
    /// The signals of one run; `shutdown` is the daemon's.
    pub fn new(shutdown: CancellationToken) -> StopSignals {
        let cancel = CancellationToken::new();
        StopSignals {
            interrupt: cancel.child_token(),
            cancel,
            shutdown,
            pause: CancellationToken::new(),
        }
    }

    /// A safe point: returns why to stop, if anything asks.
    pub fn requested(&self) -> Option<RunEnd> {
        if self.interrupt.is_cancelled() {
            Some(self.aborted())
        } else if self.shutdown.is_cancelled() {
            Some(RunEnd::Interrupted)
        } else if self.pause.is_cancelled() {
            Some(RunEnd::Paused)
        } else {
            None
        }
    }

    /// Once `interrupt` has fired: a cancel or an interrupt.
    pub fn aborted(&self) -> RunEnd {
        if self.cancel.is_cancelled() {
            RunEnd::Cancelled
        } else {
            RunEnd::Halted
        }
    }

    /// Resolves when any stop is asked for.
    pub async fn any(&self) -> RunEnd {
        tokio::select! {
            biased;
            _ = self.interrupt.cancelled() => self.aborted(),
            _ = self.shutdown.cancelled() => RunEnd::Interrupted,
            _ = self.pause.cancelled() => RunEnd::Paused,
        }
    }
}

/// Why the loop's work stopped short.
pub enum Halt {
    /// Asked to stop (or the run cannot go on): this is how the run ends.
    Stop(RunEnd),
    /// The store failed in a way waiting for space cannot fix.
    Store(StoreError),
    /// The provider refused the request as longer than the model's
    /// context window: compact and send it again.
    Overflow(String),
}

impl From<StoreError> for Halt {
    fn from(e: StoreError) -> Halt {
        Halt::Store(e)
    }
}

pub(in crate::agent) fn halt_text(h: &Halt) -> String {
    match h {
        Halt::Stop(o) => format!("stopped ({})", o.status()),
        Halt::Store(e) => e.to_string(),
        Halt::Overflow(why) => why.clone(),
    }
}
