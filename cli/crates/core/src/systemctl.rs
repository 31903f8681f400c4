//! The user's service manager, through `systemctl --user`.

use std::process::Command;

/// What `systemctl --user` said.
pub struct Said {
    pub ok: bool,
    /// Its stdout and stderr, trimmed.
    pub text: String,
}

/// `systemctl --user ARGS`, or None when systemctl cannot run at all.
pub fn run(args: &[&str]) -> Option<Said> {
    let out = Command::new("systemctl")
        .arg("--user")
        .args(args)
        .output()
        .ok()?;
    let mut text = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let err = String::from_utf8_lossy(&out.stderr).trim().to_string();
    if !err.is_empty() {
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(&err);
    }
    Some(Said {
        ok: out.status.success(),
        text,
    })
}

/// `systemctl --user ARGS`, a failure being the error (with what it said).
pub fn must(args: &[&str]) -> Result<(), String> {
    match run(args) {
        Some(Said { ok: true, .. }) => Ok(()),
        Some(Said { text, .. }) => Err(format!(
            "systemctl --user {} failed: {text}",
            args.join(" ")
        )),
        None => Err("cannot run systemctl".to_string()),
    }
}

/// Whether a user service manager answers.
pub fn manager_runs() -> bool {
    run(&["show-environment"]).is_some_and(|s| s.ok)
}

/// A unit's activity, as `is-active` reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Activity {
    Active,
    Inactive,
    Failed,
    /// Activating, deactivating, reloading…
    Changing,
    Unknown,
}

pub fn activity(unit: &str) -> Activity {
    let word = run(&["is-active", unit])
        .map(|s| s.text)
        .unwrap_or_default();
    match word.lines().next().unwrap_or("") {
        "active" => Activity::Active,
        "inactive" => Activity::Inactive,
        "failed" => Activity::Failed,
        "activating" | "deactivating" | "reloading" | "refreshing" => Activity::Changing,
        _ => Activity::Unknown,
    }
}

impl std::fmt::Display for Activity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Activity::Active => "active",
            Activity::Inactive => "inactive",
            Activity::Failed => "failed",
            Activity::Changing => "changing state",
            Activity::Unknown => "unknown",
        })
    }
}

/// Whether a unit is enabled (`is-enabled` succeeds).
pub fn enabled(unit: &str) -> bool {
    run(&["is-enabled", unit]).is_some_and(|s| s.ok)
}
