//! A running agent's run permit: agents beyond `max_running_agents` wait as
//! `pending` (DESIGN §3), and so do descendants beyond a family's
//! `max_children` (§24). The permit is one slot of each: the family gates
//! of its ancestors, root first, then the daemon's — always in that order,
//! so no two runs can each hold what the other waits for.
//!
//! A parent blocked on a foreground child lends its permit (sixteen parents
//! each waiting on a child would otherwise deadlock the limit): it gives its
//! permit back while it waits and acquires a new one afterwards. Nothing is
//! ever added to a semaphore, so a parent cancelled at any point of this —
//! while it waits, or while it queues to get a permit back — cannot leave a
//! limit raised: what it holds is simply dropped with it.

use std::sync::{Arc, Mutex};

use agentd_shared::sync::Unpoisoned as _;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

pub struct RunPermit {
    /// Taken in this order.
    slots: Vec<Arc<Semaphore>>,
    permits: Mutex<Vec<OwnedSemaphorePermit>>,
}

impl RunPermit {
    pub fn new(slots: Vec<Arc<Semaphore>>) -> RunPermit {
        RunPermit {
            slots,
            permits: Mutex::new(Vec::new()),
        }
    }

    /// Waits for a slot of each (in order of arrival) and holds them. A
    /// caller that stops waiting holds none.
    pub async fn acquire(&self) {
        let taken = acquire_all(&self.slots).await;
        *self.permits.locked() = taken;
    }

    /// Gives the permit back for the duration of `wait`, then takes one again.
    pub async fn lend_while<T>(&self, wait: impl Future<Output = T>) -> T {
        drop(std::mem::take(&mut *self.permits.locked()));
        let out = wait.await;
        self.acquire().await;
        out
    }
}

/// One permit of each of `gates`, taken in order; dropped together.
pub async fn acquire_all(gates: &[Arc<Semaphore>]) -> Vec<OwnedSemaphorePermit> {
    let mut taken = Vec::with_capacity(gates.len());
    for gate in gates {
        if let Ok(p) = gate.clone().acquire_owned().await {
            taken.push(p);
        }
    }
    taken
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_family_gate_holds_back_a_second_run_and_a_lending_parent_lets_its_child_through() {
        use futures::FutureExt as _;
        let daemon = Arc::new(Semaphore::new(8));
        let family = Arc::new(Semaphore::new(1));
        let gates = || vec![family.clone(), daemon.clone()];
        let parent = RunPermit::new(gates());
        parent.acquire().await;
        let sibling = RunPermit::new(gates());
        assert!(
            sibling.acquire().now_or_never().is_none(),
            "the family's one slot is taken"
        );
        assert_eq!(daemon.available_permits(), 7, "nothing taken by a waiter");
        // A parent waiting on its child lends its slots: the child runs.
        let child = RunPermit::new(gates());
        parent
            .lend_while(async {
                child.acquire().await;
                assert_eq!(family.available_permits(), 0);
                drop(std::mem::take(&mut *child.permits.locked()));
            })
            .await;
        assert_eq!(family.available_permits(), 0, "the parent has it back");
        assert_eq!(daemon.available_permits(), 7);
    }

    #[tokio::test]
    async fn cancelling_a_lender_while_it_queues_never_raises_the_limit() {
        let slots = Arc::new(Semaphore::new(2));
        for _ in 0..20 {
            let lease = Arc::new(RunPermit::new(vec![slots.clone()]));
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
