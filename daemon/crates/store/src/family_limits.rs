//! Family limits (DESIGN §24): agent id → the limits its agent type set on
//! it and its descendants. Written once, when the agent is stored (a
//! type's limits are the agent's from then on, whatever the file says
//! later). Limits that cannot be decoded read as an error, never as "no
//! limits".

use prost::Message as _;

use super::{Store, StoreError};
use crate::domain::{AgentId, FamilyLimits};

#[derive(Clone, PartialEq, prost::Message)]
struct StoredLimits {
    #[prost(uint32, optional, tag = "1")]
    max_children: Option<u32>,
    #[prost(uint32, optional, tag = "2")]
    max_depth: Option<u32>,
    #[prost(uint32, optional, tag = "3")]
    max_concurrent_requests: Option<u32>,
}

impl Store {
    /// The limits agent `id` holds for its family, if it holds any.
    pub fn family_limits(&self, id: AgentId) -> Result<Option<FamilyLimits>, StoreError> {
        let trees = self.trees()?;
        let Some(bytes) = trees.family_limits.get(id.as_bytes())? else {
            return Ok(None);
        };
        match StoredLimits::decode(bytes.as_ref()) {
            Ok(s) => Ok(Some(FamilyLimits {
                max_children: s.max_children,
                max_depth: s.max_depth,
                max_concurrent_requests: s.max_concurrent_requests,
            })),
            Err(e) => {
                self.note_corrupt("family limits", id.as_bytes(), &e);
                Err(StoreError::Corrupt(format!(
                    "the family limits of agent {id} cannot be read"
                )))
            }
        }
    }

    /// Keeps the limits agent `id` holds; on disk when this returns.
    pub async fn set_family_limits_durable(
        &self,
        id: AgentId,
        limits: FamilyLimits,
    ) -> Result<(), StoreError> {
        let trees = self.trees_for_write()?;
        trees
            .family_limits
            .insert(
                id.as_bytes(),
                StoredLimits {
                    max_children: limits.max_children,
                    max_depth: limits.max_depth,
                    max_concurrent_requests: limits.max_concurrent_requests,
                }
                .encode_to_vec(),
            )
            .map_err(|e| self.write_error(e))?;
        self.flush_on(trees).await
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::StoreOptions;

    #[tokio::test]
    async fn limits_survive_a_reopen_and_corrupt_ones_are_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path(), StoreOptions::default()).unwrap();
        let id = AgentId::random();
        assert_eq!(store.family_limits(id).unwrap(), None);
        let l = FamilyLimits::new(Some(2), Some(0), None).unwrap();
        store.set_family_limits_durable(id, l).await.unwrap();
        drop(store);
        let store = crate::reopen_for_tests(dir.path());
        assert_eq!(store.family_limits(id).unwrap(), Some(l));
        store
            .trees()
            .unwrap()
            .family_limits
            .insert(id.as_bytes(), &[0xff, 0xff][..])
            .unwrap();
        assert!(store.family_limits(id).is_err(), "never read as no limits");
    }
}
