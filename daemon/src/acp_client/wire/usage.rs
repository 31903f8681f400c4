//! What agentd keeps of an ACP `usage_update`: the agent's context fill
//! and the session's cumulative cost in dollars.

use serde_json::Value;

use crate::domain::ContextFill;

/// What a `usage_update` says agentd keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UsageReport {
    /// Its context: tokens used of its window's size. None when it gives
    /// no window (ACP requires one).
    pub context: Option<ContextFill>,
    /// The session's cumulative cost in micro-dollars; None when it gives
    /// none, or not in USD (agentd counts dollars only).
    pub cost_micros: Option<u64>,
}

impl UsageReport {
    pub(super) fn read(u: &Value) -> Result<UsageReport, String> {
        let context = match (u["used"].as_u64(), u["size"].as_u64()) {
            (Some(used), Some(size)) if size > 0 => Some(ContextFill { used, size }),
            _ => None,
        };
        Ok(UsageReport {
            context,
            cost_micros: cost_micros(&u["cost"])?,
        })
    }
}

/// The most a session's reported cost may be: more is not a cost.
const MAX_COST_USD: f64 = 1e9;

/// A `usage_update`'s `cost` in micro-dollars; None when it has none or
/// gives it in another currency (agentd counts dollars only).
fn cost_micros(cost: &Value) -> Result<Option<u64>, String> {
    if cost.is_null() {
        return Ok(None);
    }
    let currency = cost["currency"].as_str().unwrap_or("");
    if !currency.eq_ignore_ascii_case("USD") {
        return Ok(None);
    }
    match cost["amount"].as_f64() {
        Some(amount) if (0.0..=MAX_COST_USD).contains(&amount) => {
            Ok(Some((amount * 1_000_000.0).round() as u64))
        }
        _ => Err(format!(
            "usage_update cost amount `{}` is not a cost in dollars",
            crate::error::quote(&cost["amount"].to_string())
        )),
    }
}
