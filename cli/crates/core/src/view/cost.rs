//! How usage and cost are shown (`agentctl usage`, `agentctl show`).

use agentd_shared::proto as pb;
use serde::Serialize;

use super::render::{BudgetJson, UsageJson};

/// Dollars with enough digits for small amounts: `$0.0123`, `$12.35`.
pub fn usd(amount: f64) -> String {
    if amount != 0.0 && amount.abs() < 1.0 {
        format!("${amount:.4}")
    } else {
        format!("${amount:.2}")
    }
}

/// "$X (without the prompt cache $Y, saved Z%)".
pub fn cost_line(c: &pb::Cost) -> String {
    let saved = if c.without_cache_usd > 0.0 {
        format!(
            ", saved {:.0}%",
            100.0 * (1.0 - c.usd / c.without_cache_usd)
        )
    } else {
        String::new()
    };
    format!(
        "{} (without the prompt cache {}{saved})",
        usd(c.usd),
        usd(c.without_cache_usd)
    )
}

/// One agent's cost: priced with and without the cache, or as its
/// external agent reported it (which says nothing of a cache). None when
/// it has no cost.
pub fn agent_cost_line(a: &pb::AgentUsage) -> Option<String> {
    let c = a.cost.as_ref()?;
    Some(if a.cost_reported {
        format!("{} (as the agent reported it)", usd(c.usd))
    } else {
        cost_line(c)
    })
}

/// Tokens, compact: 950, 12.3k, 4.56M.
pub fn tokens(n: u64) -> String {
    match n {
        0..1_000 => n.to_string(),
        1_000..1_000_000 => format!("{:.1}k", n as f64 / 1e3),
        _ => format!("{:.2}M", n as f64 / 1e6),
    }
}

#[derive(Debug, Serialize)]
pub struct CostJson {
    pub usd: f64,
    pub without_cache_usd: f64,
}

impl CostJson {
    pub fn of(c: &pb::Cost) -> CostJson {
        CostJson {
            usd: c.usd,
            without_cache_usd: c.without_cache_usd,
        }
    }
}

#[derive(Debug, Serialize)]
pub struct AgentUsageJson<'a> {
    pub id: &'a str,
    pub short_id: &'a str,
    pub parent_id: Option<&'a str>,
    pub subagent_type: Option<&'a str>,
    pub model: &'a str,
    pub usage: UsageJson,
    pub requests: u64,
    pub compactions: u32,
    /// Null when the model has no price and the agent reported none.
    pub cost: Option<CostJson>,
    /// `cost` is the external agent's own figure, not agentd's pricing.
    pub cost_reported: bool,
    /// Tokens its model's context window holds; null when not known.
    pub context_window: Option<u64>,
    /// Tokens in an external agent's context, as it last reported them.
    pub context_used: Option<u64>,
    /// Its own budget against what its family spent (absent: none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget: Option<BudgetJson<'a>>,
}

/// The JSON of a usage report (`usage --json`).
#[derive(Debug, Serialize)]
pub struct ReportJson<'a> {
    pub total: UsageJson,
    pub requests: u64,
    /// Summary requests among `requests`.
    pub compactions: u64,
    pub cost: CostJson,
    pub unpriced_models: &'a [String],
    pub agents: Vec<AgentUsageJson<'a>>,
}

impl<'a> ReportJson<'a> {
    pub fn of(r: &'a pb::UsageReport) -> ReportJson<'a> {
        let non_empty = |s: &'a str| (!s.is_empty()).then_some(s);
        ReportJson {
            total: UsageJson::of(r.total.as_ref()),
            requests: r.requests,
            compactions: r.compactions,
            cost: CostJson::of(&r.cost.unwrap_or_default()),
            unpriced_models: &r.unpriced_models,
            agents: r
                .agents
                .iter()
                .map(|a| AgentUsageJson {
                    id: &a.id,
                    short_id: &a.short_id,
                    parent_id: non_empty(&a.parent_id),
                    subagent_type: non_empty(&a.subagent_type),
                    model: &a.model,
                    usage: UsageJson::of(a.usage.as_ref()),
                    requests: a.requests,
                    compactions: a.compactions,
                    cost: a.cost.as_ref().map(CostJson::of),
                    cost_reported: a.cost_reported,
                    context_window: (a.context_window > 0).then_some(a.context_window),
                    context_used: a.context_used,
                    budget: a.budget.as_ref().map(BudgetJson::of),
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amounts_and_tokens_read_well() {
        assert_eq!(usd(0.0), "$0.00");
        assert_eq!(usd(0.012345), "$0.0123");
        assert_eq!(usd(12.345), "$12.35");
        assert_eq!(tokens(950), "950");
        assert_eq!(tokens(12_345), "12.3k");
        assert_eq!(tokens(4_560_000), "4.56M");
        let line = cost_line(&pb::Cost {
            usd: 1.0,
            without_cache_usd: 4.0,
        });
        assert_eq!(line, "$1.00 (without the prompt cache $4.00, saved 75%)");
        let mut agent = pb::AgentUsage {
            cost: Some(pb::Cost {
                usd: 0.4,
                without_cache_usd: 0.4,
            }),
            cost_reported: true,
            ..Default::default()
        };
        assert_eq!(
            agent_cost_line(&agent).unwrap(),
            "$0.4000 (as the agent reported it)"
        );
        agent.cost = None;
        assert_eq!(agent_cost_line(&agent), None);
    }
}
