//! The hosts an external agent's network proxy allows (DESIGN §19, §22):
//! the model API of a built-in entry, the host of every `*_BASE_URL`
//! variable its entry's `env` sets (a gateway the person pointed it at),
//! and its entry's `network_allow`.

use super::external_agents::ExternalAgentDef;
use crate::domain::{HostPattern, NetTarget};

/// Each built-in entry's own hosts: its model API and its login.
const API_HOSTS: &[(&str, &[&str])] = &[
    (
        "claude-code",
        &[
            "api.anthropic.com:443",
            "console.anthropic.com:443",
            "claude.ai:443",
        ],
    ),
    (
        "codex",
        &[
            "api.openai.com:443",
            "auth.openai.com:443",
            "chatgpt.com:443",
        ],
    ),
    (
        "gemini",
        &[
            "generativelanguage.googleapis.com:443",
            "cloudcode-pa.googleapis.com:443",
            "oauth2.googleapis.com:443",
        ],
    ),
];

/// What `def`'s proxy allows besides the daemon's list, each with why.
pub fn allowed(def: &ExternalAgentDef) -> Vec<(HostPattern, String)> {
    let mut out = Vec::new();
    if def.built_in
        && let Some((_, hosts)) = API_HOSTS.iter().find(|(n, _)| *n == def.name.as_str())
    {
        out.extend(
            hosts
                .iter()
                .filter_map(|h| HostPattern::parse(h).ok())
                .map(|p| (p, format!("{}'s API", def.name))),
        );
    }
    for (var, value) in &def.env {
        if var.ends_with("_BASE_URL")
            && let Some(target) = url_target(value)
        {
            out.push((
                HostPattern::exact(&target),
                format!("[agents.{}] env {var}", def.name),
            ));
        }
    }
    out.extend(
        def.network_allow
            .iter()
            .map(|p| (p.clone(), format!("[agents.{}] network_allow", def.name))),
    );
    out
}

/// The host and port an http(s) URL names.
fn url_target(url: &str) -> Option<NetTarget> {
    let (rest, port) = if let Some(r) = url.strip_prefix("https://") {
        (r, 443)
    } else {
        (url.strip_prefix("http://")?, 80)
    };
    let authority = rest.split(['/', '?', '#']).next()?;
    let authority = authority.rsplit('@').next()?;
    NetTarget::parse(authority, port).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_urls_name_hosts_with_their_ports() {
        assert_eq!(
            url_target("http://127.0.0.1:4010/v1").unwrap().to_string(),
            "127.0.0.1:4010"
        );
        assert_eq!(
            url_target("https://u:p@gw.corp.example/x")
                .unwrap()
                .to_string(),
            "gw.corp.example:443"
        );
        assert!(url_target("ftp://x").is_none());
    }
}
