//! The bridge's link to the daemon, and getting it back when the daemon
//! went away under an open editor (DESIGN §15: a restart is invisible to
//! the editor). Every request takes the link's current client; whoever
//! finds the daemon gone asks for a new one, and concurrent askers share
//! one reconnection.
//!
//! The wait is bounded: the daemon is looked for with a growing pause
//! (`Backoff`); for a grace period only a daemon someone else starts is
//! taken (a `daemon restart`, the service manager, a test), then the
//! bridge starts one itself as `agentctl` does (unless `--no-autostart`);
//! after the deadline it gives up with an error that says where it looked.
//! The wait is never silent: whoever listens (`Link::on_wait`, the bridge's
//! open sessions) is told that agentd is being waited for and why — once
//! when the wait starts, again when the reason changes (a socket someone
//! else holds, say) — and when it is back.

use std::time::Duration;

use tokio::sync::Mutex as AsyncMutex;

use crate::autostart::{Client, Target};
use crate::backoff::Pauses;
use agentd_shared::sync::Unpoisoned as _;

/// When to look for the daemon again, and when to start one or give up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Backoff {
    /// The pauses between attempts.
    pub pauses: Pauses,
    /// A daemon someone else starts is waited for this long before the
    /// bridge starts one (an autostart racing a restart would take the
    /// socket from the daemon being restarted).
    pub autostart_after: Duration,
    /// No daemon after this long: the bridge gives up.
    pub give_up_after: Duration,
}

/// What to do at one attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Attempt {
    /// Take a daemon only if one answers.
    Look,
    /// Start one if none answers (as `agentctl` does).
    Start,
    /// Out of time.
    GiveUp,
}

impl Backoff {
    pub const DAEMON: Backoff = Backoff {
        pauses: Pauses {
            first: Duration::from_millis(50),
            longest: Duration::from_secs(1),
        },
        autostart_after: Duration::from_secs(5),
        give_up_after: Duration::from_secs(60),
    };

    /// The pause after attempt `n` (from 0).
    pub fn pause(&self, n: u32) -> Duration {
        self.pauses.pause(n)
    }

    /// What to do once `elapsed` has passed since the daemon was lost.
    pub fn attempt(&self, elapsed: Duration, autostart: bool) -> Attempt {
        if elapsed >= self.give_up_after {
            Attempt::GiveUp
        } else if autostart && elapsed >= self.autostart_after {
            Attempt::Start
        } else {
            Attempt::Look
        }
    }
}

/// The daemon could not be reached again.
#[derive(Debug)]
pub struct Unreachable(pub String);

/// Told what a reconnection is waiting for, and when it is over.
pub type WaitNotice = Box<dyn Fn(&str) + Send + Sync>;

pub struct Link {
    target: Target,
    on_wait: std::sync::OnceLock<WaitNotice>,
    /// The client requests use, and how many times it was replaced.
    current: std::sync::Mutex<(u64, Client)>,
    /// Held while a reconnection runs: one at a time.
    reconnecting: AsyncMutex<()>,
    backoff: Backoff,
}

impl Link {
    pub fn new(target: Target, client: Client) -> Link {
        Link {
            target,
            on_wait: std::sync::OnceLock::new(),
            current: std::sync::Mutex::new((0, client)),
            reconnecting: AsyncMutex::new(()),
            backoff: Backoff::DAEMON,
        }
    }

    #[cfg(test)]
    fn with_backoff(target: Target, client: Client, backoff: Backoff) -> Link {
        Link {
            backoff,
            ..Link::new(target, client)
        }
    }

    /// Who is told while a reconnection waits (set once).
    pub fn on_wait(&self, notice: WaitNotice) {
        let _ = self.on_wait.set(notice);
    }

    fn tell(&self, text: &str) {
        tracing::warn!("{text}");
        if let Some(notice) = self.on_wait.get() {
            notice(text);
        }
    }

    /// The client to use now.
    pub fn client(&self) -> Client {
        self.current.locked().1.clone()
    }

    /// Which client `client()` gives: pass it to `reconnect` after using it
    /// failed.
    pub fn generation(&self) -> u64 {
        self.current.locked().0
    }

    /// A client of the daemon as it is now, once the one of generation
    /// `failed` stopped working: the one another caller already got, or a
    /// new connection (waited for, see the module doc).
    pub async fn reconnect(&self, failed: u64) -> Result<Client, Unreachable> {
        let _one = self.reconnecting.lock().await;
        if self.generation() != failed {
            return Ok(self.client());
        }
        let since = tokio::time::Instant::now();
        let mut last = String::from("nothing answered");
        // What the listener was last told, to say it again only on a change.
        let mut told = String::new();
        for n in 0u32.. {
            let found = match self
                .backoff
                .attempt(since.elapsed(), self.target.autostarts())
            {
                Attempt::GiveUp => break,
                Attempt::Look => self.target.running_client().await,
                Attempt::Start => self.target.client().await.map(Some),
            };
            match found {
                Ok(Some(client)) => {
                    let mut current = self.current.locked();
                    *current = (current.0 + 1, client.clone());
                    tracing::info!(after = ?since.elapsed(), "reconnected to agentd");
                    if !told.is_empty() {
                        self.tell("agentd is back; going on");
                    }
                    return Ok(client);
                }
                Ok(None) => last = String::from("nothing answered"),
                Err(e) => last = e.message,
            }
            let waiting = format!(
                "waiting for agentd on {} ({}); giving up after {}s",
                self.target.socket.display(),
                last.chars().take(300).collect::<String>(),
                self.backoff.give_up_after.as_secs()
            );
            if waiting != told {
                self.tell(&waiting);
                told = waiting;
            }
            tokio::time::sleep(self.backoff.pause(n)).await;
        }
        Err(Unreachable(format!(
            "agentd went away and did not come back on {} within {}s ({}); start it (`agentd`, or any agentctl command) and load the session again",
            self.target.socket.display(),
            self.backoff.give_up_after.as_secs(),
            last.chars().take(300).collect::<String>(),
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A link whose client goes nowhere, to a socket nothing listens on.
    fn nowhere(dir: &std::path::Path) -> Link {
        let channel = tonic::transport::Endpoint::from_static("http://[::1]:1").connect_lazy();
        let target = Target::new(
            Some(&dir.join("agentd.sock")),
            Some(&dir.join("data")),
            false,
        );
        let quick = Backoff {
            pauses: Pauses {
                first: Duration::from_millis(5),
                longest: Duration::from_millis(20),
            },
            autostart_after: Duration::from_secs(1),
            give_up_after: Duration::from_millis(150),
        };
        Link::with_backoff(target, Client::new(channel), quick)
    }

    #[tokio::test]
    async fn a_daemon_that_does_not_come_back_is_given_up_on_with_where_it_was_looked_for() {
        let dir = tempfile::tempdir().unwrap();
        let link = nowhere(dir.path());
        let told = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
        let to = told.clone();
        link.on_wait(Box::new(move |t| to.lock().unwrap().push(t.to_string())));
        let started = std::time::Instant::now();
        let Err(Unreachable(why)) = link.reconnect(link.generation()).await else {
            panic!("nothing listens there");
        };
        // The wait was said, once for its one reason, with where it looks.
        let told = told.lock().unwrap().clone();
        assert_eq!(told.len(), 1, "{told:?}");
        assert!(told[0].starts_with("waiting for agentd on "), "{told:?}");
        assert!(told[0].contains("agentd.sock"), "{told:?}");
        assert!(started.elapsed() < Duration::from_secs(5));
        assert!(why.contains("agentd.sock"), "{why}");
        assert!(why.contains("did not come back"), "{why}");
        // No daemon was started beside it (--no-autostart).
        assert!(!dir.path().join("data/agentd.log").exists());
        assert_eq!(link.generation(), 0);
    }

    #[tokio::test]
    async fn a_reconnection_someone_else_made_is_shared() {
        let dir = tempfile::tempdir().unwrap();
        let link = nowhere(dir.path());
        // The caller's client is not the current one any more: it gets
        // the current one at once, without looking for the daemon.
        let started = std::time::Instant::now();
        assert!(link.reconnect(link.generation() + 1).await.is_ok());
        assert!(started.elapsed() < Duration::from_millis(100));
    }

    #[test]
    fn a_restarted_daemon_is_waited_for_before_one_is_started_and_the_wait_ends() {
        let b = Backoff::DAEMON;
        let s = Duration::from_secs;
        assert_eq!(b.attempt(s(0), true), Attempt::Look);
        assert_eq!(b.attempt(s(4), true), Attempt::Look);
        assert_eq!(b.attempt(s(5), true), Attempt::Start);
        assert_eq!(b.attempt(s(59), true), Attempt::Start);
        assert_eq!(b.attempt(s(60), true), Attempt::GiveUp);
        // --no-autostart: only looked for, until the deadline.
        assert_eq!(b.attempt(s(30), false), Attempt::Look);
        assert_eq!(b.attempt(s(61), false), Attempt::GiveUp);
        // The attempts until giving up are bounded: the pauses add up.
        let mut elapsed = Duration::ZERO;
        let mut n = 0;
        while b.attempt(elapsed, true) != Attempt::GiveUp {
            elapsed += b.pause(n);
            n += 1;
        }
        assert!(n < 80, "{n} attempts");
    }
}
