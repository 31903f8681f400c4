//! Hooks as Claude Code's `settings.json` writes them (DESIGN §24):
//!
//! ```json
//! "hooks": {
//!   "PreToolUse": [
//!     {"matcher": "Bash|Edit", "hooks": [{"type": "command", "command": "./check.sh", "timeout": 30}]}
//!   ]
//! }
//! ```
//!
//! Each event names groups of a matcher and its commands. A matcher is the
//! tool name exactly (`Bash`), a regular expression over the whole name
//! (`Edit|Write`, `mcp__github__.*`), or empty / `*` for every tool; for
//! events without a tool it is matched against what the event is about
//! (`PreCompact`: `manual`/`auto`, `SessionStart`: `startup`/`resume`).
//! Every malformed entry is an error naming the file — never dropped.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

/// When a hook runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HookEvent {
    PreToolUse,
    PostToolUse,
    PostToolUseFailure,
    UserPromptSubmit,
    Stop,
    SubagentStart,
    SubagentStop,
    PreCompact,
    SessionStart,
    SessionEnd,
    Notification,
}

impl HookEvent {
    pub const ALL: [HookEvent; 11] = [
        HookEvent::PreToolUse,
        HookEvent::PostToolUse,
        HookEvent::PostToolUseFailure,
        HookEvent::UserPromptSubmit,
        HookEvent::Stop,
        HookEvent::SubagentStart,
        HookEvent::SubagentStop,
        HookEvent::PreCompact,
        HookEvent::SessionStart,
        HookEvent::SessionEnd,
        HookEvent::Notification,
    ];

    /// The name settings files and `hook_event_name` use.
    pub fn as_str(self) -> &'static str {
        match self {
            HookEvent::PreToolUse => "PreToolUse",
            HookEvent::PostToolUse => "PostToolUse",
            HookEvent::PostToolUseFailure => "PostToolUseFailure",
            HookEvent::UserPromptSubmit => "UserPromptSubmit",
            HookEvent::Stop => "Stop",
            HookEvent::SubagentStart => "SubagentStart",
            HookEvent::SubagentStop => "SubagentStop",
            HookEvent::PreCompact => "PreCompact",
            HookEvent::SessionStart => "SessionStart",
            HookEvent::SessionEnd => "SessionEnd",
            HookEvent::Notification => "Notification",
        }
    }

    pub fn parse(name: &str) -> Option<HookEvent> {
        HookEvent::ALL.into_iter().find(|e| e.as_str() == name)
    }
}

/// The default time a hook may run.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
/// The longest a hook's `timeout` may be.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(600);

/// What a matcher matches.
#[derive(Debug, Clone)]
pub enum Matcher {
    All,
    Exact(String),
    Regex(regex::Regex),
}

impl Matcher {
    fn parse(text: &str) -> Result<Matcher, String> {
        if text.is_empty() || text == "*" {
            return Ok(Matcher::All);
        }
        if text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            return Ok(Matcher::Exact(text.to_string()));
        }
        regex::Regex::new(&format!("^(?:{text})$"))
            .map(Matcher::Regex)
            .map_err(|_| "is not a tool name or a regular expression".to_string())
    }

    pub fn matches(&self, what: &str) -> bool {
        match self {
            Matcher::All => true,
            Matcher::Exact(e) => e == what,
            Matcher::Regex(r) => r.is_match(what),
        }
    }
}

/// One hook command.
#[derive(Debug, Clone)]
pub struct Hook {
    pub event: HookEvent,
    pub matcher: Matcher,
    /// The matcher as written.
    pub matcher_text: String,
    /// A shell command line.
    pub command: String,
    pub timeout: Duration,
    /// The file it came from, as shown.
    pub source: String,
}

impl Hook {
    /// The name an approval of it is kept under (event, matcher, command).
    pub fn approval_name(&self) -> String {
        format!(
            "hook\0{}\0{}\0{}",
            self.event.as_str(),
            self.matcher_text,
            self.command
        )
    }
}

/// A short, quoted prefix of `text` for an error.
fn quoted(text: &str) -> String {
    let short: String = text.chars().take(60).collect();
    if short.len() < text.len() {
        format!("{short:?}…")
    } else {
        format!("{short:?}")
    }
}

/// The hooks of a settings file's parsed JSON (`value["hooks"]`); `source`
/// names the file in errors and in what a hook decided.
pub fn from_settings(value: &Value, source: &str, _root: &Path) -> Result<Vec<Hook>, Vec<String>> {
    let Some(hooks) = value.get("hooks") else {
        return Ok(Vec::new());
    };
    let Some(events) = hooks.as_object() else {
        return Err(vec![format!("{source}: hooks is not an object")]);
    };
    let mut out = Vec::new();
    let mut errors = Vec::new();
    for (name, groups) in events {
        let Some(event) = HookEvent::parse(name) else {
            errors.push(format!(
                "{source}: hooks.{} is not an event agentd knows",
                quoted(name)
            ));
            continue;
        };
        let Some(groups) = groups.as_array() else {
            errors.push(format!("{source}: hooks.{name} is not a list"));
            continue;
        };
        for group in groups {
            let matcher_text = match group.get("matcher") {
                None => "",
                Some(Value::String(m)) => m.as_str(),
                Some(_) => {
                    errors.push(format!("{source}: hooks.{name}: a matcher is not a string"));
                    continue;
                }
            };
            let matcher = match Matcher::parse(matcher_text) {
                Ok(m) => m,
                Err(why) => {
                    errors.push(format!(
                        "{source}: hooks.{name}: the matcher {} {why}",
                        quoted(matcher_text)
                    ));
                    continue;
                }
            };
            let Some(commands) = group.get("hooks").and_then(Value::as_array) else {
                errors.push(format!(
                    "{source}: hooks.{name}: a group has no list of hooks"
                ));
                continue;
            };
            for h in commands {
                match command_of(h) {
                    Ok((command, timeout)) => out.push(Hook {
                        event,
                        matcher: matcher.clone(),
                        matcher_text: matcher_text.to_string(),
                        command,
                        timeout,
                        source: source.to_string(),
                    }),
                    Err(why) => errors.push(format!("{source}: hooks.{name}: {why}")),
                }
            }
        }
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(errors)
    }
}

fn command_of(h: &Value) -> Result<(String, Duration), String> {
    match h.get("type").and_then(Value::as_str) {
        Some("command") => {}
        Some(other) => {
            return Err(format!(
                "a hook of type {} is not one agentd runs (only \"command\")",
                quoted(other)
            ));
        }
        None => return Err("a hook has no type".into()),
    }
    let command = match h.get("command").and_then(Value::as_str) {
        Some(c) if !c.trim().is_empty() => c.to_string(),
        _ => return Err("a hook has no command".into()),
    };
    let timeout = match h.get("timeout") {
        None => DEFAULT_TIMEOUT,
        Some(t) => match t.as_u64() {
            Some(s) if s > 0 && Duration::from_secs(s) <= MAX_TIMEOUT => Duration::from_secs(s),
            _ => {
                return Err(format!(
                    "the hook {}: timeout is whole seconds from 1 to {}",
                    quoted(&command),
                    MAX_TIMEOUT.as_secs()
                ));
            }
        },
    };
    Ok((command, timeout))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn hooks_are_read_as_claude_code_writes_them() {
        let v = json!({"hooks": {
            "PreToolUse": [
                {"matcher": "Bash", "hooks": [{"type": "command", "command": "./a.sh"}]},
                {"matcher": "Edit|Write", "hooks": [{"type": "command", "command": "./b.sh", "timeout": 5}]}
            ],
            "Stop": [{"hooks": [{"type": "command", "command": "./stop.sh"}]}]
        }});
        let hooks = from_settings(&v, "~/.claude/settings.json", Path::new("/h")).unwrap();
        assert_eq!(hooks.len(), 3);
        let pre: Vec<&Hook> = hooks
            .iter()
            .filter(|h| h.event == HookEvent::PreToolUse)
            .collect();
        assert!(pre[0].matcher.matches("Bash") && !pre[0].matcher.matches("Bashful"));
        assert!(pre[1].matcher.matches("Write") && !pre[1].matcher.matches("Read"));
        assert_eq!(pre[1].timeout, Duration::from_secs(5));
        let stop = hooks.iter().find(|h| h.event == HookEvent::Stop).unwrap();
        assert!(stop.matcher.matches("anything"));
        assert_eq!(stop.timeout, DEFAULT_TIMEOUT);
        assert!(
            from_settings(&json!({}), "f", Path::new("/"))
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn every_malformed_hook_is_an_error_naming_its_file() {
        let v = json!({"hooks": {
            "PreTool": [],
            "Stop": [{"hooks": [{"type": "prompt", "prompt": "x"}]}],
            "PostToolUse": [{"matcher": "(", "hooks": []},
                            {"hooks": [{"type": "command", "command": "x", "timeout": 0}]},
                            {"hooks": [{"type": "command"}]}],
            "SessionEnd": "no"
        }});
        let errs = from_settings(&v, ".claude/settings.json", Path::new("/p")).unwrap_err();
        assert_eq!(errs.len(), 6, "{errs:?}");
        assert!(errs.iter().all(|e| e.starts_with(".claude/settings.json")));
        assert!(errs.iter().any(|e| e.contains("\"PreTool\"")));
        assert!(errs.iter().any(|e| e.contains("only \"command\"")));
        assert!(errs.iter().any(|e| e.contains("timeout")));
    }
}
