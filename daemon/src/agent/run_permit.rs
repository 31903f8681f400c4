//! A running agent's run permit: agents beyond `max_running_agents` wait as
//! `pending` (DESIGN §3).
//!
//! A parent blocked on a foreground child lends its permit (sixteen parents
//! each waiting on a child would otherwise deadlock the limit): it gives its
//! permit back while it waits and acquires a new one afterwards. Nothing is
//! ever added to the semaphore, so a parent cancelled at any point of this —
//! while it waits, or while it queues to get a permit back — cannot leave the
//! limit raised: its permit is simply dropped with it.

use std::sync::{Arc, Mutex};

use agentd_shared::sync::Unpoisoned as _;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

pub struct RunPermit {
    slots: Arc<Semaphore>,
    permit: Mutex<Option<OwnedSemaphorePermit>>,
}

impl RunPermit {
    pub fn new(slots: Arc<Semaphore>) -> RunPermit {
        RunPermit {
            slots,
            permit: Mutex::new(None),
        }
    }

    fn permit(&self) -> std::sync::MutexGuard<'_, Option<OwnedSemaphorePermit>> {
        self.permit.locked()
    }

    /// Waits for a slot (in order of arrival) and holds it.
    pub async fn acquire(&self) {
        if let Ok(p) = self.slots.clone().acquire_owned().await {
            *self.permit() = Some(p);
        }
    }

    /// Gives the permit back for the duration of `wait`, then takes one again.
    pub async fn lend_while<T>(&self, wait: impl Future<Output = T>) -> T {
        drop(self.permit().take());
        let out = wait.await;
        self.acquire().await;
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn cancelling_a_lender_while_it_queues_never_raises_the_limit() {
        let slots = Arc::new(Semaphore::new(2));
        for _ in 0..20 {
            let lease = Arc::new(RunPermit::new(slots.clone()));
            lease.acquire().await;
            // Both slots taken by others while the lender waits on its child.
            let others = slots.clone().acquire_many_owned(1).await.unwrap();
            let l = lease.clone();
            let task = tokio::spawn(async move { l.lend_while(async {}).await });
            let blocker = slots.clone().acquire_owned().await.unwrap();
            tokio::task::yield_now().await;
            // The lender now queues for a slot; cancel it there.
            task.abort();
            let _ = task.await;
            drop(lease);
            drop(blocker);
            drop(others);
            assert_eq!(slots.available_permits(), 2);
        }
    }
}
