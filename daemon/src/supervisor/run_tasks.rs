//! Turn loops as a whole: the slots that bound how many run at once (the
//! rest wait as `pending`, in order), the tasks they run as, the shutdown
//! that stops them — a named mechanism, as mini-redis has: cancelled once,
//! then every task is waited for — and the agents a full disk kept from
//! resuming at start.

use std::sync::{Arc, Mutex};

use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::domain::AgentId;
use agentd_shared::sync::Unpoisoned as _;

pub(super) struct Runs {
    /// Agents running at once; beyond it they wait as `pending`.
    slots: Arc<Semaphore>,
    /// What `slots` holds in all, so a reload can grow or shrink it.
    limit: Mutex<u32>,
    tasks: TaskTracker,
    shutdown: CancellationToken,
    /// Resumed once the store is writable again (`housekeeping`).
    resume_later: Mutex<Vec<AgentId>>,
}

impl Runs {
    pub(super) fn new(limit: u32) -> Runs {
        let limit = limit.max(1);
        Runs {
            slots: Arc::new(Semaphore::new(limit as usize)),
            limit: Mutex::new(limit),
            tasks: TaskTracker::new(),
            shutdown: CancellationToken::new(),
            resume_later: Mutex::new(Vec::new()),
        }
    }

    /// The slots a run takes one of before its loop starts.
    pub(super) fn slots(&self) -> Arc<Semaphore> {
        self.slots.clone()
    }

    /// Spawns work that shutdown waits for.
    pub(super) fn spawn<F>(&self, work: F)
    where
        F: std::future::Future<Output = ()> + Send + 'static,
    {
        self.tasks.spawn(work);
    }

    /// Cancelled when the daemon begins to shut down.
    pub(super) fn shutdown_token(&self) -> &CancellationToken {
        &self.shutdown
    }

    pub(super) fn shutting_down(&self) -> bool {
        self.shutdown.is_cancelled()
    }

    /// Shutdown, step one: no new work, everyone told.
    pub(super) fn begin_shutdown(&self) {
        self.shutdown.cancel();
        self.tasks.close();
    }

    /// Shutdown, step two: every task has ended.
    pub(super) async fn all_ended(&self) {
        self.tasks.wait().await;
    }

    /// Grows the slots at once; shrinks them as running agents end (the
    /// slots taken back wait in line like any agent).
    pub(super) fn resize(&self, limit: u32) {
        let limit = limit.max(1);
        let mut current = self.limit.locked();
        if limit > *current {
            self.slots.add_permits((limit - *current) as usize);
        } else if limit < *current {
            let excess = *current - limit;
            let forgotten = self.slots.forget_permits(excess as usize) as u32;
            let rest = excess - forgotten;
            if rest > 0 {
                let slots = self.slots.clone();
                self.tasks.spawn(async move {
                    if let Ok(permits) = slots.acquire_many_owned(rest).await {
                        permits.forget();
                    }
                });
            }
        }
        *current = limit;
    }

    /// `agent` resumes once the disk has room again.
    pub(super) fn resume_later(&self, agent: AgentId) {
        self.resume_later.locked().push(agent);
    }

    pub(super) fn resumes_later(&self, agent: AgentId) -> bool {
        self.resume_later.locked().contains(&agent)
    }

    /// The agents to resume now (and forgotten here).
    pub(super) fn take_resume_later(&self) -> Vec<AgentId> {
        std::mem::take(&mut *self.resume_later.locked())
    }
}
