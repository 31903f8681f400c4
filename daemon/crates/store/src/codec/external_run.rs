//! How an external agent's session is laid out on disk, inside its record
//! (`codec`, `StoredAgent` tag 41). A name this agentd cannot read is
//! corrupt, never read as "not external" (which would hand the agent to a
//! model it never had).

use super::Corrupt;
use crate::domain::{ContextFill, ExternalAgentName, ExternalRun, ReportedCost};

#[derive(Clone, PartialEq, prost::Message)]
pub(super) struct StoredExternal {
    #[prost(string, tag = "1")]
    pub(super) agent: String,
    #[prost(string, tag = "2")]
    session_id: String,
    #[prost(uint64, tag = "3")]
    sent_through: u64,
    #[prost(bool, tag = "4")]
    turn_open: bool,
    #[prost(bool, tag = "5")]
    reopenable: bool,
    #[prost(message, optional, tag = "6")]
    cost: Option<StoredCost>,
    #[prost(message, optional, tag = "7")]
    context: Option<StoredContext>,
}

/// An agent's reported context fill, in tokens.
#[derive(Clone, PartialEq, prost::Message)]
pub(super) struct StoredContext {
    #[prost(uint64, tag = "1")]
    used: u64,
    #[prost(uint64, tag = "2")]
    size: u64,
}

/// An agent's reported cost, in micro-dollars.
#[derive(Clone, PartialEq, prost::Message)]
pub(super) struct StoredCost {
    #[prost(uint64, tag = "1")]
    total_micros: u64,
    #[prost(uint64, tag = "2")]
    last_micros: u64,
}

pub(super) fn stored_external(run: &ExternalRun) -> StoredExternal {
    StoredExternal {
        agent: run.agent.as_str().to_string(),
        session_id: run.session_id.clone(),
        sent_through: run.sent_through,
        turn_open: run.turn_open,
        reopenable: run.reopenable,
        cost: run.cost.map(|c| StoredCost {
            total_micros: c.total_micros,
            last_micros: c.last_micros,
        }),
        context: run.context.map(|c| StoredContext {
            used: c.used,
            size: c.size,
        }),
    }
}

pub(super) fn external_of(stored: StoredExternal) -> Result<ExternalRun, Corrupt> {
    Ok(ExternalRun {
        agent: ExternalAgentName::parse(&stored.agent)
            .map_err(|_| Corrupt::Field("external agent"))?,
        session_id: stored.session_id,
        sent_through: stored.sent_through,
        turn_open: stored.turn_open,
        reopenable: stored.reopenable,
        cost: stored.cost.map(|c| ReportedCost {
            total_micros: c.total_micros,
            last_micros: c.last_micros,
        }),
        context: match stored.context {
            Some(c) if c.size == 0 => return Err(Corrupt::Field("external context size")),
            Some(c) => Some(ContextFill {
                used: c.used,
                size: c.size,
            }),
            None => None,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_context_fill_round_trips_and_a_window_of_nothing_is_corrupt() {
        let mut run = ExternalRun::new(ExternalAgentName::parse("gemini").unwrap());
        run.context = Some(ContextFill {
            used: 10,
            size: 100,
        });
        assert_eq!(external_of(stored_external(&run)).unwrap(), run);
        run.context = Some(ContextFill { used: 10, size: 0 });
        assert!(matches!(
            external_of(stored_external(&run)),
            Err(Corrupt::Field("external context size"))
        ));
    }
}
