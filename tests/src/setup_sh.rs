//! Runs a fixture directory's `setup.sh` (tests/mcp, tests/acp-agent): each
//! installs its pinned packages on first use and is quick after. It runs
//! under `flock` on the directory's `.setup.lock`, so that two test
//! processes never install into the same directory at once, and under
//! `timeout`, so that a hung download fails the tests instead of holding them.

use std::path::Path;
use std::process::{Command, Stdio};

/// How long setup.sh may take: a first run downloads from PyPI and npm.
pub const SETUP_LIMIT_SECS: u32 = 900;

/// Runs `dir`/setup.sh. Ok: its output, for a later message about what it
/// installed; Err says what failed, with that output. `needs` names the tools
/// the script needs, for the message when one is missing.
pub fn run(dir: &Path, needs: &str) -> Result<String, String> {
    let script = dir.join("setup.sh");
    let out = Command::new("timeout")
        .arg(SETUP_LIMIT_SECS.to_string())
        .arg("flock")
        .arg(dir.join(".setup.lock"))
        .arg("sh")
        .arg(&script)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run timeout(1) ({e}): coreutils is needed"))?;
    let code = out.status.code().unwrap_or(-1);
    let said = format!(
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    match code {
        0 => Ok(said),
        124 => Err(format!(
            "{} did not finish within {SETUP_LIMIT_SECS} s\n{said}",
            script.display()
        )),
        _ => Err(format!(
            "{} failed (exit {code}; 127 or 'flock: failed to execute' means a tool is \
             missing: flock, {needs})\n{said}",
            script.display()
        )),
    }
}
