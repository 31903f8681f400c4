//! How confined an agent is, for the message rule (docs/security.md):
//! a message from one agent may reach another only when the receiver is at
//! least as confined in every way the sender is — its sandbox, its network
//! and its permission mode. Otherwise a read-only agent, prompt-injected,
//! asks an unconfined sibling to run what it cannot (`SendMessage
//! {"message": "@bash touch …"}`) and the sibling does it for it.

use super::{AgentRecord, NetworkMode, PermissionMode, SandboxMode};

/// The three ways an agent's actions are bounded, each ranked from
/// loosest (0) to strictest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Confinement {
    sandbox: SandboxMode,
    network: NetworkMode,
    mode: PermissionMode,
}

fn sandbox_rank(s: SandboxMode) -> u8 {
    match s {
        SandboxMode::Off => 0,
        SandboxMode::WorkspaceWrite => 1,
        SandboxMode::ReadOnly => 2,
    }
}

fn network_rank(n: NetworkMode) -> u8 {
    match n {
        NetworkMode::Full => 0,
        NetworkMode::Proxy => 1,
        NetworkMode::None => 2,
    }
}

/// `bypass` asks nothing; `plan` may change nothing.
fn mode_rank(m: PermissionMode) -> u8 {
    match m {
        PermissionMode::Bypass => 0,
        PermissionMode::AcceptEdits => 1,
        PermissionMode::Default => 2,
        PermissionMode::Plan => 3,
    }
}

impl Confinement {
    pub fn of(r: &AgentRecord) -> Confinement {
        Confinement {
            sandbox: r.effective_sandbox(),
            network: r.effective_network(),
            mode: r.permission_mode,
        }
    }

    /// Why an agent confined as `self` may not message one confined as
    /// `receiver`; None when it may (the receiver is at least as confined
    /// in all three ways).
    pub fn may_not_message(&self, receiver: &Confinement) -> Option<String> {
        let mut looser = Vec::new();
        if sandbox_rank(receiver.sandbox) < sandbox_rank(self.sandbox) {
            looser.push(format!(
                "its sandbox is {} and yours {}",
                receiver.sandbox, self.sandbox
            ));
        }
        if network_rank(receiver.network) < network_rank(self.network) {
            looser.push(format!(
                "its network is {} and yours {}",
                receiver.network, self.network
            ));
        }
        if mode_rank(receiver.mode) < mode_rank(self.mode) {
            looser.push(format!(
                "its permission mode is {} and yours {}",
                receiver.mode.as_str(),
                self.mode.as_str()
            ));
        }
        (!looser.is_empty()).then(|| {
            format!(
                "it is less confined than you ({}): messages go only to agents at least as confined as their sender",
                looser.join("; ")
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(sandbox: SandboxMode, no_network: bool, mode: PermissionMode) -> Confinement {
        Confinement {
            sandbox,
            network: if no_network {
                NetworkMode::None
            } else {
                NetworkMode::Full
            },
            mode,
        }
    }

    #[test]
    fn messages_flow_only_to_agents_at_least_as_confined() {
        use PermissionMode::*;
        use SandboxMode::*;
        let read_only = c(ReadOnly, false, Default);
        let off = c(Off, false, Default);
        assert!(
            read_only
                .may_not_message(&off)
                .unwrap()
                .contains("sandbox is off")
        );
        assert_eq!(off.may_not_message(&read_only), None);
        assert_eq!(read_only.may_not_message(&read_only), None);
        let offline = c(WorkspaceWrite, true, Default);
        let online = c(WorkspaceWrite, false, Default);
        assert!(
            offline
                .may_not_message(&online)
                .unwrap()
                .contains("network")
        );
        assert_eq!(online.may_not_message(&offline), None);
        let proxied = Confinement {
            network: NetworkMode::Proxy,
            ..online
        };
        assert!(
            proxied
                .may_not_message(&online)
                .unwrap()
                .contains("network is full and yours proxy")
        );
        assert_eq!(proxied.may_not_message(&offline), None);
        let planner = c(WorkspaceWrite, false, Plan);
        let bypass = c(WorkspaceWrite, false, Bypass);
        assert!(planner.may_not_message(&bypass).unwrap().contains("bypass"));
        assert_eq!(bypass.may_not_message(&planner), None);
        // Every way it is looser is named.
        let why = c(ReadOnly, true, Plan)
            .may_not_message(&c(Off, false, Bypass))
            .unwrap();
        assert!(why.contains("sandbox") && why.contains("network") && why.contains("mode"));
    }
}
