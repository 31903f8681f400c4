//! How a sandbox reads: an agent's, the daemon's default, the kernel's
//! Landlock and the containment of commands (`show`, `status`, `doctor`).

use agentd_shared::proto as pb;

pub fn name(mode: i32) -> &'static str {
    match pb::SandboxMode::try_from(mode).unwrap_or_default() {
        pb::SandboxMode::Unspecified => "unknown",
        pb::SandboxMode::WorkspaceWrite => "workspace-write",
        pb::SandboxMode::ReadOnly => "read-only",
        pb::SandboxMode::Off => "off (unconfined)",
    }
}

/// What an agent's tools may do, in a line.
pub fn line(a: &pb::Agent) -> String {
    let mode = if a.permission_mode == pb::PermissionMode::Plan as i32 {
        "read-only (plan mode)"
    } else {
        name(a.sandbox)
    };
    format!("{mode}, network {}", super::network::mode_name(a.network))
}

/// What confined tools may not read, in a line (`status`, `show`).
pub fn reads_line(s: &pb::DaemonStatus) -> String {
    let mut line = format!(
        "everything but {} denied paths (agentd's own directories, secret stores, sandbox.deny_read)",
        s.read_denied.len()
    );
    if !s.read_allowed.is_empty() {
        let allowed: Vec<String> = s
            .read_allowed
            .iter()
            .map(|p| agentd_shared::visible::line(p).into_owned())
            .collect();
        line.push_str(&format!(
            "; allowed back by sandbox.allow_read: {}",
            allowed.join(", ")
        ));
    }
    line
}

/// The kernel's Landlock, in a line.
pub fn landlock_line(abi: i32) -> String {
    if abi <= 0 {
        "none: sandboxed agents are refused (run them with --sandbox off)".to_string()
    } else if abi < 3 {
        format!(
            "ABI {abi}, too old to stop truncation: sandboxed agents are refused (ABI 3, Linux 6.2, is needed; or --sandbox off)"
        )
    } else if abi < 4 {
        format!("ABI {abi} (write confinement; --no-network needs ABI 4)")
    } else {
        format!("ABI {abi} (write confinement and TCP rules)")
    }
}

/// How a sandboxed agent's commands are contained, in a line.
pub fn containment_line(s: &pb::DaemonStatus) -> String {
    if s.containment.is_empty() {
        format!(
            "commands cannot be contained, so sandboxed agents are refused: {}",
            s.containment_unavailable
        )
    } else {
        format!("commands run in {}", s.containment)
    }
}
