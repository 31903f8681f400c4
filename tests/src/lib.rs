//! End-to-end harness: runs the real `agentd` and `agentctl` binaries, each
//! test with its own temporary socket, data directory, config and home.

use std::path::PathBuf;
use std::process::Child;
use std::time::{Duration, Instant};

use serde_json::Value;

pub mod acp_agent;
pub mod acp_stdio;
pub mod attached;
pub mod claude_code;
pub mod compacting;
pub mod disk;
mod env;
pub mod forking;
pub mod gemini_cli;
pub mod gitrepo;
pub mod mcp_fixtures;
pub mod mock;
pub mod parent;
pub mod root;
pub mod script;
pub mod setup_sh;
pub mod short_agents;
pub mod tmux;
pub mod torture;

pub use env::{Daemon, Env, Out};

use mock::{MockServer, text_of};

/// Quick retries, so that a test of a fault takes milliseconds, not minutes.
pub const FAST_RETRY: &str =
    "[retry]\nmax_attempts = 3\ninitial_backoff_ms = 20\nmax_backoff_ms = 100\n";

/// The generated client of the agent service.
pub type ApiClient =
    agentd_shared::proto::agent_service_client::AgentServiceClient<tonic::transport::Channel>;

/// The start of an attach stream.
pub fn attach_start(id: &str, from_seq: u64) -> agentd_shared::proto::AttachRequest {
    agentd_shared::attach::start(id, from_seq)
}

/// The directory holding the workspace's built binaries (target/debug or
/// target/release), found from the running test executable.
pub fn bin_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    // Tests live in target/<profile>/deps/, the bench binary in target/<profile>/.
    let mut dir = exe
        .parent()
        .expect("executable has a directory")
        .to_path_buf();
    if dir.ends_with("deps") {
        dir.pop();
    }
    for name in ["agentd", "agentctl"] {
        assert!(
            dir.join(name).is_file(),
            "{} is missing: build the binaries first (cargo build --workspace)",
            dir.join(name).display()
        );
    }
    dir
}

pub fn agentd_bin() -> PathBuf {
    bin_dir().join("agentd")
}

pub fn agentctl_bin() -> PathBuf {
    bin_dir().join("agentctl")
}

/// The text of every transcript entry, one after another.
pub fn all_text(entries: &[Value]) -> String {
    entries
        .iter()
        .map(|e| text_of(&e["content"]))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The tool results among `messages` (transcript entries, or the messages
/// of a request the mock received), in order: whether each is an error,
/// and its text.
pub fn tool_results(messages: &[Value]) -> Vec<(bool, String)> {
    messages
        .iter()
        .flat_map(|m| m["content"].as_array().into_iter().flatten())
        .filter(|b| b["type"] == "tool_result")
        .map(|b| (b["is_error"] == true, text_of(&b["content"])))
        .collect()
}

/// The names in a directory, sorted (for asserting what a test's attacker
/// managed to leave there).
pub fn dir_names(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Polls `ok` until it holds; fails the test after `limit`, naming `what`.
#[track_caller]
pub fn wait_until(what: &str, limit: Duration, mut ok: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !ok() {
        assert!(Instant::now() < deadline, "timed out waiting for: {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Waits at most `limit` for `child` to end: its status, or None after
/// killing it (a test then fails saying what never ended, not hangs).
pub fn wait_child(child: &mut Child, limit: Duration) -> Option<std::process::ExitStatus> {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            return Some(status);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits (bounded) until `path` exists: a tool in a test has started.
#[track_caller]
pub fn wait_for_path(path: &std::path::Path) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !path.exists() {
        assert!(
            Instant::now() < deadline,
            "{} never appeared",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}
