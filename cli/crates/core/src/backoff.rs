//! The growing pause between attempts to reach the daemon again, for
//! every client loop that reconnects (the ACP bridge's link, the
//! dashboard's): doubling from the first pause, never longer than the
//! longest.

use std::time::Duration;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pauses {
    /// The first pause.
    pub first: Duration,
    /// No pause is longer.
    pub longest: Duration,
}

impl Pauses {
    /// The pause after attempt `n` (from 0): doubling, capped.
    pub fn pause(&self, n: u32) -> Duration {
        self.first
            .saturating_mul(1u32.checked_shl(n.min(16)).unwrap_or(u32::MAX))
            .min(self.longest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pauses_double_up_to_the_longest() {
        let p = Pauses {
            first: Duration::from_millis(50),
            longest: Duration::from_secs(1),
        };
        let pauses: Vec<u128> = (0..8).map(|n| p.pause(n).as_millis()).collect();
        assert_eq!(pauses, vec![50, 100, 200, 400, 800, 1000, 1000, 1000]);
        assert_eq!(p.pause(u32::MAX), p.longest, "no overflow however long");
    }
}
