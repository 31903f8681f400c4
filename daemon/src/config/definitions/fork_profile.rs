//! Fork profiles (DESIGN §6): `<repo>/.agentd/fork-profiles/<name>.md`, a
//! named set of tools a fork may run, with an optional hint added to its
//! directive. Resolved once, when the fork starts; what it resolved to is
//! stored with the fork, so a later change to the file changes nothing for
//! it.

use std::path::Path;

use serde::Deserialize;

use super::{FrontMatterError, Split, repo_root, split};
use crate::domain::ToolAllowlist;
use crate::error::quote;

/// Largest profile file.
const MAX_BYTES: u64 = 64 * 1024;
/// Longest `promptHint`.
const MAX_HINT_CHARS: usize = 200;

#[derive(Debug, Clone, PartialEq)]
pub struct ForkProfile {
    pub name: String,
    /// The tools the fork may run.
    pub tools: ToolAllowlist,
    pub hint: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FrontMatter {
    name: String,
    tools: Vec<String>,
    #[serde(default, rename = "promptHint")]
    prompt_hint: Option<String>,
}

/// 2–50 letters, digits, `_` or `-`, not starting or ending with `_`/`-`.
pub fn validate_name(name: &str) -> Result<(), String> {
    let ok = (2..=50).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        && !name.starts_with(['_', '-'])
        && !name.ends_with(['_', '-']);
    if ok {
        Ok(())
    } else {
        Err(format!(
            "fork profile name '{}' is invalid: use 2-50 letters, digits, '_' or '-', not starting or ending with '_' or '-'",
            quote(name)
        ))
    }
}

/// Loads the profile `name` for a fork working in `cwd`.
pub fn load(name: &str, cwd: &Path) -> Result<ForkProfile, String> {
    validate_name(name)?;
    let dir = repo_root(cwd).join(".agentd/fork-profiles");
    let path = dir.join(format!("{name}.md"));
    let shown = path.display();
    use crate::beneath::{ContainedRead, Unreadable};
    // Checked on the file as opened (not followed, never blocking on a
    // FIFO), and read no further than the limit: the file cannot change
    // kind or grow between the checks and the read.
    let bytes = crate::beneath::read_contained(&dir, &path, MAX_BYTES).map_err(|e| match e {
        ContainedRead::Missing if !dir.exists() => format!(
            "fork profile '{name}' not found: {} does not exist",
            dir.display()
        ),
        ContainedRead::Missing => {
            format!("fork profile '{name}' not found: there is no {shown}")
        }
        ContainedRead::Outside => format!(
            "fork profile {shown} links outside {}; refusing it",
            dir.display()
        ),
        ContainedRead::Refused(Unreadable::NotRegular) => {
            format!("fork profile {shown} is not a regular file")
        }
        ContainedRead::Refused(Unreadable::TooLarge(n)) => {
            format!("fork profile {shown} is {n} bytes; the limit is {MAX_BYTES} bytes (64 KiB)")
        }
        ContainedRead::Refused(Unreadable::Io(e)) => format!("cannot read {shown}: {e}"),
    })?;
    let text =
        String::from_utf8(bytes).map_err(|_| format!("fork profile {shown} is not UTF-8 text"))?;
    parse(name, &path, &text)
}

/// Parses a profile's text: YAML front matter and nothing else.
pub fn parse(name: &str, path: &Path, text: &str) -> Result<ForkProfile, String> {
    let shown = path.display();
    let Split { yaml, body } = split(text).map_err(|e| match e {
        FrontMatterError::NoOpening => {
            format!("fork profile {shown} must start with a '---' line and YAML front matter")
        }
        FrontMatterError::NoClosing => {
            format!("fork profile {shown}: the front matter has no closing '---' line")
        }
    })?;
    if !body.trim().is_empty() {
        return Err(format!(
            "fork profile {shown} has text after its front matter; a profile is front matter only (name, tools, promptHint)"
        ));
    }
    let fm: FrontMatter = serde_norway::from_str(yaml)
        .map_err(|e| format!("fork profile {shown}: invalid front matter: {e}"))?;
    if fm.name != name {
        return Err(format!(
            "fork profile {shown} says name '{}'; it must match its file name '{name}'",
            quote(&fm.name)
        ));
    }
    let tools = ToolAllowlist::parse(&fm.tools).map_err(|e| {
        format!(
            "fork profile {shown}: {}",
            e.replacen("fork_tools", "tools", 1)
        )
    })?;
    if let Some(hint) = &fm.prompt_hint
        && hint.chars().count() > MAX_HINT_CHARS
    {
        return Err(format!(
            "fork profile {shown}: promptHint is {} characters; the limit is {MAX_HINT_CHARS}",
            hint.chars().count()
        ));
    }
    Ok(ForkProfile {
        name: fm.name,
        tools,
        hint: fm.prompt_hint.filter(|h| !h.trim().is_empty()),
    })
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::domain::ToolName;

    fn repo() -> (tempfile::TempDir, PathBuf) {
        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path().join("repo");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::create_dir_all(repo.join(".agentd/fork-profiles")).unwrap();
        std::fs::create_dir_all(repo.join("src")).unwrap();
        (tmp, repo)
    }

    fn write(repo: &Path, name: &str, text: &str) {
        std::fs::write(repo.join(format!(".agentd/fork-profiles/{name}.md")), text).unwrap();
    }

    #[test]
    fn a_valid_profile_loads_from_anywhere_in_the_repo() {
        let (_tmp, repo) = repo();
        write(
            &repo,
            "reader",
            "---\nname: reader\ntools: [Read, Grep, Glob]\npromptHint: look, do not touch\n---\n\n",
        );
        let p = load("reader", &repo.join("src")).unwrap();
        assert_eq!(
            p.tools.tools(),
            [ToolName::Read, ToolName::Grep, ToolName::Glob]
        );
        assert_eq!(p.hint.as_deref(), Some("look, do not touch"));
    }

    #[test]
    fn every_rule_is_a_clear_error() {
        let (_tmp, repo) = repo();
        let cases: Vec<(&str, String, &str)> = vec![
            ("nobody", String::new(), "not found"),
            (
                "body",
                "---\nname: body\ntools: [Read]\n---\nYou are a reviewer.\n".into(),
                "front matter only",
            ),
            (
                "notools",
                "---\nname: notools\n---\n".into(),
                "missing field `tools`",
            ),
            (
                "other",
                "---\nname: different\ntools: [Read]\n---\n".into(),
                "must match its file name",
            ),
            (
                "star",
                "---\nname: star\ntools: ['*']\n---\n".into(),
                "only wildcards",
            ),
            (
                "hint",
                format!(
                    "---\nname: hint\ntools: [Read]\npromptHint: {}\n---\n",
                    "h".repeat(201)
                ),
                "limit is 200",
            ),
            (
                "extra",
                "---\nname: extra\ntools: [Read]\nmodel: x\n---\n".into(),
                "unknown field",
            ),
            (
                "big",
                format!(
                    "---\nname: big\ntools: [Read]\n---\n{}",
                    " ".repeat(70 * 1024)
                ),
                "64 KiB",
            ),
        ];
        for (name, text, says) in cases {
            if !text.is_empty() {
                write(&repo, name, &text);
            }
            let err = load(name, &repo).unwrap_err();
            assert!(err.contains(says), "{name}: {err}");
        }
        for bad in [
            "a",
            "-lead",
            "trail_",
            "has space",
            &"x".repeat(51),
            "dot.name",
        ] {
            assert!(
                load(bad, &repo).unwrap_err().contains("is invalid"),
                "{bad}"
            );
        }
    }

    #[test]
    fn a_symlink_out_of_the_profile_directory_is_refused() {
        let (tmp, repo) = repo();
        let outside = tmp.path().join("elsewhere.md");
        std::fs::write(&outside, "---\nname: sneaky\ntools: [Bash]\n---\n").unwrap();
        std::os::unix::fs::symlink(&outside, repo.join(".agentd/fork-profiles/sneaky.md")).unwrap();
        let err = load("sneaky", &repo).unwrap_err();
        assert!(err.contains("outside"), "{err}");
        std::fs::create_dir(repo.join(".agentd/fork-profiles/adir.md")).unwrap();
        assert!(
            load("adir", &repo)
                .unwrap_err()
                .contains("not a regular file")
        );
        // A FIFO is refused at once, not waited on.
        let fifo = repo.join(".agentd/fork-profiles/pipe.md");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
        assert!(
            load("pipe", &repo)
                .unwrap_err()
                .contains("not a regular file")
        );
    }
}
