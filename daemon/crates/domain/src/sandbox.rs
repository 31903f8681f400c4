//! How an agent's tools are confined (DESIGN §14).

use std::fmt;

/// What the processes an agent's tools start may write.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxMode {
    /// Only beneath the agent's working directory (or worktree), its
    /// private temp dir and the usual devices.
    #[default]
    WorkspaceWrite,
    /// Nothing.
    ReadOnly,
    /// No confinement.
    Off,
}

impl SandboxMode {
    pub fn parse(text: &str) -> Option<SandboxMode> {
        match text.trim() {
            "workspace-write" => Some(SandboxMode::WorkspaceWrite),
            "read-only" => Some(SandboxMode::ReadOnly),
            "off" => Some(SandboxMode::Off),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            SandboxMode::WorkspaceWrite => "workspace-write",
            SandboxMode::ReadOnly => "read-only",
            SandboxMode::Off => "off",
        }
    }

    /// The stricter of two modes.
    pub fn stricter(self, other: SandboxMode) -> SandboxMode {
        use SandboxMode::*;
        match (self, other) {
            (ReadOnly, _) | (_, ReadOnly) => ReadOnly,
            (WorkspaceWrite, _) | (_, WorkspaceWrite) => WorkspaceWrite,
            (Off, Off) => Off,
        }
    }
}

impl fmt::Display for SandboxMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_parse_and_the_stricter_wins() {
        for m in [
            SandboxMode::WorkspaceWrite,
            SandboxMode::ReadOnly,
            SandboxMode::Off,
        ] {
            assert_eq!(SandboxMode::parse(m.as_str()), Some(m));
        }
        assert_eq!(SandboxMode::parse("danger"), None);
        assert_eq!(
            SandboxMode::Off.stricter(SandboxMode::WorkspaceWrite),
            SandboxMode::WorkspaceWrite
        );
        assert_eq!(
            SandboxMode::WorkspaceWrite.stricter(SandboxMode::ReadOnly),
            SandboxMode::ReadOnly
        );
    }
}
