//! Checking out a new tree's submodules: with the git command line (the
//! person's transports and credentials), under a timeout, with the
//! repository's hooks, fsmonitor and update commands turned off; libgit2
//! when there is no git.

use std::path::Path;
use std::time::Duration;

use git2::Repository;

use super::error::WorktreeError;
use super::git_error;

/// How long checking out a tree's submodules may take before git is
/// stopped (a clone hanging on a network or a credential prompt).
const SUBMODULE_TIMEOUT: Duration = Duration::from_secs(600);

/// Checks out the tree's submodules as the person's checkout has them:
/// those initialised in the configuration every worktree shares (an
/// `--init` here would write into it), then, inside each clone (whose
/// configuration is the tree's own), every nested one. With the git command
/// line (the person's configuration, credentials and transports: ssh,
/// https) when there is one; else with libgit2 (local paths, plain http).
pub(super) fn init(repo: &Repository) -> Result<(), WorktreeError> {
    let submodules = repo
        .submodules()
        .map_err(|e| git_error("cannot read .gitmodules", e))?;
    if submodules.is_empty() {
        return Ok(());
    }
    let dir = repo
        .workdir()
        .ok_or_else(|| WorktreeError::refused("the new worktree has no working directory"))?;
    // The clones git makes for submodules do not read the repository's own
    // configuration: carry its `protocol.file.allow` (local-path
    // submodules) over, as the person's setting for this repository.
    let allow = repo
        .config()
        .and_then(|c| c.get_string("protocol.file.allow"))
        .ok();
    // The repository's configuration may have been written by an agent
    // (its own checkout is its workspace): git here runs unconfined, so no
    // hook, fsmonitor or `update = !command` of that configuration runs.
    let mut safe: Vec<String> = vec![
        "-c".into(),
        "core.hooksPath=/dev/null".into(),
        "-c".into(),
        "core.fsmonitor=".into(),
    ];
    for sm in &submodules {
        if let Some(name) = sm.name() {
            safe.push("-c".into());
            safe.push(format!("submodule.{name}.update=checkout"));
        }
    }
    let with = |args: &[&str]| -> Vec<String> {
        safe.iter()
            .cloned()
            .chain(args.iter().map(|a| a.to_string()))
            .collect()
    };
    let top = with(&["submodule", "update", "--recursive", "--quiet"]);
    let nested = with(&[
        "submodule",
        "foreach",
        "--recursive",
        "--quiet",
        "git submodule update --init --quiet",
    ]);
    if run_git(dir, allow.as_deref(), &top)? {
        run_git(dir, allow.as_deref(), &nested)?;
        return Ok(());
    }
    let config = repo
        .config()
        .map_err(|e| git_error("cannot read the configuration", e))?;
    for mut sm in submodules {
        let name = sm.name().unwrap_or("?").to_string();
        if config.get_string(&format!("submodule.{name}.url")).is_err() {
            continue;
        }
        sm.update(false, None)
            .map_err(|e| git_error(&format!("cannot check out the submodule {name}"), e))?;
    }
    Ok(())
}

/// Runs git with `args` in `dir`, with no terminal and none of the
/// variables that would point it at another repository, for at most
/// `SUBMODULE_TIMEOUT`. Ok(false): there is no git to run.
fn run_git(dir: &Path, allow: Option<&str>, args: &[String]) -> Result<bool, WorktreeError> {
    use std::io::Read as _;
    let mut git = std::process::Command::new("git");
    if let Some(allow) = allow {
        git.arg("-c").arg(format!("protocol.file.allow={allow}"));
    }
    for var in [
        "GIT_DIR",
        "GIT_WORK_TREE",
        "GIT_INDEX_FILE",
        "GIT_COMMON_DIR",
        "GIT_OBJECT_DIRECTORY",
        "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    ] {
        git.env_remove(var);
    }
    let _spawning = agentd_sandbox::process::adopt::spawning();
    let spawned = git
        .args(args)
        .current_dir(dir)
        .env("GIT_TERMINAL_PROMPT", "0")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn();
    let mut child = match spawned {
        Ok(c) => {
            agentd_sandbox::process::adopt::own(c.id());
            drop(_spawning);
            c
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => {
            return Err(WorktreeError::refused(format!(
                "cannot run git to check out the submodules: {e}"
            )));
        }
    };
    let mut stderr = child.stderr.take();
    let reader = std::thread::spawn(move || {
        let mut text = Vec::new();
        if let Some(s) = stderr.as_mut() {
            let _ = s.take(64 * 1024).read_to_end(&mut text);
        }
        text
    });
    let deadline = std::time::Instant::now() + SUBMODULE_TIMEOUT;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if std::time::Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(20));
            }
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(WorktreeError::refused(format!(
                    "checking out the submodules (git {}) took more than {} s and was stopped",
                    args.join(" "),
                    SUBMODULE_TIMEOUT.as_secs()
                )));
            }
            Err(e) => {
                return Err(WorktreeError::refused(format!("cannot wait for git: {e}")));
            }
        }
    };
    let said = reader.join().unwrap_or_default();
    if status.success() {
        return Ok(true);
    }
    Err(WorktreeError::refused(format!(
        "cannot check out the submodules (git {}): {}",
        args.join(" "),
        String::from_utf8_lossy(&said)
            .trim()
            .chars()
            .take(400)
            .collect::<String>()
    )))
}
