//! What the torture run's clients were told: the entries attached clients
//! were shown and the messages the daemon acknowledged. The checks hold the
//! daemon to it after every restart.

use agentd_shared::sync::Unpoisoned as _;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};

/// An entry as a client saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shown {
    pub role: i32,
    pub content: Vec<u8>,
}

/// A message sent to an agent.
#[derive(Clone, Debug)]
pub struct Sent {
    pub agent: String,
    /// Unique text the message carries (`nonce-N`).
    pub nonce: String,
    /// `None`: the daemon answered OK, so the message is durable; else the
    /// status it (or the transport) answered with.
    pub refused: Option<tonic::Code>,
}

/// A pause the daemon acknowledged.
#[derive(Clone, Copy, Debug)]
pub struct Paused {
    /// The transcript's length in the answer.
    pub at: u64,
    /// How many messages had been sent (to any agent) by then: those sent
    /// later may revive it.
    pub sent_before: usize,
}

#[derive(Default)]
pub struct Ledger {
    /// Agent id → seq → the entry a client was shown.
    pub shown: HashMap<String, BTreeMap<u64, Shown>>,
    pub sent: Vec<Sent>,
    /// Agents the workload created (children are found through the list).
    pub created: Vec<String>,
    /// Those of them whose answers are long (for clients that never read).
    pub chatty: Vec<String>,
    /// The same seq shown with different bytes (found as it happens).
    pub conflicts: Vec<String>,
    /// Entries shown to clients (attached or reading), counting repeats.
    pub deliveries: u64,
    /// Of those, shown to attached clients.
    pub attached_deliveries: u64,
    /// Agents the workload tried to create (their keys).
    pub attempts: usize,
    /// Merge-lane agents the workload tried to create: each try gets a key
    /// of its own (a creation whose answer a kill cut off may still have
    /// made its agent, whose steps must not be counted as another's).
    pub lane_attempts: usize,
    /// The kinds of agent created so far (a bit each, `workload::Kind`).
    pub kinds_made: u8,
    /// Keys (names) of agents whose creation the daemon refused: none of
    /// them may ever exist.
    pub refused_keys: Vec<(String, String)>,
    /// Agent id → the pauses the daemon acknowledged (answered
    /// PauseAgent with the agent paused).
    pub paused: HashMap<String, Vec<Paused>>,
    /// The merge lane's agent now (`workload::Cycle::merge_lane`), and every
    /// one it had.
    pub lane: Option<String>,
    pub lane_ids: Vec<String>,
    /// The rewind lane's agent now, its tries, and every agent a rewind
    /// was asked for, with its directory.
    pub rewind_lane: Option<String>,
    pub rewind_attempts: usize,
    pub rewound: Vec<(String, std::path::PathBuf)>,
}

/// The ledger shared by the driver and its attached clients.
#[derive(Clone, Default)]
pub struct SharedLedger(Arc<Mutex<Ledger>>);

impl SharedLedger {
    pub fn lock(&self) -> MutexGuard<'_, Ledger> {
        self.0.locked()
    }

    /// Records an entry a client was shown (`attached`: on an attachment,
    /// else read with GetTranscript).
    pub fn show(&self, agent: &str, seq: u64, shown: Shown, attached: bool) {
        let mut ledger = self.lock();
        ledger.deliveries += 1;
        ledger.attached_deliveries += u64::from(attached);
        let slot = ledger.shown.entry(agent.to_string()).or_default();
        match slot.get(&seq) {
            Some(before) if *before != shown => {
                let message =
                    format!("agent {agent}: entry {seq} was shown with two different contents");
                ledger.conflicts.push(message);
            }
            Some(_) => {}
            None => {
                slot.insert(seq, shown);
            }
        }
    }
}
