//! External agents over ACP, run and supervised by agentd: one module per behaviour.

pub(crate) mod agents;
pub(crate) mod checkpoints;
pub(crate) mod claims;
pub(crate) mod claude;
pub(crate) mod compact;
pub(crate) mod costs;
pub(crate) mod gemini;
pub(crate) mod homes;
pub(crate) mod reload;
pub(crate) mod rules;
