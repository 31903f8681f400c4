//! Network modes, allow lists and proxy connections between the wire and
//! the domain (DESIGN §22).

use agentd_shared::proto as pb;

use super::{timestamp, unknown};
use crate::domain::{ConnectionDecision, ConnectionRecord, HostPattern, NetworkMode};
use crate::error::AgentdError;

/// The most `allow_hosts` one request may carry.
const MAX_ALLOW_HOSTS: usize = 256;

/// A request's network: `network` and the older `no_network` together.
/// None: the default (config, or the parent's).
pub fn network_from_wire(i: i32, no_network: bool) -> Result<Option<NetworkMode>, AgentdError> {
    let mode = match pb::NetworkMode::try_from(i).map_err(|_| unknown("network", i))? {
        pb::NetworkMode::Unspecified => None,
        pb::NetworkMode::Proxy => Some(NetworkMode::Proxy),
        pb::NetworkMode::Full => Some(NetworkMode::Full),
        pb::NetworkMode::None => Some(NetworkMode::None),
    };
    match (mode, no_network) {
        (None, true) => Ok(Some(NetworkMode::None)),
        (Some(m), true) if m != NetworkMode::None => Err(AgentdError::invalid(format!(
            "no_network contradicts network {m}: set one of them"
        ))),
        (m, _) => Ok(m),
    }
}

pub fn network(m: NetworkMode) -> pb::NetworkMode {
    match m {
        NetworkMode::Proxy => pb::NetworkMode::Proxy,
        NetworkMode::Full => pb::NetworkMode::Full,
        NetworkMode::None => pb::NetworkMode::None,
    }
}

/// A request's `allow_hosts`, checked.
pub fn allow_hosts(list: &[String]) -> Result<Vec<HostPattern>, AgentdError> {
    if list.len() > MAX_ALLOW_HOSTS {
        return Err(AgentdError::invalid(format!(
            "allow_hosts holds {} entries; at most {MAX_ALLOW_HOSTS}",
            list.len()
        )));
    }
    list.iter()
        .map(|p| {
            HostPattern::parse(p).map_err(|why| AgentdError::invalid(format!("allow_hosts: {why}")))
        })
        .collect()
}

/// A connection as clients see it; `open`: it is still being served.
pub fn connection(c: &ConnectionRecord, short_id: &str, open: bool) -> pb::NetworkConnection {
    pb::NetworkConnection {
        seq: c.seq,
        agent_id: c.agent.to_string(),
        host: c.target.host().to_string(),
        port: u32::from(c.target.port()),
        method: c.method.clone(),
        decision: match c.decision {
            ConnectionDecision::Allowed => pb::ConnectionDecision::Allowed,
            ConnectionDecision::Refused => pb::ConnectionDecision::Refused,
        } as i32,
        reason: c.reason.clone(),
        bytes_sent: c.bytes_sent,
        bytes_received: c.bytes_received,
        started_at: Some(timestamp(c.started_at_ms)),
        ended_at: c.ended_at_ms.map(timestamp),
        error: c.error.clone().unwrap_or_default(),
        cut_off: c.cut_off() && !open,
        agent_short_id: short_id.to_string(),
    }
}

pub fn allow_entries<'a>(
    list: impl IntoIterator<Item = (&'a HostPattern, &'a str)>,
) -> Vec<pb::NetworkAllowEntry> {
    list.into_iter()
        .map(|(p, purpose)| pb::NetworkAllowEntry {
            pattern: p.to_string(),
            purpose: purpose.to_string(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn network_and_no_network_agree_or_are_refused() {
        assert_eq!(network_from_wire(0, false).unwrap(), None);
        assert_eq!(network_from_wire(0, true).unwrap(), Some(NetworkMode::None));
        assert_eq!(network_from_wire(3, true).unwrap(), Some(NetworkMode::None));
        assert_eq!(
            network_from_wire(1, false).unwrap(),
            Some(NetworkMode::Proxy)
        );
        assert!(network_from_wire(2, true).is_err());
        assert!(network_from_wire(9, false).is_err());
        for m in NetworkMode::ALL {
            assert_eq!(
                network_from_wire(network(m) as i32, false).unwrap(),
                Some(m)
            );
        }
        assert!(allow_hosts(&["ok.example".into(), "bad host".into()]).is_err());
        assert!(allow_hosts(&vec!["a.example".to_string(); 257]).is_err());
    }
}
