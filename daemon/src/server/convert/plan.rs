//! An agent's plan on the wire (`PlanItem`, `PlanUpdate`). Answers only:
//! no request carries a plan.

use agentd_shared::proto as pb;

use crate::domain::{PlanItem, PlanStatus};

fn status(s: PlanStatus) -> pb::PlanStatus {
    match s {
        PlanStatus::Pending => pb::PlanStatus::Pending,
        PlanStatus::InProgress => pb::PlanStatus::InProgress,
        PlanStatus::Completed => pb::PlanStatus::Completed,
    }
}

pub fn plan_items(plan: &[PlanItem]) -> Vec<pb::PlanItem> {
    plan.iter()
        .map(|i| pb::PlanItem {
            content: i.content.clone(),
            status: status(i.status) as i32,
            active_form: i.active_form.clone(),
        })
        .collect()
}

/// The whole plan after a change.
pub fn plan_update(plan: &[PlanItem]) -> pb::PlanUpdate {
    pb::PlanUpdate {
        items: plan_items(plan),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_status_has_its_own_wire_value() {
        let plan: Vec<PlanItem> = PlanStatus::ALL
            .into_iter()
            .map(|s| PlanItem {
                content: format!("do {s}"),
                status: s,
                active_form: format!("doing {s}"),
            })
            .collect();
        let wire = plan_update(&plan).items;
        let statuses: Vec<i32> = wire.iter().map(|i| i.status).collect();
        assert_eq!(
            statuses,
            [
                pb::PlanStatus::Pending as i32,
                pb::PlanStatus::InProgress as i32,
                pb::PlanStatus::Completed as i32
            ]
        );
        assert_eq!(wire[1].content, "do in_progress");
        assert_eq!(wire[1].active_form, "doing in_progress");
    }
}
