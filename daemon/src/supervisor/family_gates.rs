//! The semaphores family limits are enforced with (DESIGN §24): one per
//! agent that holds a limit, per kind of limit, sized as the limit. A gate
//! lives as long as someone holds or waits on it (the registry keeps only
//! weak references), so a family that has ended leaves nothing behind.
//! A limit changed by a reload makes a new gate of the new size; permits
//! of the old one end with their runs.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use agentd_shared::sync::Unpoisoned as _;
use tokio::sync::Semaphore;

use crate::domain::AgentId;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) enum GateKind {
    /// Descendants running at once (`max_children`).
    Children,
    /// Model requests in flight at once (`max_concurrent_requests`).
    Requests,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct GateKey {
    holder: AgentId,
    kind: GateKind,
    size: u32,
}

/// Gates beyond which the registry sweeps out those nobody holds.
const SWEEP_AT: usize = 256;

#[derive(Default)]
pub(super) struct FamilyGates {
    gates: Mutex<HashMap<GateKey, Weak<Semaphore>>>,
}

impl FamilyGates {
    /// The gate of `holder`'s family for `kind`, of `size` permits.
    pub(super) fn gate(&self, holder: AgentId, kind: GateKind, size: u32) -> Arc<Semaphore> {
        let key = GateKey { holder, kind, size };
        let mut gates = self.gates.locked();
        if let Some(gate) = gates.get(&key).and_then(Weak::upgrade) {
            return gate;
        }
        if gates.len() >= SWEEP_AT {
            gates.retain(|_, g| g.strong_count() > 0);
        }
        let gate = Arc::new(Semaphore::new(size.max(1) as usize));
        gates.insert(key, Arc::downgrade(&gate));
        gate
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gate_is_shared_while_held_and_new_once_nobody_holds_it() {
        let gates = FamilyGates::default();
        let holder = AgentId::random();
        let a = gates.gate(holder, GateKind::Children, 2);
        let b = gates.gate(holder, GateKind::Children, 2);
        assert!(Arc::ptr_eq(&a, &b));
        assert!(!Arc::ptr_eq(&a, &gates.gate(holder, GateKind::Requests, 2)));
        let _p = a.clone().try_acquire_owned().unwrap();
        assert_eq!(b.available_permits(), 1);
        drop((a, b, _p));
        assert_eq!(
            gates
                .gate(holder, GateKind::Children, 2)
                .available_permits(),
            2
        );
    }
}
