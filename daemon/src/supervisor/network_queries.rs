//! What clients ask about agents' networks (DESIGN §22): an agent's
//! proxy connections, and what every proxy allows without asking.

use super::Supervisor;
use crate::domain::{AgentRecord, ConnectionRecord, HostPattern, NetworkMode};
use crate::error::AgentdError;

/// One agent's connections.
pub struct Connections {
    pub record: AgentRecord,
    /// Each with whether it is being served now.
    pub connections: Vec<(ConnectionRecord, bool)>,
    /// The hosts answered "always for this agent".
    pub allowed_always: Vec<HostPattern>,
}

/// What every proxy allows without asking.
pub struct NetworkPolicy {
    pub default_mode: NetworkMode,
    pub built_in: Vec<(HostPattern, &'static str)>,
    pub config: Vec<HostPattern>,
    pub every_agent: Vec<HostPattern>,
}

impl Supervisor {
    pub fn connections(&self, query: &str) -> Result<Connections, AgentdError> {
        let record = self.resolve(query)?;
        let connections = self
            .store
            .connections(record.id)?
            .into_iter()
            .map(|c| {
                let open = self.open_connections.is_open(record.id, c.seq);
                (c, open)
            })
            .collect();
        let allowed_always = self.store.network_allowed(Some(record.id))?;
        Ok(Connections {
            record,
            connections,
            allowed_always,
        })
    }

    pub fn network_policy(&self) -> Result<NetworkPolicy, AgentdError> {
        let config = self.config();
        Ok(NetworkPolicy {
            default_mode: config.network.mode,
            built_in: crate::network::built_in::patterns(),
            config: config.network.allow.clone(),
            every_agent: self.store.network_allowed(None)?,
        })
    }
}
