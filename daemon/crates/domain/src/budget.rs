//! A cap on what an agent and every descendant spend (DESIGN §24): in USD,
//! priced as `usage` prices tokens, and/or in tokens (for models without a
//! price). Checked before every model request of every agent of the
//! family; a family at its cap sends no more requests.

use std::fmt;

/// Micro-dollars in a dollar: budgets are kept as whole micro-dollars.
pub const MICROS_PER_USD: f64 = 1_000_000.0;

/// The most a budget may be: a million dollars.
pub const MAX_USD: f64 = 1_000_000.0;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Budget {
    /// The USD cap, in micro-dollars.
    pub usd_micros: Option<u64>,
    /// The cap on tokens (input, output and cache, as `usage` counts).
    pub tokens: Option<u64>,
}

impl Budget {
    /// A budget of `usd` dollars and/or `tokens`; refused when a value is
    /// not a finite positive amount within the limit, or neither is given.
    pub fn new(usd: Option<f64>, tokens: Option<u64>) -> Result<Budget, String> {
        let usd_micros = match usd {
            None => None,
            Some(u) if u.is_finite() && u > 0.0 && u <= MAX_USD => {
                Some((u * MICROS_PER_USD).round() as u64)
            }
            Some(u) => {
                return Err(format!(
                    "a budget is a positive number of dollars up to {MAX_USD}; {u} is not"
                ));
            }
        };
        if tokens == Some(0) {
            return Err("a token budget is a positive number of tokens".into());
        }
        if usd_micros.is_none() && tokens.is_none() {
            return Err("a budget needs dollars, tokens or both".into());
        }
        Ok(Budget { usd_micros, tokens })
    }

    pub fn usd(&self) -> Option<f64> {
        self.usd_micros.map(|m| m as f64 / MICROS_PER_USD)
    }

    /// Why `spent` has reached the cap, if it has.
    pub fn reached(&self, spent: &Spent) -> Option<String> {
        if let Some(cap) = self.usd_micros
            && spent.usd_micros >= cap
        {
            return Some(format!(
                "spent ${:.4} of a ${:.4} budget",
                spent.usd_micros as f64 / MICROS_PER_USD,
                cap as f64 / MICROS_PER_USD
            ));
        }
        if let Some(cap) = self.tokens
            && spent.tokens >= cap
        {
            return Some(format!("spent {} of a {cap}-token budget", spent.tokens));
        }
        None
    }
}

impl fmt::Display for Budget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.usd(), self.tokens) {
            (Some(u), Some(t)) => write!(f, "${u:.2} and {t} tokens"),
            (Some(u), None) => write!(f, "${u:.2}"),
            (None, Some(t)) => write!(f, "{t} tokens"),
            (None, None) => f.write_str("none"),
        }
    }
}

/// What a family spent.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Spent {
    pub usd_micros: u64,
    pub tokens: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_budget_is_positive_and_reached_at_its_cap() {
        assert!(Budget::new(None, None).is_err());
        assert!(Budget::new(Some(0.0), None).is_err());
        assert!(Budget::new(Some(f64::NAN), None).is_err());
        assert!(Budget::new(Some(-1.0), None).is_err());
        assert!(Budget::new(Some(2e6), None).is_err());
        assert!(Budget::new(None, Some(0)).is_err());
        let b = Budget::new(Some(0.25), Some(1000)).unwrap();
        assert_eq!(b.usd_micros, Some(250_000));
        let spent = |usd_micros, tokens| Spent { usd_micros, tokens };
        assert_eq!(b.reached(&spent(249_999, 999)), None);
        assert!(b.reached(&spent(250_000, 0)).unwrap().contains("$0.2500"));
        assert!(b.reached(&spent(0, 1000)).unwrap().contains("1000-token"));
        assert_eq!(b.to_string(), "$0.25 and 1000 tokens");
    }
}
