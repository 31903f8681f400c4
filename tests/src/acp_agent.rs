//! The ACP test agent, tests/acp-agent/agent.mjs: an agent on the official
//! ACP TypeScript SDK that agentd runs as an external agent (DESIGN §19).
//! Its prompts are scripts (`script:[{"say": "hi"}, {"tool": …}, …]`, the
//! format documented at the top of agent.mjs) so a test decides every update,
//! permission ask, cancel point and crash; its environment says where it
//! keeps its sessions (`TEST_AGENT_STATE`, which makes `session/load` work
//! after a restart) and where it logs what it received (`TEST_AGENT_LOG`), so
//! a test can assert on what agentd sent.
//!
//! [`setup`] installs the SDK on first use (tests/acp-agent/setup.sh, pinned
//! in its package-lock.json) and gives agent.mjs's path.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde_json::Value;

/// tests/acp-agent/.
pub fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("acp-agent")
}

/// Installs the agent's packages (setup.sh, once per process, under a lock on
/// tests/acp-agent/) and gives agent.mjs's path; run it with `node`. Err says
/// what failed, with setup.sh's output.
pub fn setup() -> Result<PathBuf, String> {
    static DONE: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    DONE.get_or_init(run_setup).clone()
}

fn run_setup() -> Result<PathBuf, String> {
    let dir = dir();
    let said = crate::setup_sh::run(&dir, "node and npm")
        .map_err(|e| format!("the ACP test agent is not installed: {e}"))?;
    let agent = dir.join("agent.mjs");
    let sdk = dir.join("node_modules/@agentclientprotocol/sdk/package.json");
    for path in [&agent, &sdk] {
        if !path.is_file() {
            return Err(format!(
                "{}/setup.sh succeeded but {} is missing\n{said}",
                dir.display(),
                path.display()
            ));
        }
    }
    Ok(agent)
}

/// A prompt that makes the agent run `steps` (a JSON array of steps, as
/// agent.mjs's header documents).
pub fn script(steps: &Value) -> String {
    format!("script:{steps}")
}

/// The lines of a `TEST_AGENT_LOG` file: the messages the agent received and
/// its start and exit events, oldest first. Empty if the file is missing.
pub fn log_lines(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .filter(|l| !l.is_empty())
        .map(|l| {
            serde_json::from_str(l)
                .unwrap_or_else(|e| panic!("a log line of the test agent is not JSON ({e}): {l}"))
        })
        .collect()
}
