//! What an editor is told of a session's context and cost (ACP
//! `usage_update`): the tokens the agent's last response filled its
//! context with, its model's window, and what the session has cost — the
//! agent and its subagents — all as the daemon reports them (GetUsage).
//! An external agent's fill and window are what it reported to the daemon
//! (its responses' usage is per turn there, not a fill). Nothing while
//! the window is not known (a model the daemon's table lacks, an external
//! agent that never said): ACP needs one, and a guessed size would show
//! the editor a wrong fill.

use agentd_shared::proto as pb;
use serde_json::{Value, json};

use crate::autostart::Client;

/// What the editor was last told, or will be once the window is known.
#[derive(Debug, Default)]
pub struct UsageShown {
    window: Option<u64>,
    used: Option<u64>,
    cost_usd: Option<f64>,
    /// The session agent's own budget against its family's spend (DESIGN
    /// §24), sent in `_meta.agentd.budget` beside the cost.
    budget: Option<pb::AgentBudget>,
    /// The daemon gives the fill (an external agent's report): responses'
    /// usage does not set it.
    reported_fill: bool,
}

impl UsageShown {
    /// A response's usage: the context it filled. The update to send,
    /// when `live` (a replayed history's responses only set the figure).
    pub fn response(&mut self, usage: &pb::Usage, live: bool) -> Option<Value> {
        if self.reported_fill {
            return None;
        }
        self.used = Some(
            usage.input_tokens
                + usage.cache_read_input_tokens
                + usage.cache_creation_input_tokens
                + usage.output_tokens,
        );
        if live { self.update() } else { None }
    }

    /// Reads the window and the cost again (the history is through, or a
    /// turn ended); the update to send. A daemon that does not answer
    /// leaves the figures as they were.
    pub async fn refresh(&mut self, mut client: Client, id: &str) -> Option<Value> {
        let request = pb::GetUsageRequest {
            id: id.to_string(),
            family: true,
        };
        match client.get_usage(request).await {
            Ok(report) => self.read(&report.into_inner()),
            Err(status) => {
                tracing::debug!(session = id, "usage: {}", status.message());
                return None;
            }
        }
        self.update()
    }

    fn read(&mut self, report: &pb::UsageReport) {
        let own = report.agents.first();
        self.window = own.map(|a| a.context_window).filter(|w| *w > 0);
        if let Some(used) = own.and_then(|a| a.context_used) {
            self.used = Some(used);
            self.reported_fill = true;
        }
        self.budget = own.and_then(|a| a.budget.clone());
        // The family's cost, when any of it has one.
        self.cost_usd = report
            .agents
            .iter()
            .any(|a| a.cost.is_some())
            .then(|| report.cost.map_or(0.0, |c| c.usd));
    }

    fn update(&self) -> Option<Value> {
        let (window, used) = (self.window?, self.used?);
        let mut u = json!({"sessionUpdate": "usage_update", "used": used, "size": window});
        if let Some(usd) = self.cost_usd {
            u["cost"] = json!({"amount": usd, "currency": "USD"});
        }
        if let Some(b) = &self.budget {
            // ACP has no field for a cap: agentd's, under `_meta`. 0 is
            // no cap of the kind, as on the gRPC API.
            u["_meta"] = json!({"agentd": {"budget": {
                "usd": b.usd, "tokens": b.tokens,
                "spent_usd": b.spent_usd, "spent_tokens": b.spent_tokens,
                "unmeasured": b.unmeasured,
            }}});
        }
        Some(u)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(window: u64, cost: Option<f64>) -> pb::UsageReport {
        pb::UsageReport {
            agents: vec![pb::AgentUsage {
                context_window: window,
                cost: cost.map(|usd| pb::Cost {
                    usd,
                    without_cache_usd: usd,
                }),
                ..Default::default()
            }],
            cost: Some(pb::Cost {
                usd: cost.unwrap_or(0.0),
                without_cache_usd: 0.0,
            }),
            ..Default::default()
        }
    }

    fn usage(input: u64, read: u64, output: u64) -> pb::Usage {
        pb::Usage {
            input_tokens: input,
            cache_read_input_tokens: read,
            output_tokens: output,
            ..Default::default()
        }
    }

    #[test]
    fn the_fill_and_cost_go_out_only_with_a_known_window() {
        let mut shown = UsageShown::default();
        // A replayed response sets the figure; nothing goes out.
        assert_eq!(shown.response(&usage(10, 20, 5), false), None);
        // No window known yet: nothing, even live.
        assert_eq!(shown.response(&usage(10, 20, 6), true), None);
        shown.read(&report(50_000, Some(0.25)));
        assert_eq!(
            shown.update(),
            Some(
                json!({"sessionUpdate": "usage_update", "used": 36, "size": 50_000,
                        "cost": {"amount": 0.25, "currency": "USD"}})
            )
        );
        assert_eq!(
            shown.response(&usage(100, 0, 1), true),
            Some(
                json!({"sessionUpdate": "usage_update", "used": 101, "size": 50_000,
                        "cost": {"amount": 0.25, "currency": "USD"}})
            )
        );
        // A model with no price: no cost, the fill still.
        shown.read(&report(50_000, None));
        assert_eq!(
            shown.update(),
            Some(json!({"sessionUpdate": "usage_update", "used": 101, "size": 50_000}))
        );
        // A budget of its own goes with it.
        let mut budgeted = report(50_000, Some(0.25));
        budgeted.agents[0].budget = Some(pb::AgentBudget {
            usd: 2.0,
            spent_usd: 0.25,
            ..Default::default()
        });
        shown.read(&budgeted);
        let update = shown.update().unwrap();
        assert_eq!(
            update["_meta"]["agentd"]["budget"],
            json!({"usd": 2.0, "tokens": 0, "spent_usd": 0.25, "spent_tokens": 0, "unmeasured": ""})
        );
        assert_eq!(update["cost"]["amount"], 0.25);
        // An unknown window (an external agent that never said): nothing.
        shown.read(&report(0, Some(1.0)));
        assert_eq!(shown.update(), None);
    }

    #[test]
    fn an_external_agents_reported_fill_wins_over_its_responses_usage() {
        let mut shown = UsageShown::default();
        // Its turn's usage (a sum over the turn's calls) is not a fill.
        assert_eq!(shown.response(&usage(90_000, 0, 10_000), true), None);
        let mut r = report(200_000, Some(0.5));
        r.agents[0].context_used = Some(53_000);
        shown.read(&r);
        let fill = json!({"sessionUpdate": "usage_update", "used": 53_000, "size": 200_000,
                          "cost": {"amount": 0.5, "currency": "USD"}});
        assert_eq!(shown.update(), Some(fill.clone()));
        assert_eq!(shown.response(&usage(90_000, 0, 10_000), true), None);
        assert_eq!(shown.update(), Some(fill));
    }
}
