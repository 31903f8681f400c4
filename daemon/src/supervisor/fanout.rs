//! Which forks launch together (`agent::fanout`): forks cut from the same
//! message of the same parent form one group until the first one's response
//! starts.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::agent::FanOutRole;
use crate::agent::fanout::{FanOut, Lead};
use crate::domain::{AgentId, ForkTurns};
use agentd_shared::sync::Unpoisoned as _;

#[derive(Default)]
pub(super) struct FanOuts {
    open: Mutex<HashMap<(AgentId, u64, ForkTurns), Arc<FanOut>>>,
}

impl FanOuts {
    /// The role of a new fork of `parent` cut after its message `seq`,
    /// keeping `turns` of it (forks keeping other turns share less): the
    /// first is the leader; siblings launched before its response starts
    /// follow it; later ones go alone (the cache entry exists by then).
    pub(super) fn join(&self, parent: AgentId, seq: u64, turns: ForkTurns) -> FanOutRole {
        let mut open = self.open.locked();
        open.retain(|_, group| !group.released());
        match open.get(&(parent, seq, turns)) {
            Some(group) => FanOutRole::Follower(group.clone()),
            None => {
                let group = FanOut::new();
                open.insert((parent, seq, turns), group.clone());
                FanOutRole::Leader(Lead::new(group))
            }
        }
    }
}
