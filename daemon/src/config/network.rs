//! `network` in config.toml (DESIGN §22): the mode alone
//! (`network = "proxy"`), or a table that also lists the hosts every
//! confined agent's proxy allows without asking:
//!
//! ```toml
//! [network]
//! mode = "proxy"
//! allow = ["example.org", "*.corp.example", "10.0.0.5:8443"]
//! ```
//!
//! The old form, `network = true` or `false`, still reads: `true` is
//! `full` (what it meant), `false` is `none`.

use serde::Deserialize;

use crate::domain::{HostPattern, NetworkMode};

/// The `network` setting.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NetworkSetting {
    /// How confined tools reach the network unless an agent asks for
    /// another mode.
    pub mode: NetworkMode,
    /// Allowed by every agent's proxy.
    pub allow: Vec<HostPattern>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Raw {
    Old(bool),
    Mode(String),
    Table(Table),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Table {
    mode: Option<String>,
    #[serde(default)]
    allow: Vec<String>,
}

const SHAPE: &str = "network is \"proxy\", \"full\" or \"none\", or a table with mode and allow";

fn mode<E: serde::de::Error>(text: &str) -> Result<NetworkMode, E> {
    NetworkMode::parse(text).ok_or_else(|| E::custom(SHAPE))
}

impl<'de> Deserialize<'de> for NetworkSetting {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<NetworkSetting, D::Error> {
        let raw = Raw::deserialize(d).map_err(|_| serde::de::Error::custom(SHAPE))?;
        match raw {
            Raw::Old(true) => Ok(NetworkSetting {
                mode: NetworkMode::Full,
                allow: Vec::new(),
            }),
            Raw::Old(false) => Ok(NetworkSetting {
                mode: NetworkMode::None,
                allow: Vec::new(),
            }),
            Raw::Mode(m) => Ok(NetworkSetting {
                mode: mode(&m)?,
                allow: Vec::new(),
            }),
            Raw::Table(t) => Ok(NetworkSetting {
                mode: t.mode.as_deref().map(mode).transpose()?.unwrap_or_default(),
                allow: t
                    .allow
                    .iter()
                    .map(|p| {
                        HostPattern::parse(p).map_err(|why| {
                            serde::de::Error::custom(format!("network.allow: {why}"))
                        })
                    })
                    .collect::<Result<_, _>>()?,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Deserialize)]
    struct Wrap {
        network: NetworkSetting,
    }

    fn read(text: &str) -> Result<NetworkSetting, String> {
        toml::from_str::<Wrap>(text)
            .map(|w| w.network)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn every_form_reads_and_bad_ones_say_what_is_wanted() {
        assert_eq!(read("network = true").unwrap().mode, NetworkMode::Full);
        assert_eq!(read("network = false").unwrap().mode, NetworkMode::None);
        assert_eq!(
            read("network = \"proxy\"").unwrap().mode,
            NetworkMode::Proxy
        );
        let t = read("[network]\nallow = [\"*.corp.example\", \"h:8443\"]").unwrap();
        assert_eq!(t.mode, NetworkMode::Proxy);
        assert_eq!(t.allow.len(), 2);
        assert!(
            read("network = \"open\"")
                .unwrap_err()
                .contains("\"proxy\"")
        );
        let bad = read("[network]\nallow = [\"a b\"]").unwrap_err();
        assert!(bad.contains("network.allow"), "{bad}");
        assert!(read("[network]\nallowed = []").is_err());
    }
}
