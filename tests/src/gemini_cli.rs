//! Gemini CLI as an ACP agent, offline, against the mock's Gemini API:
//! `@google/gemini-cli`, pinned in tests/external-agents/package-lock.json
//! beside Claude Code's adapter and installed with it
//! ([`crate::claude_code::setup`]). `gemini --acp` talks to
//! `GOOGLE_GEMINI_BASE_URL` (plain http is allowed for 127.0.0.1) with
//! `GEMINI_API_KEY`; with `--model` given it makes no routing call, so each
//! model call of a turn is one `streamGenerateContent?alt=sse`. It keeps
//! its settings and sessions under `$GEMINI_CLI_HOME/.gemini` (default:
//! HOME), and needs `security.auth.selectedType` in its settings to start
//! a session with a key.

use std::path::PathBuf;

/// The `gemini` command, installed; None (after saying why) when node is
/// missing outside CI — in CI (`CI` set) that fails the test instead.
pub fn installed() -> Option<PathBuf> {
    crate::claude_code::installed()?;
    let bin = crate::claude_code::dir().join("node_modules/.bin/gemini");
    assert!(
        bin.is_file(),
        "tests/external-agents/setup.sh ran but {} is missing",
        bin.display()
    );
    Some(bin)
}
