//! What a confined agent's tools may reach (DESIGN §14, docs/network.md):
//! the network mode, the host patterns of an allow list, and the host and
//! port a connection asks for.

use std::fmt;

use super::text::quote;

/// How a confined agent's tools reach the network.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum NetworkMode {
    /// A network namespace with only loopback; HTTP and HTTPS through the
    /// daemon's proxy, to allowed hosts (or asked).
    #[default]
    Proxy,
    /// The machine's network, directly.
    Full,
    /// No TCP at all (Landlock and seccomp).
    None,
}

impl NetworkMode {
    pub const ALL: [NetworkMode; 3] = [NetworkMode::Proxy, NetworkMode::Full, NetworkMode::None];

    pub fn parse(text: &str) -> Option<NetworkMode> {
        Self::ALL.into_iter().find(|m| m.as_str() == text)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            NetworkMode::Proxy => "proxy",
            NetworkMode::Full => "full",
            NetworkMode::None => "none",
        }
    }

    /// The stricter of two modes: none, then proxy, then full.
    pub fn stricter(self, other: NetworkMode) -> NetworkMode {
        use NetworkMode::*;
        match (self, other) {
            (None, _) | (_, None) => None,
            (Proxy, _) | (_, Proxy) => Proxy,
            (Full, Full) => Full,
        }
    }
}

impl fmt::Display for NetworkMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The longest host name DNS allows.
const MAX_HOST: usize = 253;

/// A host and port a connection is for, as the client named it (a name,
/// or an address literal; IPv6 without brackets). Names are lower-case.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NetTarget {
    host: String,
    port: u16,
}

impl NetTarget {
    /// `host` must be a DNS name (letters, digits, `-`, `.`, `_`) or an
    /// IP address literal; anything else (spaces, `@`, `/`, control
    /// characters) is refused.
    pub fn new(host: &str, port: u16) -> Result<NetTarget, String> {
        let host = host
            .strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .unwrap_or(host);
        if port == 0 {
            return Err("port 0 names no service".to_string());
        }
        if host.parse::<std::net::IpAddr>().is_ok() {
            return Ok(NetTarget {
                host: host.to_ascii_lowercase(),
                port,
            });
        }
        valid_name(host)?;
        Ok(NetTarget {
            host: host.trim_end_matches('.').to_ascii_lowercase(),
            port,
        })
    }

    /// `host:port`, `[v6]:port`, or a bare host with `default_port`.
    pub fn parse(text: &str, default_port: u16) -> Result<NetTarget, String> {
        let (host, port) = split_host_port(text)?;
        let port = match port {
            Some(p) => p,
            None => default_port,
        };
        NetTarget::new(host, port)
    }

    pub fn host(&self) -> &str {
        &self.host
    }

    pub fn port(&self) -> u16 {
        self.port
    }
}

impl fmt::Display for NetTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.host.contains(':') {
            write!(f, "[{}]:{}", self.host, self.port)
        } else {
            write!(f, "{}:{}", self.host, self.port)
        }
    }
}

fn valid_name(host: &str) -> Result<(), String> {
    let trimmed = host.trim_end_matches('.');
    let ok = !trimmed.is_empty()
        && trimmed.len() <= MAX_HOST
        && trimmed.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        });
    if ok {
        Ok(())
    } else {
        Err(format!("'{}' is not a host name", quote(host)))
    }
}

/// Splits `host[:port]` (IPv6 in brackets).
fn split_host_port(text: &str) -> Result<(&str, Option<u16>), String> {
    let bad_port = || {
        format!(
            "'{}': the port is not a number from 1 to 65535",
            quote(text)
        )
    };
    if let Some(rest) = text.strip_prefix('[') {
        let Some((host, after)) = rest.split_once(']') else {
            return Err(format!("'{}': an unclosed '['", quote(text)));
        };
        return match after {
            "" => Ok((host, None)),
            _ => match after.strip_prefix(':').map(str::parse::<u16>) {
                Some(Ok(p)) => Ok((host, Some(p))),
                _ => Err(bad_port()),
            },
        };
    }
    match text.rsplit_once(':') {
        // A bare IPv6 address has more than one ':'.
        Some((host, _)) if host.contains(':') => Ok((text, None)),
        Some((host, port)) => match port.parse::<u16>() {
            Ok(p) => Ok((host, Some(p))),
            Err(_) => Err(bad_port()),
        },
        None => Ok((text, None)),
    }
}

/// One entry of an allow list: `host`, `*.domain` (the domain's
/// subdomains, not the domain itself), each with `:port` or any port.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct HostPattern {
    /// Lower-case, without the `*.`.
    host: String,
    wildcard: bool,
    port: Option<u16>,
}

impl HostPattern {
    pub fn parse(text: &str) -> Result<HostPattern, String> {
        let text = text.trim();
        let (wildcard, rest) = match text.strip_prefix("*.") {
            Some(rest) => (true, rest),
            None => (false, text),
        };
        let (host, port) = split_host_port(rest)?;
        if port == Some(0) {
            return Err(format!("'{}': port 0 names no service", quote(text)));
        }
        let ip = host.parse::<std::net::IpAddr>().is_ok();
        if wildcard && ip {
            return Err(format!(
                "'{}': a wildcard takes a domain, not an address",
                quote(text)
            ));
        }
        if !ip {
            valid_name(host).map_err(|_| {
                format!(
                    "'{}' is not a host pattern: use host, *.domain, host:port or [v6]:port",
                    quote(text)
                )
            })?;
        }
        Ok(HostPattern {
            host: host.trim_end_matches('.').to_ascii_lowercase(),
            wildcard,
            port,
        })
    }

    /// The pattern that allows exactly `target`.
    pub fn exact(target: &NetTarget) -> HostPattern {
        HostPattern {
            host: target.host.clone(),
            wildcard: false,
            port: Some(target.port),
        }
    }

    pub fn matches(&self, target: &NetTarget) -> bool {
        if self.port.is_some_and(|p| p != target.port) {
            return false;
        }
        if self.wildcard {
            target
                .host
                .strip_suffix(self.host.as_str())
                .is_some_and(|head| head.len() > 1 && head.ends_with('.'))
        } else {
            target.host == self.host
        }
    }
}

impl fmt::Display for HostPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.wildcard {
            f.write_str("*.")?;
        }
        let v6 = self.host.contains(':');
        match (self.port, v6) {
            (Some(p), true) => write!(f, "[{}]:{p}", self.host),
            (Some(p), false) => write!(f, "{}:{p}", self.host),
            (None, true) => write!(f, "[{}]", self.host),
            (None, false) => f.write_str(&self.host),
        }
    }
}

/// What the proxy did with a connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConnectionDecision {
    Allowed,
    Refused,
}

/// One connection an agent's tool asked its proxy for: recorded durably
/// when it is decided, before a byte goes through, and again when it
/// closes (with its byte counts).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConnectionRecord {
    /// The agent's own sequence, from 0.
    pub seq: u64,
    pub agent: super::AgentId,
    pub target: NetTarget,
    /// "CONNECT", or a plain request's method.
    pub method: String,
    pub decision: ConnectionDecision,
    pub reason: String,
    pub bytes_sent: u64,
    pub bytes_received: u64,
    pub started_at_ms: i64,
    /// None while open, and for a refused one.
    pub ended_at_ms: Option<i64>,
    /// Allowed, but the host could not be resolved or reached.
    pub error: Option<String>,
}

impl ConnectionRecord {
    /// Open when the daemon stopped: its counts are lost.
    pub fn cut_off(&self) -> bool {
        self.decision == ConnectionDecision::Allowed && self.ended_at_ms.is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(host: &str, port: u16) -> NetTarget {
        NetTarget::new(host, port).unwrap()
    }

    #[test]
    fn modes_parse_and_the_stricter_wins() {
        for m in NetworkMode::ALL {
            assert_eq!(NetworkMode::parse(m.as_str()), Some(m));
        }
        assert_eq!(NetworkMode::parse("open"), None);
        assert_eq!(
            NetworkMode::Full.stricter(NetworkMode::Proxy),
            NetworkMode::Proxy
        );
        assert_eq!(
            NetworkMode::Proxy.stricter(NetworkMode::None),
            NetworkMode::None
        );
        assert_eq!(
            NetworkMode::Full.stricter(NetworkMode::Full),
            NetworkMode::Full
        );
    }

    #[test]
    fn patterns_match_hosts_subdomains_and_ports() {
        let exact = HostPattern::parse("Crates.io").unwrap();
        assert!(exact.matches(&t("crates.io", 443)));
        assert!(exact.matches(&t("crates.io", 80)));
        assert!(!exact.matches(&t("static.crates.io", 443)));
        assert!(!exact.matches(&t("evilcrates.io", 443)));
        let wild = HostPattern::parse("*.npmjs.org").unwrap();
        assert!(wild.matches(&t("registry.npmjs.org", 443)));
        assert!(!wild.matches(&t("npmjs.org", 443)));
        assert!(!wild.matches(&t("evilnpmjs.org", 443)));
        let port = HostPattern::parse("127.0.0.1:8080").unwrap();
        assert!(port.matches(&t("127.0.0.1", 8080)));
        assert!(!port.matches(&t("127.0.0.1", 8081)));
        let v6 = HostPattern::parse("[::1]:9").unwrap();
        assert!(v6.matches(&t("::1", 9)));
        assert_eq!(v6.to_string(), "[::1]:9");
        assert_eq!(wild.to_string(), "*.npmjs.org");
        assert_eq!(HostPattern::exact(&t("a.b", 443)).to_string(), "a.b:443");
    }

    #[test]
    fn bad_patterns_and_targets_are_refused() {
        for bad in [
            "",
            "*.",
            "a b",
            "x/y",
            "host:99999",
            "host:",
            "*.10.0.0.1",
            "[::1",
        ] {
            assert!(HostPattern::parse(bad).is_err(), "{bad:?} was accepted");
        }
        assert!(NetTarget::new("a\u{1b}[2J", 443).is_err());
        assert!(NetTarget::new("user@host", 443).is_err());
        assert!(NetTarget::new("host", 0).is_err());
        assert_eq!(NetTarget::parse("[::1]:8080", 443).unwrap().port(), 8080);
        assert_eq!(
            NetTarget::parse("Example.ORG.", 443).unwrap(),
            t("example.org", 443)
        );
        assert_eq!(NetTarget::parse("example.org", 80).unwrap().port(), 80);
        assert_eq!(t("::1", 80).to_string(), "[::1]:80");
    }
}
