//! What tokens cost: a price table (built-in list prices of known models,
//! overridden or extended by `[prices."<scheme>:<model prefix>"]` in the
//! config) and the cost of a usage with and without the prompt cache.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::domain::Usage;
use crate::model::CacheTtl;

/// USD per million tokens, as providers list them. Cache prices default
/// to the provider's rule when not given (Anthropic: a write is 1.25× the
/// input price, 2× with the 1-hour TTL; a read is 0.1×).
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(try_from = "RawPrice")]
pub struct Price {
    pub input: f64,
    pub output: f64,
    pub cache_write: Option<f64>,
    pub cache_read: Option<f64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPrice {
    input: f64,
    output: f64,
    cache_write: Option<f64>,
    cache_read: Option<f64>,
}

impl TryFrom<RawPrice> for Price {
    type Error = String;

    fn try_from(r: RawPrice) -> Result<Price, String> {
        let fields = [
            ("input", Some(r.input)),
            ("output", Some(r.output)),
            ("cache_write", r.cache_write),
            ("cache_read", r.cache_read),
        ];
        for (name, value) in fields {
            if let Some(v) = value
                && !(v.is_finite() && v >= 0.0)
            {
                return Err(format!(
                    "price `{name}` must be a non-negative number of USD per million tokens, not {v}"
                ));
            }
        }
        Ok(Price {
            input: r.input,
            output: r.output,
            cache_write: r.cache_write,
            cache_read: r.cache_read,
        })
    }
}

impl Price {
    const fn list(input: f64, output: f64) -> Price {
        Price {
            input,
            output,
            cache_write: None,
            cache_read: None,
        }
    }

    const fn with_cached_input(self, cache_read: f64) -> Price {
        Price {
            cache_read: Some(cache_read),
            cache_write: Some(0.0),
            ..self
        }
    }
}

/// List prices (USD per million tokens) known when this version was made.
/// Keys are `<scheme>:<model>`; a model matches its key exactly or with a
/// snapshot suffix (`-20250929`, `-2024-08-06`, `-latest`), so a model of
/// another size (`gpt-4.1-nano` is not `gpt-4.1`) is not priced as this one.
const BUILT_IN: &[(&str, Price)] = &[
    ("anthropic:claude-opus-4-5", Price::list(5.0, 25.0)),
    ("anthropic:claude-opus-4-1", Price::list(15.0, 75.0)),
    ("anthropic:claude-opus-4", Price::list(15.0, 75.0)),
    ("anthropic:claude-sonnet-4-5", Price::list(3.0, 15.0)),
    ("anthropic:claude-sonnet-4", Price::list(3.0, 15.0)),
    ("anthropic:claude-3-7-sonnet", Price::list(3.0, 15.0)),
    ("anthropic:claude-3-5-sonnet", Price::list(3.0, 15.0)),
    ("anthropic:claude-haiku-4-5", Price::list(1.0, 5.0)),
    ("anthropic:claude-3-5-haiku", Price::list(0.8, 4.0)),
    ("anthropic:claude-3-haiku", Price::list(0.25, 1.25)),
    (
        "openai:gpt-4o",
        Price::list(2.5, 10.0).with_cached_input(1.25),
    ),
    (
        "openai:gpt-4o-2024-05-13",
        Price::list(5.0, 15.0).with_cached_input(5.0),
    ),
    (
        "openai:gpt-4o-mini",
        Price::list(0.15, 0.6).with_cached_input(0.075),
    ),
    (
        "openai:gpt-4.1",
        Price::list(2.0, 8.0).with_cached_input(0.5),
    ),
    (
        "openai:gpt-4.1-mini",
        Price::list(0.4, 1.6).with_cached_input(0.1),
    ),
    (
        "openai:gpt-4.1-nano",
        Price::list(0.1, 0.4).with_cached_input(0.025),
    ),
    (
        "openai:gpt-5",
        Price::list(1.25, 10.0).with_cached_input(0.125),
    ),
    (
        "openai:gpt-5-mini",
        Price::list(0.25, 2.0).with_cached_input(0.025),
    ),
    (
        "openai:gpt-5-nano",
        Price::list(0.05, 0.4).with_cached_input(0.005),
    ),
    ("openai:o3", Price::list(2.0, 8.0).with_cached_input(0.5)),
    (
        "openai:o3-mini",
        Price::list(1.1, 4.4).with_cached_input(0.55),
    ),
    (
        "openai:o4-mini",
        Price::list(1.1, 4.4).with_cached_input(0.275),
    ),
];

/// Whether `model` is the model `key` names: the same, or the same with a
/// snapshot suffix; a key ending in `*` (from the config) matches every
/// model that starts with what comes before it.
fn names(key: &str, model: &str) -> bool {
    if let Some(prefix) = key.strip_suffix('*') {
        return model.starts_with(prefix);
    }
    let Some(rest) = model.strip_prefix(key) else {
        return false;
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    match rest.strip_prefix('-') {
        None => rest.is_empty(),
        Some("latest") => true,
        Some(date) => {
            let parts: Vec<&str> = date.split('-').collect();
            match parts.as_slice() {
                [d] => d.len() == 8 && digits(d),
                [y, m, d] => {
                    y.len() == 4
                        && m.len() == 2
                        && d.len() == 2
                        && [y, m, d].iter().all(|p| digits(p))
                }
                _ => false,
            }
        }
    }
}

/// A price with every cache price decided.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rates {
    pub input: f64,
    pub output: f64,
    pub cache_write: f64,
    pub cache_read: f64,
}

/// The cost of some usage, in USD.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Cost {
    pub usd: f64,
    /// The same tokens with no prompt cache: every input token at the
    /// input price.
    pub without_cache_usd: f64,
}

impl Cost {
    pub fn add(&mut self, other: Cost) {
        self.usd += other.usd;
        self.without_cache_usd += other.without_cache_usd;
    }
}

impl Rates {
    pub fn cost(&self, u: &Usage) -> Cost {
        let per = |tokens: u64, rate: f64| tokens as f64 * rate / 1_000_000.0;
        let all_input = u.input_tokens + u.cache_read_input_tokens + u.cache_creation_input_tokens;
        Cost {
            usd: per(u.input_tokens, self.input)
                + per(u.output_tokens, self.output)
                + per(u.cache_read_input_tokens, self.cache_read)
                + per(u.cache_creation_input_tokens, self.cache_write),
            without_cache_usd: per(all_input, self.input) + per(u.output_tokens, self.output),
        }
    }
}

/// Prices by model, built once from the built-in list and the config (which
/// wins). The longest matching key decides.
#[derive(Debug, Clone)]
pub struct PriceTable {
    /// Longest key first.
    entries: Vec<(String, Price)>,
    /// Anthropic's write multiplier for the configured cache TTL.
    anthropic_write: f64,
}

impl PriceTable {
    pub fn new(overrides: &BTreeMap<String, Price>, anthropic_ttl: CacheTtl) -> PriceTable {
        let mut map: BTreeMap<String, Price> =
            BUILT_IN.iter().map(|(k, p)| (k.to_string(), *p)).collect();
        map.extend(overrides.iter().map(|(k, p)| (k.clone(), *p)));
        let mut entries: Vec<(String, Price)> = map.into_iter().collect();
        entries.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then(a.0.cmp(&b.0)));
        PriceTable {
            entries,
            anthropic_write: match anthropic_ttl {
                CacheTtl::FiveMinutes => 1.25,
                CacheTtl::OneHour => 2.0,
            },
        }
    }

    /// The rates of `model` (`<scheme>:<name>`), if it has a price.
    pub fn rates(&self, model: &str) -> Option<Rates> {
        let (_, p) = self.entries.iter().find(|(k, _)| names(k, model))?;
        Some(Rates {
            input: p.input,
            output: p.output,
            cache_write: p.cache_write.unwrap_or(p.input * self.anthropic_write),
            cache_read: p.cache_read.unwrap_or(p.input * 0.1),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(input: u64, output: u64, read: u64, write: u64) -> Usage {
        Usage {
            input_tokens: input,
            output_tokens: output,
            cache_read_input_tokens: read,
            cache_creation_input_tokens: write,
        }
    }

    #[test]
    fn models_match_their_own_key_and_cache_prices_follow_the_providers_rules() {
        let table = PriceTable::new(&BTreeMap::new(), CacheTtl::FiveMinutes);
        let input = |model: &str| table.rates(model).map(|r| r.input);
        assert_eq!(input("anthropic:claude-opus-4-5-20251101"), Some(5.0));
        assert_eq!(input("anthropic:claude-opus-4-1"), Some(15.0));
        assert_eq!(input("anthropic:claude-sonnet-4-5-20250929"), Some(3.0));
        assert_eq!(input("openai:gpt-4o-2024-08-06"), Some(2.5));
        assert_eq!(input("openai:gpt-4o-2024-05-13"), Some(5.0));
        assert_eq!(input("openai:gpt-4.1-nano"), Some(0.1));
        assert_eq!(input("openai:gpt-5-latest"), Some(1.25));
        // Other models are not priced as a model whose name they extend.
        for unknown in [
            "anthropic:claude-opus-4-6",
            "openai:o3-pro",
            "openai:gpt-4.1-turbo",
            "openai:gpt-5-2025",
            "scripted:/tmp/s.json",
            "anthropic:claude-test",
        ] {
            assert_eq!(input(unknown), None, "{unknown}");
        }
        let sonnet = table.rates("anthropic:claude-sonnet-4-5").unwrap();
        assert_eq!(sonnet.cache_write, 3.75);
        assert!((sonnet.cache_read - 0.3).abs() < 1e-12);
        let mini = table.rates("openai:gpt-4o-mini-2024-07-18").unwrap();
        assert_eq!((mini.cache_read, mini.cache_write), (0.075, 0.0));
        let hour = PriceTable::new(&BTreeMap::new(), CacheTtl::OneHour);
        assert_eq!(
            hour.rates("anthropic:claude-sonnet-4").unwrap().cache_write,
            6.0
        );
    }

    #[test]
    fn the_config_overrides_and_extends_the_table() {
        let mut overrides = BTreeMap::new();
        overrides.insert("anthropic:claude-test".to_string(), Price::list(2.0, 4.0));
        overrides.insert(
            "anthropic:claude-sonnet-4-5".to_string(),
            Price::list(1.0, 1.0),
        );
        overrides.insert("openai:local-*".to_string(), Price::list(0.0, 0.0));
        let table = PriceTable::new(&overrides, CacheTtl::FiveMinutes);
        assert_eq!(table.rates("anthropic:claude-test").unwrap().input, 2.0);
        assert!(table.rates("anthropic:claude-test-x").is_none());
        assert_eq!(
            table.rates("anthropic:claude-sonnet-4-5").unwrap().input,
            1.0
        );
        assert_eq!(table.rates("openai:local-llama-70b").unwrap().output, 0.0);
    }

    #[test]
    fn cost_with_and_without_the_cache() {
        let rates = Rates {
            input: 3.0,
            output: 15.0,
            cache_write: 3.75,
            cache_read: 0.3,
        };
        let cost = rates.cost(&usage(1_000_000, 1_000_000, 10_000_000, 2_000_000));
        assert!((cost.usd - (3.0 + 15.0 + 3.0 + 7.5)).abs() < 1e-9);
        assert!((cost.without_cache_usd - (13.0 * 3.0 + 15.0)).abs() < 1e-9);
    }

    #[test]
    fn bad_prices_are_refused() {
        for text in [
            "input = -1.0\noutput = 1.0",
            "input = 1.0\noutput = nan",
            "input = 1.0",
            "input = 1.0\noutput = 1.0\nextra = 2.0",
        ] {
            assert!(toml::from_str::<Price>(text).is_err(), "{text}");
        }
        let ok: Price = toml::from_str("input = 1.0\noutput = 2.0\ncache_read = 0.1").unwrap();
        assert_eq!(ok.cache_read, Some(0.1));
    }
}
