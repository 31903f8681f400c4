//! How an agent's network reads (`show`, `list --json`, `network`), and
//! its proxy connections as lines.

use agentd_shared::proto as pb;
use agentd_shared::visible;

pub fn mode_name(mode: i32) -> &'static str {
    match pb::NetworkMode::try_from(mode).unwrap_or_default() {
        pb::NetworkMode::Proxy => "proxy",
        pb::NetworkMode::Full => "full",
        pb::NetworkMode::None => "none",
        pb::NetworkMode::Unspecified => "unknown",
    }
}

/// What an agent's tools may reach, in a line.
pub fn line(a: &pb::Agent) -> String {
    match pb::NetworkMode::try_from(a.network).unwrap_or_default() {
        pb::NetworkMode::Proxy => {
            let mut line = "proxy: HTTP and HTTPS through agentd's proxy, to allowed hosts (others asked; `agentctl network` lists them)".to_string();
            if !a.network_allow.is_empty() {
                let hosts: Vec<String> = a
                    .network_allow
                    .iter()
                    .map(|h| visible::line(h).into_owned())
                    .collect();
                line.push_str(&format!("; also allowed: {}", hosts.join(", ")));
            }
            line
        }
        pb::NetworkMode::Full => "full: the machine's network, directly (nothing recorded)".into(),
        pb::NetworkMode::None => "none: no TCP connections or listening".into(),
        pb::NetworkMode::Unspecified => "unknown".into(),
    }
}

pub fn decision_name(decision: i32) -> &'static str {
    match pb::ConnectionDecision::try_from(decision).unwrap_or_default() {
        pb::ConnectionDecision::Allowed => "allowed",
        pb::ConnectionDecision::Refused => "refused",
        pb::ConnectionDecision::Unspecified => "unknown",
    }
}

/// A connection in a line: time, decision, method, host:port, bytes, why.
pub fn connection_line(c: &pb::NetworkConnection) -> String {
    let decision = decision_name(c.decision);
    let host = visible::line(&c.host);
    let target = if host.contains(':') {
        format!("[{host}]:{}", c.port)
    } else {
        format!("{host}:{}", c.port)
    };
    let mut line = format!(
        "{} {decision:<7} {} {target}",
        super::render::rfc3339(c.started_at.as_ref()),
        visible::line(&c.method),
    );
    if c.decision == pb::ConnectionDecision::Allowed as i32 {
        if c.ended_at.is_some() {
            line.push_str(&format!(
                " ({} B sent, {} B received)",
                c.bytes_sent, c.bytes_received
            ));
        } else if c.cut_off {
            line.push_str(" (cut off when agentd stopped)");
        } else {
            line.push_str(" (open)");
        }
    }
    line.push_str(&format!(" — {}", visible::line(&c.reason)));
    if !c.error.is_empty() {
        line.push_str(&format!("; {}", visible::line(&c.error)));
    }
    line
}
