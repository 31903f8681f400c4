//! Budgets (DESIGN §24): `--budget USD` and `--budget-tokens N` on `run`,
//! `fork` and `send`, and `agentctl budget AGENT [USD] [--tokens N]`, which
//! shows, sets, raises or (`--remove`) removes the cap on what an agent and
//! every descendant spend. Raising a spent budget continues the family's
//! agents paused `budget_exhausted`.

use agentd_shared::proto as pb;

use crate::autostart::Target;
use crate::exit::{Failure, SUCCESS};
use crate::view::{render, status};

/// The budget flags of `run`, `fork` and `send`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct BudgetFlags {
    /// A cap, in USD, on what the agent and every descendant spend (priced
    /// as `usage` prices); requests stop when it is reached.
    #[arg(long, value_name = "USD")]
    pub budget: Option<f64>,
    /// A cap on the tokens the agent and every descendant use (for models
    /// without a price).
    #[arg(long, value_name = "N")]
    pub budget_tokens: Option<u64>,
}

impl BudgetFlags {
    /// The wire's (USD, tokens); 0 is none.
    pub fn wire(&self) -> Result<(f64, u64), Failure> {
        if let Some(usd) = self.budget
            && !(usd.is_finite() && usd > 0.0)
        {
            return Err(Failure::new(
                2,
                format!("--budget is a positive number of dollars, not {usd}"),
            ));
        }
        if self.budget_tokens == Some(0) {
            return Err(Failure::new(2, "--budget-tokens is a positive number"));
        }
        Ok((self.budget.unwrap_or(0.0), self.budget_tokens.unwrap_or(0)))
    }
}

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Agent id, unique id prefix, or name.
    id: String,
    /// The new cap in USD (omit to show the budget).
    usd: Option<f64>,
    /// The new cap on tokens.
    #[arg(long, value_name = "N")]
    tokens: Option<u64>,
    /// Remove the agent's budget (an ancestor's still holds).
    #[arg(long, conflicts_with_all = ["usd", "tokens"])]
    remove: bool,
}

pub async fn run(target: &Target, args: Args) -> Result<u8, Failure> {
    let mut client = target.client().await?;
    let agent = if args.remove || args.usd.is_some() || args.tokens.is_some() {
        let flags = BudgetFlags {
            budget: args.usd,
            budget_tokens: args.tokens,
        };
        let (budget_usd, budget_tokens) = if args.remove { (0.0, 0) } else { flags.wire()? };
        client
            .set_budget(pb::SetBudgetRequest {
                id: args.id,
                budget_usd,
                budget_tokens,
            })
            .await?
            .into_inner()
    } else {
        client
            .get_agent(pb::GetAgentRequest { id: args.id })
            .await?
            .into_inner()
    };
    match &agent.budget {
        None => say!(
            "agent {} has no budget of its own ({})",
            agent.short_id,
            status::name(agent.status)
        ),
        Some(b) => say!(
            "agent {}: {} ({})",
            agent.short_id,
            render::budget_line(b),
            status::name(agent.status)
        ),
    }
    Ok(SUCCESS)
}
