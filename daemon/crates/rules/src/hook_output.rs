//! What a hook said (DESIGN §24), read as Claude Code's contract has it:
//! exit 0 — its stdout, if JSON, is read (`continue`, `stopReason`,
//! `suppressOutput`, `systemMessage`, `decision: "block"` with `reason`,
//! `hookSpecificOutput.permissionDecision` allow|deny|ask with its reason,
//! `updatedInput`, `additionalContext`); plain text is context for
//! `UserPromptSubmit` and `SessionStart`, else ignored. Exit 2 — it blocks,
//! its stderr the reason. Any other end (another code, a kill at the
//! timeout) is an error that blocks nothing.

use serde_json::Value;

use crate::hooks::HookEvent;

/// How a hook's process ended, and what it wrote (bounded).
#[derive(Debug, Clone, Default)]
pub struct HookRun {
    /// None: killed (timeout, cancel) or ended by a signal.
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub timed_out: bool,
}

/// A PreToolUse hook's word on the call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PermissionDecision {
    Allow,
    Deny,
    Ask,
}

/// What one hook said.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HookSaid {
    /// Blocked (exit 2, or `decision: "block"`), with why.
    pub block: Option<String>,
    /// PreToolUse: allow, deny or ask, with why.
    pub permission: Option<(PermissionDecision, String)>,
    /// PreToolUse: the input the call runs with instead.
    pub updated_input: Option<Value>,
    /// Text for the model, beside what the event is about.
    pub context: Option<String>,
    /// `continue: false`: the agent stops, with this reason.
    pub stop: Option<String>,
    /// Shown to people (not the model).
    pub system_message: Option<String>,
    /// The hook failed without blocking: why (logged and recorded).
    pub error: Option<String>,
}

/// What the hook `run` of `event` said.
pub fn read(event: HookEvent, run: &HookRun) -> HookSaid {
    let mut said = HookSaid::default();
    match run.code {
        Some(0) => {}
        Some(2) => {
            let why = run.stderr.trim();
            said.block = Some(if why.is_empty() {
                "a hook blocked it".to_string()
            } else {
                why.to_string()
            });
            return said;
        }
        Some(code) => {
            said.error = Some(format!("exit code {code}: {}", first_line(&run.stderr)));
            return said;
        }
        None if run.timed_out => {
            said.error = Some("it ran past its timeout and was killed".to_string());
            return said;
        }
        None => {
            said.error = Some("it was killed".to_string());
            return said;
        }
    }
    let out = run.stdout.trim();
    let json: Option<Value> = out
        .starts_with('{')
        .then(|| serde_json::from_str(out).ok())
        .flatten();
    let Some(v) = json else {
        if !out.is_empty() && matches!(event, HookEvent::UserPromptSubmit | HookEvent::SessionStart)
        {
            said.context = Some(out.to_string());
        }
        return said;
    };
    let text = |v: &Value| v.as_str().map(str::to_string);
    if v.get("continue") == Some(&Value::Bool(false)) {
        said.stop = Some(
            v.get("stopReason")
                .and_then(text)
                .unwrap_or_else(|| "a hook stopped the agent".to_string()),
        );
    }
    said.system_message = v.get("systemMessage").and_then(text);
    if v.get("decision").and_then(Value::as_str) == Some("block") {
        said.block = Some(
            v.get("reason")
                .and_then(text)
                .unwrap_or_else(|| "a hook blocked it".to_string()),
        );
    }
    let specific = v.get("hookSpecificOutput").cloned().unwrap_or(Value::Null);
    if let Some(d) = specific.get("permissionDecision").and_then(Value::as_str) {
        let why = specific
            .get("permissionDecisionReason")
            .and_then(text)
            .unwrap_or_default();
        match d {
            "allow" => said.permission = Some((PermissionDecision::Allow, why)),
            "deny" => said.permission = Some((PermissionDecision::Deny, why)),
            "ask" => said.permission = Some((PermissionDecision::Ask, why)),
            // Never read as more than was said: an unknown word asks.
            other => {
                said.permission = Some((
                    PermissionDecision::Ask,
                    format!(
                        "the hook answered {:?}, which is not allow, deny or ask",
                        first_line(other)
                    ),
                ))
            }
        }
    }
    said.updated_input = specific
        .get("updatedInput")
        .cloned()
        .filter(Value::is_object);
    said.context = specific
        .get("additionalContext")
        .and_then(text)
        .or(said.context);
    said
}

fn first_line(text: &str) -> String {
    text.trim()
        .lines()
        .next()
        .unwrap_or("")
        .chars()
        .take(200)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ran(code: Option<i32>, stdout: &str, stderr: &str) -> HookRun {
        HookRun {
            code,
            stdout: stdout.into(),
            stderr: stderr.into(),
            timed_out: code.is_none(),
        }
    }

    #[test]
    fn exit_codes_block_or_fail_as_claude_code_says() {
        let e = HookEvent::PreToolUse;
        assert_eq!(
            read(e, &ran(Some(2), "", "no rm here\n")).block.as_deref(),
            Some("no rm here")
        );
        let failed = read(e, &ran(Some(1), "", "boom\nmore"));
        assert!(failed.block.is_none() && failed.error.unwrap().contains("boom"));
        assert!(
            read(e, &ran(None, "", ""))
                .error
                .unwrap()
                .contains("timeout")
        );
        assert_eq!(read(e, &ran(Some(0), "plain", "")), HookSaid::default());
        let ctx = read(
            HookEvent::UserPromptSubmit,
            &ran(Some(0), "the date is X\n", ""),
        );
        assert_eq!(ctx.context.as_deref(), Some("the date is X"));
    }

    #[test]
    fn json_output_is_read_field_by_field() {
        let out = json!({
            "continue": false, "stopReason": "enough", "systemMessage": "hi",
            "decision": "block", "reason": "not now",
            "hookSpecificOutput": {"hookEventName": "PreToolUse",
                "permissionDecision": "deny", "permissionDecisionReason": "no",
                "updatedInput": {"command": "ls"}, "additionalContext": "ctx"}
        });
        let said = read(HookEvent::PreToolUse, &ran(Some(0), &out.to_string(), ""));
        assert_eq!(said.stop.as_deref(), Some("enough"));
        assert_eq!(said.block.as_deref(), Some("not now"));
        assert_eq!(
            said.permission,
            Some((PermissionDecision::Deny, "no".into()))
        );
        assert_eq!(said.updated_input, Some(json!({"command": "ls"})));
        assert_eq!(said.context.as_deref(), Some("ctx"));
        assert_eq!(said.system_message.as_deref(), Some("hi"));
        let odd = json!({"hookSpecificOutput": {"permissionDecision": "yes!"}});
        let said = read(HookEvent::PreToolUse, &ran(Some(0), &odd.to_string(), ""));
        assert_eq!(
            said.permission.unwrap().0,
            PermissionDecision::Ask,
            "never more than said"
        );
    }
}
