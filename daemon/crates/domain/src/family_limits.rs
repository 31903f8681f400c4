//! Limits on how a family of agents fans out (DESIGN §24): how many of an
//! agent's descendants run at once, how deep they nest under it, and how
//! many model requests it and its descendants have in flight at once.
//! Set by config.toml for every family (its root holds them) and by an
//! agent type for the agent of that type and its descendants; where
//! several hold, each does (the tightest decides).

use std::fmt;

/// The most any limit may be set to: more is no limit at all.
pub const MAX_LIMIT: u32 = 10_000;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FamilyLimits {
    /// Descendants running at once; more wait as `pending`, in order.
    pub max_children: Option<u32>,
    /// Levels of descendants below the holder (1: children only, 0: none).
    pub max_depth: Option<u32>,
    /// Model requests in flight at once across the holder and every
    /// descendant; more wait for one to end.
    pub max_concurrent_requests: Option<u32>,
}

impl FamilyLimits {
    /// Limits as written; refused when one is out of range (`max_children`
    /// and `max_concurrent_requests` at least 1, none above `MAX_LIMIT`).
    pub fn new(
        max_children: Option<u32>,
        max_depth: Option<u32>,
        max_concurrent_requests: Option<u32>,
    ) -> Result<FamilyLimits, String> {
        for (name, value, least) in [
            ("max_children", max_children, 1),
            ("max_depth", max_depth, 0),
            ("max_concurrent_requests", max_concurrent_requests, 1),
        ] {
            if let Some(v) = value
                && !(least..=MAX_LIMIT).contains(&v)
            {
                return Err(format!(
                    "{name} must be from {least} to {MAX_LIMIT}; {v} is not"
                ));
            }
        }
        Ok(FamilyLimits {
            max_children,
            max_depth,
            max_concurrent_requests,
        })
    }

    pub fn is_empty(&self) -> bool {
        *self == FamilyLimits::default()
    }
}

impl fmt::Display for FamilyLimits {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = [
            ("max_children", self.max_children),
            ("max_depth", self.max_depth),
            ("max_concurrent_requests", self.max_concurrent_requests),
        ]
        .into_iter()
        .filter_map(|(name, v)| v.map(|v| format!("{name} = {v}")))
        .collect();
        if parts.is_empty() {
            f.write_str("none")
        } else {
            f.write_str(&parts.join(", "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_out_of_range_are_refused_with_their_name() {
        assert!(
            FamilyLimits::new(Some(0), None, None)
                .unwrap_err()
                .contains("max_children")
        );
        assert!(
            FamilyLimits::new(None, None, Some(0))
                .unwrap_err()
                .contains("max_concurrent_requests")
        );
        assert!(
            FamilyLimits::new(None, Some(MAX_LIMIT + 1), None)
                .unwrap_err()
                .contains("max_depth")
        );
        let l = FamilyLimits::new(Some(2), Some(0), Some(3)).unwrap();
        assert_eq!(
            l.to_string(),
            "max_children = 2, max_depth = 0, max_concurrent_requests = 3"
        );
        assert!(!l.is_empty());
        assert!(FamilyLimits::default().is_empty());
    }
}
