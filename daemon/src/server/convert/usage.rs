//! Usage, cost and budgets on the wire (`GetUsage`, `Agent.budget`).

use agentd_shared::proto as pb;

use crate::domain::{AgentId, Usage};
use crate::pricing::Cost;
use crate::supervisor::UsageReport;

pub fn usage(u: &Usage) -> pb::Usage {
    pb::Usage {
        input_tokens: u.input_tokens,
        output_tokens: u.output_tokens,
        cache_read_input_tokens: u.cache_read_input_tokens,
        cache_creation_input_tokens: u.cache_creation_input_tokens,
    }
}

pub fn cost(c: &Cost) -> pb::Cost {
    pb::Cost {
        usd: c.usd,
        without_cache_usd: c.without_cache_usd,
    }
}

/// A usage report; `budget` gives an agent's own budget with its family's
/// spend, for the agents that have one.
pub fn usage_report(
    r: UsageReport,
    budget_of: impl Fn(AgentId) -> Option<pb::AgentBudget>,
) -> pb::UsageReport {
    pb::UsageReport {
        total: Some(usage(&r.total)),
        by_model: r
            .by_model
            .iter()
            .map(|(model, u)| (model.clone(), usage(u)))
            .collect(),
        requests: r.requests,
        compactions: r.compactions,
        cost: Some(cost(&r.cost)),
        agents: r
            .agents
            .into_iter()
            .map(|a| pb::AgentUsage {
                budget: budget_of(a.record.id),
                id: a.record.id.to_string(),
                short_id: a.record.short_id.to_string(),
                parent_id: a.record.parent.map(|p| p.to_string()).unwrap_or_default(),
                usage: Some(usage(&a.record.usage)),
                requests: u64::from(a.record.turns) + u64::from(a.record.compactions),
                compactions: a.record.compactions,
                cost: a.cost.as_ref().map(cost),
                cost_reported: a.cost_reported(),
                context_window: a.context_window.unwrap_or(0),
                context_used: a.context_used(),
                subagent_type: a.record.subagent_type,
                model: a.record.model,
            })
            .collect(),
        unpriced_models: r.unpriced,
    }
}

/// An agent's budget and its family's spend, as `Agent.budget` carries it.
pub fn budget(
    (b, spent): &(crate::domain::Budget, Result<crate::domain::Spent, String>),
) -> pb::AgentBudget {
    use crate::domain::MICROS_PER_USD;
    let (spent_usd, spent_tokens, unmeasured) = match spent {
        Ok(s) => (
            s.usd_micros as f64 / MICROS_PER_USD,
            s.tokens,
            String::new(),
        ),
        Err(why) => (0.0, 0, why.clone()),
    };
    pb::AgentBudget {
        usd: b.usd().unwrap_or(0.0),
        tokens: b.tokens.unwrap_or(0),
        spent_usd,
        spent_tokens,
        unmeasured,
    }
}
