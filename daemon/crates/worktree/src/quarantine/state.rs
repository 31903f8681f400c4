//! What the daemon last agreed with a quarantine: the branch's value and
//! the index it handed the agent. Kept in the repository's common git
//! directory (`agentd-quarantine/<name>`), where no confined agent can
//! write — in the quarantine itself the agent could forge a base and have
//! the daemon force the person's branch.

use std::os::fd::OwnedFd;

use git2::Oid;

use super::files;

/// The directory in the common git directory that holds the states.
const STATES_DIR: &str = "agentd-quarantine";
const MAX_STATE_BYTES: u64 = 4096;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct State {
    /// The branch (`refs/heads/…`) the quarantine commits to.
    pub(super) branch: String,
    /// Its value when the daemon and the agent last agreed (None: unborn).
    pub(super) base: Option<Oid>,
    /// The entries' digest of the real index the agent was handed.
    pub(super) index: Option<String>,
}

impl State {
    pub(super) fn read(common: &OwnedFd, name: &str) -> std::io::Result<Option<State>> {
        let dir = match files::dir(common, STATES_DIR, false) {
            Ok(d) => d,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e),
        };
        let Some(bytes) = files::read(&dir, name, MAX_STATE_BYTES)? else {
            return Ok(None);
        };
        let text = String::from_utf8_lossy(&bytes);
        let mut state = State::default();
        for line in text.lines() {
            match line.split_once(' ') {
                Some(("branch", b)) => state.branch = b.to_string(),
                Some(("base", "none")) => state.base = None,
                Some(("base", b)) => state.base = Oid::from_str(b).ok(),
                Some(("index", i)) => state.index = Some(i.to_string()),
                _ => {}
            }
        }
        Ok((!state.branch.is_empty()).then_some(state))
    }

    pub(super) fn write(&self, common: &OwnedFd, name: &str) -> std::io::Result<()> {
        let dir = files::dir(common, STATES_DIR, true)?;
        let base = self.base.map_or("none".to_string(), |b| b.to_string());
        let mut text = format!("branch {}\nbase {base}\n", self.branch);
        if let Some(i) = &self.index {
            text.push_str(&format!("index {i}\n"));
        }
        files::put(&dir, name, text.as_bytes())
    }

    pub(super) fn remove(common: &OwnedFd, name: &str) -> std::io::Result<()> {
        match files::dir(common, STATES_DIR, false) {
            Ok(dir) => files::unlink(&dir, name),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(e),
        }
    }
}
