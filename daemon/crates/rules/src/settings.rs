//! Reading rules from where people keep them (DESIGN §24): Claude Code's
//! `settings.json` (`permissions.allow`, `ask`, `deny`, `defaultMode`) and
//! agentd's `[permissions]` table. A malformed rule is an error naming the
//! file and quoting the rule (short); a settings file that is not JSON, or
//! whose lists are not lists of strings, likewise — nothing is silently
//! dropped.

use std::path::Path;

use serde_json::Value;

use super::{Kind, Rule};

/// The rules of one file, what it says of the default mode, and its hooks.
#[derive(Debug, Default, Clone)]
pub struct FileRules {
    pub rules: Vec<Rule>,
    /// `permissions.defaultMode`, as written.
    pub default_mode: Option<String>,
    /// Its `hooks` (DESIGN §24).
    pub hooks: Vec<crate::hooks::Hook>,
}

/// The rules of a `settings.json`'s text. `source` names the file in
/// errors and decisions; `root` is the directory it speaks for.
pub fn from_settings_json(text: &str, source: &str, root: &Path) -> Result<FileRules, Vec<String>> {
    let value: Value =
        serde_json::from_str(text).map_err(|e| vec![format!("{source} is not JSON: {e}")])?;
    let mut out = FileRules::default();
    let mut errors = Vec::new();
    match crate::hooks::from_settings(&value, source, root) {
        Ok(h) => out.hooks = h,
        Err(e) => errors.extend(e),
    }
    let Some(permissions) = value.get("permissions") else {
        return if errors.is_empty() {
            Ok(out)
        } else {
            Err(errors)
        };
    };
    if !permissions.is_object() {
        errors.push(format!("{source}: permissions is not an object"));
        return Err(errors);
    }
    for kind in [Kind::Allow, Kind::Ask, Kind::Deny] {
        let Some(list) = permissions.get(kind.as_str()) else {
            continue;
        };
        let Some(items) = list.as_array() else {
            errors.push(format!(
                "{source}: permissions.{} is not a list",
                kind.as_str()
            ));
            continue;
        };
        for item in items {
            match item.as_str() {
                Some(text) => match Rule::new(kind, text, source, root) {
                    Ok(rule) => out.rules.push(rule),
                    Err(why) => {
                        errors.push(format!("{source}: permissions.{}: {why}", kind.as_str()))
                    }
                },
                None => errors.push(format!(
                    "{source}: permissions.{} holds something other than a string",
                    kind.as_str()
                )),
            }
        }
    }
    match permissions.get("defaultMode") {
        None => {}
        Some(Value::String(m)) => out.default_mode = Some(m.clone()),
        Some(_) => errors.push(format!("{source}: permissions.defaultMode is not a string")),
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(errors)
    }
}

/// The rules of agentd's own lists (`[permissions] allow/ask/deny` in
/// config.toml, already read as lists of strings).
pub fn from_lists(
    allow: &[String],
    ask: &[String],
    deny: &[String],
    source: &str,
    root: &Path,
) -> Result<Vec<Rule>, Vec<String>> {
    let mut rules = Vec::new();
    let mut errors = Vec::new();
    for (kind, list) in [(Kind::Allow, allow), (Kind::Ask, ask), (Kind::Deny, deny)] {
        for text in list {
            match Rule::new(kind, text, source, root) {
                Ok(r) => rules.push(r),
                Err(why) => errors.push(format!("{source}: permissions.{}: {why}", kind.as_str())),
            }
        }
    }
    if errors.is_empty() {
        Ok(rules)
    } else {
        Err(errors)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_claude_code_settings_file_is_read_as_written() {
        let text = r#"{
            "model": "x",
            "permissions": {
                "allow": ["Bash(npm run test:*)", "Read(./src/**)"],
                "ask": ["Bash(git push:*)"],
                "deny": ["Read(./.env)", "mcp__github__delete_repo"],
                "defaultMode": "acceptEdits"
            },
            "hooks": {}
        }"#;
        let got =
            from_settings_json(text, "~/.claude/settings.json", Path::new("/home/p")).unwrap();
        let kinds: Vec<(Kind, &str)> = got
            .rules
            .iter()
            .map(|r| (r.kind, r.text.as_str()))
            .collect();
        assert_eq!(
            kinds,
            [
                (Kind::Allow, "Bash(npm run test:*)"),
                (Kind::Allow, "Read(./src/**)"),
                (Kind::Ask, "Bash(git push:*)"),
                (Kind::Deny, "Read(./.env)"),
                (Kind::Deny, "mcp__github__delete_repo"),
            ]
        );
        assert_eq!(got.default_mode.as_deref(), Some("acceptEdits"));
        assert_eq!(got.rules[0].source, "~/.claude/settings.json");
        let empty = from_settings_json("{}", "f", Path::new("/")).unwrap();
        assert!(empty.rules.is_empty() && empty.hooks.is_empty() && empty.default_mode.is_none());
    }

    #[test]
    fn nothing_malformed_is_dropped_silently() {
        let errs = from_settings_json(
            r#"{"permissions": {"allow": ["Bash(ls", 3], "deny": "Bash", "defaultMode": 1}}"#,
            ".claude/settings.json",
            Path::new("/proj"),
        )
        .unwrap_err();
        assert_eq!(errs.len(), 4, "{errs:?}");
        assert!(
            errs[0].contains(".claude/settings.json") && errs[0].contains("\"Bash(ls\""),
            "{errs:?}"
        );
        assert!(errs[1].contains("other than a string"));
        assert!(errs[2].contains("permissions.deny is not a list"));
        assert!(errs[3].contains("defaultMode"));
        let errs = from_settings_json("{not json", "s.json", Path::new("/")).unwrap_err();
        assert!(errs[0].contains("s.json is not JSON"), "{errs:?}");
        let errs =
            from_lists(&["Grep(x)".into()], &[], &[], "config.toml", Path::new("/")).unwrap_err();
        assert!(errs[0].contains("config.toml: permissions.allow") && errs[0].contains("Grep(x)"));
    }
}
