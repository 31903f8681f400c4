//! What agents cost (`GetUsage`): tokens, requests and USD per agent, for
//! one agent, its family (it and every descendant) or every agent, priced
//! by the daemon's price table — or, for an external agent that reports
//! its cost over ACP, as it reported it.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::Supervisor;
use crate::domain::{AgentRecord, Usage};
use crate::error::AgentdError;
use crate::model::ModelSpec;
use crate::pricing::Cost;

/// One agent's part of a report.
#[derive(Debug, Clone)]
pub struct AgentUsage {
    pub record: AgentRecord,
    /// None when its model has no price and its agent reported none.
    pub cost: Option<Cost>,
    /// Tokens its model's context window holds, if known (an external
    /// agent's as it reported it).
    pub context_window: Option<u64>,
}

impl AgentUsage {
    /// The cost is what its external agent reported, not agentd's pricing
    /// of its tokens.
    pub fn cost_reported(&self) -> bool {
        self.record
            .external
            .as_ref()
            .is_some_and(|e| e.cost.is_some())
    }

    /// Tokens in its context as its external agent last reported them.
    pub fn context_used(&self) -> Option<u64> {
        self.record.external.as_ref()?.context.map(|f| f.used)
    }
}

/// Usage summed over some agents.
#[derive(Debug, Clone, Default)]
pub struct UsageReport {
    /// The agents counted, parents before their children.
    pub agents: Vec<AgentUsage>,
    pub total: Usage,
    /// Model responses (each a billed request), summary requests included.
    pub requests: u64,
    /// Compactions (each one summary request).
    pub compactions: u64,
    /// Of the agents with a cost (priced or reported).
    pub cost: Cost,
    pub by_model: BTreeMap<String, Usage>,
    /// Models counted in the tokens but not in the cost: they have no price
    /// (add one under `[prices]` in the config).
    pub unpriced: Vec<String>,
}

impl Supervisor {
    /// The usage of the agent `query` names (with `family`, of it and all
    /// its descendants), or of every agent when `query` is empty.
    pub fn usage(&self, query: &str, family: bool) -> Result<UsageReport, AgentdError> {
        let records = if query.trim().is_empty() {
            self.store
                .agents()?
                .into_iter()
                .map(Arc::unwrap_or_clone)
                .collect()
        } else {
            let root = self.resolve(query)?;
            let mut records = if family {
                self.descendants(root.id)?
            } else {
                Vec::new()
            };
            records.insert(0, root);
            records
        };
        let mut report = UsageReport::default();
        let prices = self.prices();
        let config = self.config();
        for record in records {
            let reported_fill = record.external.as_ref().and_then(|e| e.context);
            let context_window = match reported_fill {
                Some(fill) => Some(fill.size),
                None => ModelSpec::parse(&record.model)
                    .ok()
                    .and_then(|m| config.context_limits(&m).window),
            };
            let reported = record.external.as_ref().and_then(|e| e.cost);
            let cost = match reported {
                // The agent does not say what it would cost without a cache.
                Some(r) => Some(Cost {
                    usd: r.usd(),
                    without_cache_usd: r.usd(),
                }),
                None => prices.rates(&record.model).map(|r| r.cost(&record.usage)),
            };
            match cost {
                Some(c) => report.cost.add(c),
                None => {
                    if !report.unpriced.contains(&record.model) {
                        report.unpriced.push(record.model.clone());
                    }
                }
            }
            report.total.add(&record.usage);
            report.requests += u64::from(record.turns) + u64::from(record.compactions);
            report.compactions += u64::from(record.compactions);
            report
                .by_model
                .entry(record.model.clone())
                .or_default()
                .add(&record.usage);
            report.agents.push(AgentUsage {
                record,
                cost,
                context_window,
            });
        }
        Ok(report)
    }
}
