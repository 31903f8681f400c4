//! How an agent's plan is laid out on disk, inside its record (`codec`,
//! `StoredAgent` tag 34). Status numbers are on-disk format: never reuse
//! or renumber them; a number this agentd does not know is corrupt, never
//! read as a default.

use super::Corrupt;
use crate::domain::{PlanItem, PlanStatus};

#[derive(Clone, PartialEq, prost::Message)]
pub(super) struct StoredPlanItem {
    #[prost(string, tag = "1")]
    content: String,
    /// 1 pending, 2 in progress, 3 completed.
    #[prost(int32, tag = "2")]
    status: i32,
    #[prost(string, tag = "3")]
    active_form: String,
}

fn status_number(s: PlanStatus) -> i32 {
    match s {
        PlanStatus::Pending => 1,
        PlanStatus::InProgress => 2,
        PlanStatus::Completed => 3,
    }
}

pub(super) fn stored_plan(plan: &[PlanItem]) -> Vec<StoredPlanItem> {
    plan.iter()
        .map(|i| StoredPlanItem {
            content: i.content.clone(),
            status: status_number(i.status),
            active_form: i.active_form.clone(),
        })
        .collect()
}

pub(super) fn plan_of(stored: Vec<StoredPlanItem>) -> Result<Vec<PlanItem>, Corrupt> {
    stored
        .into_iter()
        .map(|s| {
            Ok(PlanItem {
                status: PlanStatus::ALL
                    .into_iter()
                    .find(|p| status_number(*p) == s.status)
                    .ok_or(Corrupt::Field("plan status"))?,
                content: s.content,
                active_form: s.active_form,
            })
        })
        .collect()
}

#[cfg(test)]
impl StoredPlanItem {
    /// Sets the stored status number, for tests of what a newer (or
    /// damaged) store may hold.
    pub(super) fn set_status(&mut self, n: i32) {
        self.status = n;
    }
}
