//! What agents' network proxies decided (DESIGN §22): each agent's
//! connections, keyed by the agent's id and the connection's seq, written
//! when the connection is decided and again when it closes; and the hosts
//! answered "always", for one agent (keyed by its id) or for every agent.
//! The proxy's owner (`supervisor::egress`) is the only writer.

use prost::Message as _;

use super::{Store, StoreError};
use crate::domain::{AgentId, ConnectionDecision, ConnectionRecord, HostPattern, NetTarget};

#[derive(Clone, PartialEq, prost::Message)]
struct StoredConnection {
    #[prost(string, tag = "1")]
    host: String,
    #[prost(uint32, tag = "2")]
    port: u32,
    #[prost(string, tag = "3")]
    method: String,
    /// 1 allowed, 2 refused.
    #[prost(int32, tag = "4")]
    decision: i32,
    #[prost(string, tag = "5")]
    reason: String,
    #[prost(uint64, tag = "6")]
    bytes_sent: u64,
    #[prost(uint64, tag = "7")]
    bytes_received: u64,
    #[prost(int64, tag = "8")]
    started_at_ms: i64,
    /// 0: not ended.
    #[prost(int64, tag = "9")]
    ended_at_ms: i64,
    #[prost(string, tag = "10")]
    error: String,
}

fn connection_key(agent: AgentId, seq: u64) -> Vec<u8> {
    let mut key = agent.as_bytes().to_vec();
    key.extend_from_slice(&seq.to_be_bytes());
    key
}

/// Keys of hosts allowed for every agent start with 0; one agent's with 1
/// and its id.
const EVERY_AGENT: u8 = 0;
const ONE_AGENT: u8 = 1;

pub(super) fn agent_prefix(agent: AgentId) -> Vec<u8> {
    let mut key = vec![ONE_AGENT];
    key.extend_from_slice(agent.as_bytes());
    key
}

fn allow_prefix(agent: Option<AgentId>) -> Vec<u8> {
    agent.map_or_else(|| vec![EVERY_AGENT], agent_prefix)
}

impl Store {
    /// Records `c` (a new connection, or the end of one), durably.
    pub async fn record_connection_durable(&self, c: &ConnectionRecord) -> Result<(), StoreError> {
        let stored = StoredConnection {
            host: c.target.host().to_string(),
            port: u32::from(c.target.port()),
            method: c.method.clone(),
            decision: match c.decision {
                ConnectionDecision::Allowed => 1,
                ConnectionDecision::Refused => 2,
            },
            reason: c.reason.clone(),
            bytes_sent: c.bytes_sent,
            bytes_received: c.bytes_received,
            started_at_ms: c.started_at_ms,
            ended_at_ms: c.ended_at_ms.unwrap_or(0),
            error: c.error.clone().unwrap_or_default(),
        };
        let trees = self.trees_for_write()?;
        trees
            .connections
            .insert(connection_key(c.agent, c.seq), stored.encode_to_vec())
            .map_err(|e| self.write_error(e))?;
        self.flush_on(trees).await
    }

    /// `agent`'s connections, oldest first (a corrupt one skipped).
    pub fn connections(&self, agent: AgentId) -> Result<Vec<ConnectionRecord>, StoreError> {
        let trees = self.trees()?;
        let mut out = Vec::new();
        for item in trees.connections.scan_prefix(agent.as_bytes()) {
            let (key, value) = item?;
            match decode_connection(agent, &key, &value) {
                Some(c) => out.push(c),
                None => self.note_corrupt("connection", &key, &"undecodable"),
            }
        }
        Ok(out)
    }

    /// The seq `agent`'s next connection gets.
    pub fn next_connection_seq(&self, agent: AgentId) -> Result<u64, StoreError> {
        let trees = self.trees()?;
        let last = trees.connections.scan_prefix(agent.as_bytes()).next_back();
        Ok(match last {
            Some(item) => {
                let (key, _) = item?;
                key.get(16..24)
                    .and_then(|b| <[u8; 8]>::try_from(b).ok())
                    .map_or(0, |b| u64::from_be_bytes(b) + 1)
            }
            None => 0,
        })
    }

    /// The hosts answered "always" for `agent` (None: for every agent).
    pub fn network_allowed(&self, agent: Option<AgentId>) -> Result<Vec<HostPattern>, StoreError> {
        let trees = self.trees()?;
        let start = allow_prefix(agent);
        let mut out = Vec::new();
        for key in trees.network_allow.scan_prefix(&start).keys() {
            let key = key?;
            match std::str::from_utf8(&key[start.len()..])
                .ok()
                .and_then(|p| HostPattern::parse(p).ok())
            {
                Some(p) => out.push(p),
                None => self.note_corrupt("network allow entry", &key, &"undecodable"),
            }
        }
        Ok(out)
    }

    /// Keeps `pattern` allowed for `agent` (None: every agent), durably.
    pub async fn allow_network_durable(
        &self,
        agent: Option<AgentId>,
        pattern: &HostPattern,
    ) -> Result<(), StoreError> {
        let mut key = allow_prefix(agent);
        key.extend_from_slice(pattern.to_string().as_bytes());
        let trees = self.trees_for_write()?;
        trees
            .network_allow
            .insert(key, &[][..])
            .map_err(|e| self.write_error(e))?;
        self.flush_on(trees).await
    }
}

fn decode_connection(agent: AgentId, key: &[u8], value: &[u8]) -> Option<ConnectionRecord> {
    let seq = u64::from_be_bytes(key.get(16..24)?.try_into().ok()?);
    let s = StoredConnection::decode(value).ok()?;
    Some(ConnectionRecord {
        seq,
        agent,
        target: NetTarget::new(&s.host, u16::try_from(s.port).ok()?).ok()?,
        method: s.method,
        decision: match s.decision {
            1 => ConnectionDecision::Allowed,
            2 => ConnectionDecision::Refused,
            _ => return None,
        },
        reason: s.reason,
        bytes_sent: s.bytes_sent,
        bytes_received: s.bytes_received,
        started_at_ms: s.started_at_ms,
        ended_at_ms: (s.ended_at_ms != 0).then_some(s.ended_at_ms),
        error: (!s.error.is_empty()).then_some(s.error),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::StoreOptions;

    #[tokio::test]
    async fn connections_and_allowances_survive_a_reopen_and_stay_per_agent() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (AgentId::random(), AgentId::random());
        let mut c = ConnectionRecord {
            seq: 0,
            agent: a,
            target: NetTarget::new("example.org", 443).unwrap(),
            method: "CONNECT".into(),
            decision: ConnectionDecision::Allowed,
            reason: "config.toml [network] allow".into(),
            bytes_sent: 0,
            bytes_received: 0,
            started_at_ms: 5,
            ended_at_ms: None,
            error: None,
        };
        {
            let store = Store::open(dir.path(), StoreOptions::default()).unwrap();
            store.record_connection_durable(&c).await.unwrap();
            assert_eq!(store.next_connection_seq(a).unwrap(), 1);
            assert_eq!(store.next_connection_seq(b).unwrap(), 0);
            c.bytes_sent = 10;
            c.ended_at_ms = Some(9);
            store.record_connection_durable(&c).await.unwrap();
            let every = HostPattern::parse("*.corp.example").unwrap();
            let mine = HostPattern::parse("example.org:443").unwrap();
            store.allow_network_durable(None, &every).await.unwrap();
            store.allow_network_durable(Some(a), &mine).await.unwrap();
        }
        let store = Store::open(dir.path(), StoreOptions::default()).unwrap();
        assert_eq!(store.connections(a).unwrap(), vec![c]);
        assert!(store.connections(b).unwrap().is_empty());
        assert_eq!(store.network_allowed(Some(a)).unwrap().len(), 1);
        assert!(store.network_allowed(Some(b)).unwrap().is_empty());
        assert_eq!(
            store.network_allowed(None).unwrap()[0].to_string(),
            "*.corp.example"
        );
        store.remove_agent(a).await.unwrap();
        assert!(store.connections(a).unwrap().is_empty());
        assert!(store.network_allowed(Some(a)).unwrap().is_empty());
        assert_eq!(store.network_allowed(None).unwrap().len(), 1);
    }
}
