//! The ACP test agent (tests/acp-agent/agent.mjs), which the external-agent
//! tests run under agentd, checked on its own: its self-test drives it with
//! the official SDK's client through every script step, cancels, permission
//! answers, a crash and a `session/load` after the restart, so that a failing
//! external-agent test points at agentd, not at its fixture.

use std::process::Command;

use agentd_e2e::acp_agent;

#[test]
fn test_agent_passes_its_self_test() {
    let agent = acp_agent::setup().unwrap_or_else(|e| panic!("{e}"));
    let selftest = acp_agent::dir().join("selftest.mjs");
    let out = Command::new("timeout")
        .arg("300")
        .arg("node")
        .arg(&selftest)
        .current_dir(acp_agent::dir())
        .output()
        .expect("timeout (coreutils) and node are needed (scripts/test-deps installs them)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{} failed ({}) for {}:\n{stdout}\n{}",
        selftest.display(),
        out.status,
        agent.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("checks passed"),
        "the self-test ended without its summary:\n{stdout}"
    );
}
