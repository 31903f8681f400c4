//! Budgets (DESIGN §24): agent id → the cap on what it and its descendants
//! spend. Kept beside the records, not in them: a running agent's loop
//! owns its record, and a budget is raised while its family runs.
//! A budget that cannot be decoded is corrupt like any item (counted,
//! logged once) and reads as an error, never as "no cap".

use prost::Message as _;

use super::{Store, StoreError};
use crate::domain::{AgentId, Budget};

#[derive(Clone, PartialEq, prost::Message)]
struct StoredBudget {
    #[prost(uint64, optional, tag = "1")]
    usd_micros: Option<u64>,
    #[prost(uint64, optional, tag = "2")]
    tokens: Option<u64>,
}

impl Store {
    /// The budget of agent `id`, if it has one of its own.
    pub fn budget(&self, id: AgentId) -> Result<Option<Budget>, StoreError> {
        let trees = self.trees()?;
        let Some(bytes) = trees.budgets.get(id.as_bytes())? else {
            return Ok(None);
        };
        match StoredBudget::decode(bytes.as_ref()) {
            Ok(s) => Ok(Some(Budget {
                usd_micros: s.usd_micros,
                tokens: s.tokens,
            })),
            Err(e) => {
                self.note_corrupt("budget", id.as_bytes(), &e);
                Err(StoreError::Corrupt(format!(
                    "the budget of agent {id} cannot be read"
                )))
            }
        }
    }

    /// Every agent's own budget (few agents have one): those that cannot
    /// be read are left out here, and refuse requests where checked.
    pub fn budgets(&self) -> Result<Vec<(AgentId, Budget)>, StoreError> {
        let trees = self.trees()?;
        let mut out = Vec::new();
        for item in trees.budgets.iter() {
            let (key, value) = item?;
            let (Some(id), Ok(s)) = (
                AgentId::from_slice(&key),
                StoredBudget::decode(value.as_ref()),
            ) else {
                continue;
            };
            out.push((
                id,
                Budget {
                    usd_micros: s.usd_micros,
                    tokens: s.tokens,
                },
            ));
        }
        Ok(out)
    }

    /// Sets (or, with None, removes) the budget of agent `id`; on disk when
    /// this returns.
    pub async fn set_budget_durable(
        &self,
        id: AgentId,
        budget: Option<Budget>,
    ) -> Result<(), StoreError> {
        let trees = self.trees_for_write()?;
        let written = match budget {
            Some(b) => trees
                .budgets
                .insert(
                    id.as_bytes(),
                    StoredBudget {
                        usd_micros: b.usd_micros,
                        tokens: b.tokens,
                    }
                    .encode_to_vec(),
                )
                .map(|_| ()),
            None => trees.budgets.remove(id.as_bytes()).map(|_| ()),
        };
        written.map_err(|e| self.write_error(e))?;
        self.flush_on(trees).await
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::StoreOptions;

    #[tokio::test]
    async fn a_budget_survives_a_reopen_and_a_corrupt_one_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), StoreOptions::default()).unwrap();
        let id = AgentId::random();
        assert_eq!(store.budget(id).unwrap(), None);
        let b = Budget::new(Some(1.5), Some(10)).unwrap();
        store.set_budget_durable(id, Some(b)).await.unwrap();
        drop(store);
        let store = crate::reopen_for_tests(dir.path());
        assert_eq!(store.budget(id).unwrap(), Some(b));
        store
            .trees()
            .unwrap()
            .budgets
            .insert(id.as_bytes(), &[0xff, 0xff][..])
            .unwrap();
        assert!(store.budget(id).is_err(), "never read as no cap");
        store.set_budget_durable(id, None).await.unwrap();
        assert_eq!(store.budget(id).unwrap(), None);
    }
}
