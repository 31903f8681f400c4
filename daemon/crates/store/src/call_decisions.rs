//! What a PreToolUse hook decided of a call (DESIGN §24), on disk before
//! the call runs: agent id ++ tool_use_id → the decision. After a crash, a
//! call that runs again (a read-only one) is not put to the hook again if
//! its decision is here, and is if it is not. Forgotten once the round's
//! results are written.

use prost::Message as _;

use super::{Store, StoreError};
use crate::domain::AgentId;

/// A hook's decision as kept.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallDecision {
    /// 1 allow, 2 ask, 3 deny (`hook_output::PermissionDecision`).
    pub decision: u8,
    pub why: String,
    /// "hook `cmd` in FILE".
    pub named: String,
    pub command: String,
    pub source: String,
}

#[derive(Clone, PartialEq, prost::Message)]
struct Stored {
    #[prost(uint32, tag = "1")]
    decision: u32,
    #[prost(string, tag = "2")]
    why: String,
    #[prost(string, tag = "3")]
    named: String,
    #[prost(string, tag = "4")]
    command: String,
    #[prost(string, tag = "5")]
    source: String,
}

fn key(agent: AgentId, call: &str) -> Vec<u8> {
    let mut k = agent.as_bytes().to_vec();
    k.extend_from_slice(call.as_bytes());
    k
}

impl Store {
    /// Keeps `d` for the call `call` of `agent`; on disk when this returns.
    pub async fn record_call_decision_durable(
        &self,
        agent: AgentId,
        call: &str,
        d: &CallDecision,
    ) -> Result<(), StoreError> {
        let trees = self.trees_for_write()?;
        let stored = Stored {
            decision: u32::from(d.decision),
            why: d.why.clone(),
            named: d.named.clone(),
            command: d.command.clone(),
            source: d.source.clone(),
        };
        trees
            .call_decisions
            .insert(key(agent, call), stored.encode_to_vec())
            .map_err(|e| self.write_error(e))?;
        self.flush_on(trees).await
    }

    /// The decision kept for the call, if any (a corrupt one is none: the
    /// hook is asked again).
    pub fn call_decision(
        &self,
        agent: AgentId,
        call: &str,
    ) -> Result<Option<CallDecision>, StoreError> {
        let trees = self.trees()?;
        let Some(bytes) = trees.call_decisions.get(key(agent, call))? else {
            return Ok(None);
        };
        Ok(Stored::decode(bytes.as_ref()).ok().and_then(|s| {
            Some(CallDecision {
                decision: u8::try_from(s.decision)
                    .ok()
                    .filter(|d| (1..=3).contains(d))?,
                why: s.why,
                named: s.named,
                command: s.command,
                source: s.source,
            })
        }))
    }

    /// Forgets every decision kept for `agent` (its round's results are
    /// written). Not flushed: one left by a crash is never asked for again.
    pub fn forget_call_decisions(&self, agent: AgentId) -> Result<(), StoreError> {
        let trees = self.trees()?;
        let mut batch = sled::Batch::default();
        for item in trees.call_decisions.scan_prefix(agent.as_bytes()) {
            let (k, _) = item?;
            batch.remove(k);
        }
        trees
            .call_decisions
            .apply_batch(batch)
            .map_err(|e| self.write_error(e))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::StoreOptions;

    #[tokio::test]
    async fn a_decision_survives_a_reopen_until_forgotten() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), StoreOptions::default()).unwrap();
        let a = AgentId::random();
        let d = CallDecision {
            decision: 1,
            why: "ok".into(),
            named: "hook `x` in f".into(),
            command: "x".into(),
            source: "f".into(),
        };
        store
            .record_call_decision_durable(a, "toolu_1", &d)
            .await
            .unwrap();
        drop(store);
        let store = crate::reopen_for_tests(dir.path());
        assert_eq!(store.call_decision(a, "toolu_1").unwrap(), Some(d));
        assert_eq!(store.call_decision(a, "toolu_2").unwrap(), None);
        store.forget_call_decisions(a).unwrap();
        assert_eq!(store.call_decision(a, "toolu_1").unwrap(), None);
    }
}
