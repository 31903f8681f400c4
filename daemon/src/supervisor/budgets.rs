//! Budgets (DESIGN §24): a cap on what an agent and every descendant
//! spend, in USD (priced as `usage` prices) and/or tokens. Every agent's
//! model requests are checked against the budget of the agent itself and
//! of each ancestor that has one, each measured over that ancestor's whole
//! family from the records (on disk with every response). A family at its
//! cap sends nothing more: its agents pause `budget_exhausted` at their
//! next request, and raising the budget (`set_budget`) continues them.
//! Requests already in flight when the cap is reached are what a family
//! can overshoot by — at most one per running agent of it.

use std::sync::Arc;

use super::{Supervisor, short};
use crate::domain::{
    AgentId, AgentRecord, Budget, MICROS_PER_USD, ResumeBlockedReason, Spent, now_ms,
};
use crate::error::AgentdError;

impl Supervisor {
    /// What the family of `holder` (it and every descendant) has spent; an
    /// error when a USD budget cannot be checked (a model without a price).
    fn family_spent(&self, holder: AgentId, budget: &Budget) -> Result<Spent, String> {
        let report = self
            .usage(&holder.to_string(), true)
            .map_err(|e| format!("its family's spend cannot be read: {e}"))?;
        if budget.usd_micros.is_some() && !report.unpriced.is_empty() {
            return Err(format!(
                "a USD budget cannot be checked: model {} has no price (add one under [prices] in config.toml, or give a token budget instead)",
                report.unpriced.join(", ")
            ));
        }
        Ok(Spent {
            usd_micros: (report.cost.usd * MICROS_PER_USD).ceil() as u64,
            tokens: report.total.total(),
        })
    }

    /// Why `record` may not send a model request now, if it may not: the
    /// budget of it or of an ancestor is spent by that one's family, or
    /// cannot be checked (fail closed).
    pub(super) fn budget_spent(&self, record: &AgentRecord) -> Option<String> {
        for holder in self.lineage(record) {
            let budget = match self.store.budget(holder) {
                Ok(Some(b)) => b,
                Ok(None) => continue,
                Err(e) => return Some(format!("its budget cannot be read: {e}")),
            };
            let whose = if holder == record.id {
                "its".to_string()
            } else {
                format!(
                    "agent {}'s",
                    holder.short_prefix(crate::domain::SHORT_ID_LEN)
                )
            };
            match self.family_spent(holder, &budget) {
                Err(why) => return Some(why),
                Ok(spent) => {
                    if let Some(reached) = budget.reached(&spent) {
                        return Some(format!(
                            "{whose} budget is spent ({reached}, across it and its descendants); raise it with `agentctl budget {} AMOUNT`",
                            holder.short_prefix(crate::domain::SHORT_ID_LEN)
                        ));
                    }
                }
            }
        }
        None
    }

    /// The budget of agent `id`, if it has one of its own, with what its
    /// family spent (or why that cannot be measured), for clients.
    pub fn budget_view(&self, id: AgentId) -> Option<(Budget, Result<Spent, String>)> {
        let budget = self.store.budget(id).ok().flatten()?;
        Some((budget, self.family_spent(id, &budget)))
    }

    /// Sets (or with None removes) the budget of the agent `query` names;
    /// its family's agents paused `budget_exhausted` whose budgets now
    /// allow a request go on. Returns the agent.
    pub async fn set_budget(
        self: &Arc<Self>,
        query: &str,
        budget: Option<Budget>,
    ) -> Result<AgentRecord, AgentdError> {
        let record = self.resolve(query)?;
        self.store.set_budget_durable(record.id, budget).await?;
        match budget {
            Some(b) => {
                tracing::info!(agent = %record.id, budget = %b, "budget set")
            }
            None => tracing::info!(agent = %record.id, "budget removed"),
        }
        let mut family = vec![record.clone()];
        family.extend(self.descendants(record.id)?);
        for member in family {
            self.continue_if_unblocked(member).await;
        }
        self.reload(&record)
    }

    /// Continues an agent paused `budget_exhausted` once no budget stops
    /// it: the block is cleared and it is revived (its next request is
    /// checked again).
    async fn continue_if_unblocked(self: &Arc<Self>, member: AgentRecord) {
        let blocked = |r: &AgentRecord| {
            r.resume_blocked
                .as_ref()
                .is_some_and(|b| b.reason == ResumeBlockedReason::BudgetExhausted)
        };
        if !blocked(&member) || self.budget_spent(&member).is_some() {
            return;
        }
        let Ok(handle) = self.handle(&member) else {
            return;
        };
        {
            let _transition = handle.transition.lock().await;
            let Ok(Some(mut fresh)) = self.store.get_agent(member.id) else {
                return;
            };
            if handle.is_running() || !blocked(&fresh) {
                return;
            }
            fresh.resume_blocked = None;
            fresh.updated_at_ms = now_ms();
            if let Err(e) = self.store.put_agent_durable(&fresh).await {
                tracing::warn!(agent = %member.id, error = %e, "cannot clear the budget block");
                return;
            }
        }
        tracing::info!(agent = %member.id, "its budget allows it again; continuing");
        if let Err(e) = self.revive(member.clone()).await {
            tracing::warn!(agent = %member.id, error = %e, "cannot continue {}", short(&member));
        }
    }
}
