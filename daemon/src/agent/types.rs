//! Subagent types (DESIGN §7): the built-in `general-purpose` and `Explore`,
//! and custom types from Markdown files with YAML front matter, searched in
//! `<repo>/.agentd/agents/`, then `~/.config/agentd/agents/`, then the
//! built-ins.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::domain::{Isolation, PermissionMode, SandboxMode, ToolName};

/// The type used when `subagent_type` is omitted.
pub const DEFAULT_TYPE: &str = "general-purpose";

/// Tools an Explore agent may run: it looks, it does not touch.
const READ_ONLY_TOOLS: [ToolName; 4] = [
    ToolName::Read,
    ToolName::Glob,
    ToolName::Grep,
    ToolName::ListAgents,
];

#[derive(Debug, Clone, PartialEq)]
pub struct AgentType {
    pub name: String,
    pub description: String,
    /// Tools the type may use; `None` means all.
    pub tools: Option<Vec<ToolName>>,
    pub model: Option<String>,
    pub background: bool,
    /// Overrides the parent's permission mode for agents of this type.
    pub permission_mode: Option<PermissionMode>,
    /// Where agents of this type work (front matter `isolation: worktree`).
    pub isolation: Isolation,
    /// A stricter sandbox for agents of this type (front matter `sandbox`);
    /// never looser than the parent's.
    pub sandbox: Option<SandboxMode>,
    /// The type's own instructions, placed before the environment section.
    pub instructions: String,
}

fn builtin(name: &str) -> Option<AgentType> {
    match name {
        "general-purpose" => Some(AgentType {
            name: name.into(),
            description: "Researches, searches and carries out multi-step tasks with every tool"
                .into(),
            tools: None,
            model: None,
            background: false,
            permission_mode: None,
            isolation: Isolation::None,
            sandbox: None,
            instructions: "You are a general-purpose agent working on a task delegated by \
another agent. Complete it autonomously with the tools you have, then answer with a concise \
report of what you did and found: your final message is all the delegating agent sees."
                .into(),
        }),
        "Explore" => Some(AgentType {
            name: name.into(),
            description: "Explores a codebase quickly: finds files, searches code, answers \
questions; never changes anything"
                .into(),
            tools: Some(READ_ONLY_TOOLS.to_vec()),
            model: None,
            background: false,
            permission_mode: None,
            isolation: Isolation::None,
            sandbox: None,
            instructions: "You are a read-only exploration agent. Find files with Glob, search \
contents with Grep, read with Read. You cannot and must not modify anything. Answer with the \
facts you found, citing file paths and line numbers."
                .into(),
        }),
        _ => None,
    }
}

/// Front matter of a custom type file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FrontMatter {
    name: String,
    description: String,
    #[serde(default)]
    tools: Option<ToolList>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    background: bool,
    #[serde(default)]
    isolation: Option<String>,
    #[serde(default)]
    sandbox: Option<String>,
    #[serde(default, rename = "permissionMode", alias = "permission_mode")]
    permission_mode: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum ToolList {
    List(Vec<String>),
    Comma(String),
}

/// Parses a type file: `---`, YAML front matter, `---`, then the prompt.
pub fn parse_type_file(path: &Path, text: &str) -> Result<AgentType, String> {
    let where_ = path.display();
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
        .ok_or_else(|| format!("{where_}: must start with a '---' line and YAML front matter"))?;
    let end = rest
        .find("\n---")
        .ok_or_else(|| format!("{where_}: the front matter has no closing '---' line"))?;
    let (yaml, body) = (&rest[..end], &rest[end + 4..]);
    let body = body.trim_start_matches(['\r', '\n']).trim_end();
    let fm: FrontMatter =
        serde_norway::from_str(yaml).map_err(|e| format!("{where_}: invalid front matter: {e}"))?;
    if fm.name.trim().is_empty() || fm.description.trim().is_empty() {
        return Err(format!(
            "{where_}: `name` and `description` must not be empty"
        ));
    }
    let isolation = match fm.isolation.as_deref().map(str::trim) {
        None | Some("none") => Isolation::None,
        Some("worktree") => Isolation::Worktree,
        Some(other) => {
            return Err(format!(
                "{where_}: isolation '{}' is not one of: worktree, none",
                crate::error::quote(other)
            ));
        }
    };
    let sandbox = match fm.sandbox.as_deref() {
        None => None,
        Some(text) => Some(SandboxMode::parse(text).ok_or_else(|| {
            format!(
                "{where_}: sandbox '{}' is not one of: workspace-write, read-only, off",
                crate::error::quote(text)
            )
        })?),
    };
    if body.is_empty() {
        return Err(format!(
            "{where_}: the body (the type's system prompt) is empty"
        ));
    }
    let permission_mode = match fm.permission_mode.as_deref() {
        None => None,
        Some(text) => Some(PermissionMode::parse(text).ok_or_else(|| {
            format!(
                "{where_}: unknown permissionMode '{}' (default, accept-edits, plan or bypass)",
                crate::error::quote(text)
            )
        })?),
    };
    let tools = fm.tools.map(|t| {
        let names: Vec<String> = match t {
            ToolList::List(v) => v,
            ToolList::Comma(s) => s
                .split(',')
                .map(|t| t.trim().to_string())
                .filter(|t| !t.is_empty())
                .collect(),
        };
        // Tools agentd does not have (another product's) are left out:
        // the type gets less, never more.
        names
            .iter()
            .filter_map(|n| {
                let tool = ToolName::parse(n);
                if tool.is_none() {
                    tracing::debug!(file = %where_, tool = %n, "a tool agentd does not have is left out");
                }
                tool
            })
            .collect::<Vec<_>>()
    });
    Ok(AgentType {
        name: fm.name,
        description: fm.description,
        tools,
        model: fm.model.filter(|m| !m.trim().is_empty() && m != "inherit"),
        background: fm.background,
        permission_mode,
        isolation,
        sandbox,
        instructions: body.to_string(),
    })
}

/// The repository root above `cwd` (the nearest directory holding `.git`),
/// else `cwd`.
fn repo_root(cwd: &Path) -> PathBuf {
    cwd.ancestors()
        .find(|d| d.join(".git").exists())
        .unwrap_or(cwd)
        .to_path_buf()
}

fn find_in(dir: &Path, name: &str) -> Result<Option<AgentType>, String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(None);
    };
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    paths.sort();
    for path in paths {
        let text = std::fs::read_to_string(&path)
            .map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
        // A malformed file is an error only when it could be the one asked
        // for (its file stem or declared name matches).
        let stem_matches = path.file_stem().is_some_and(|s| s == name);
        match parse_type_file(&path, &text) {
            Ok(t) if t.name == name => return Ok(Some(t)),
            Ok(_) => {}
            Err(e) if stem_matches || text.contains(&format!("name: {name}")) => return Err(e),
            Err(_) => {}
        }
    }
    Ok(None)
}

/// Finds the type `name` for an agent working in `cwd`.
pub fn resolve(name: &str, cwd: &Path, config_dir: &Path) -> Result<AgentType, String> {
    let repo_dir = repo_root(cwd).join(".agentd/agents");
    if let Some(t) = find_in(&repo_dir, name)? {
        return Ok(t);
    }
    if let Some(t) = find_in(&config_dir.join("agents"), name)? {
        return Ok(t);
    }
    builtin(name).ok_or_else(|| {
        format!(
            "unknown subagent_type '{name}': built-in types are general-purpose and Explore; \
custom types live in {} and {}",
            repo_dir.display(),
            config_dir.join("agents").display()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtins_resolve_and_custom_files_override_them() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = dir.path().join("cfg");
        let repo = dir.path().join("repo");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::create_dir_all(repo.join("sub")).unwrap();
        assert_eq!(
            resolve("Explore", &repo.join("sub"), &cfg)
                .unwrap()
                .tools
                .unwrap()[0],
            ToolName::Read
        );
        std::fs::create_dir_all(repo.join(".agentd/agents")).unwrap();
        std::fs::write(
            repo.join(".agentd/agents/reviewer.md"),
            "---\nname: reviewer\ndescription: Reviews diffs\ntools: Read, Grep\nmodel: anthropic:claude-x\npermissionMode: plan\n---\nYou review code.\n",
        )
        .unwrap();
        let t = resolve("reviewer", &repo.join("sub"), &cfg).unwrap();
        assert_eq!(t.tools, Some(vec![ToolName::Read, ToolName::Grep]));
        assert_eq!(t.model.as_deref(), Some("anthropic:claude-x"));
        assert_eq!(t.instructions, "You review code.");
        assert_eq!(t.permission_mode, Some(PermissionMode::Plan));
        let err = resolve("nobody", &repo, &cfg).unwrap_err();
        assert!(err.contains("unknown subagent_type 'nobody'"), "{err}");
    }

    #[test]
    fn a_type_can_ask_for_a_worktree_and_a_stricter_sandbox() {
        let p = Path::new("x.md");
        let t = parse_type_file(
            p,
            "---\nname: a\ndescription: d\nisolation: worktree\nsandbox: read-only\n---\nbody",
        )
        .unwrap();
        assert_eq!(t.isolation, Isolation::Worktree);
        assert_eq!(t.sandbox, Some(SandboxMode::ReadOnly));
        let err = parse_type_file(p, "---\nname: a\ndescription: d\nsandbox: yolo\n---\nbody")
            .unwrap_err();
        assert!(err.contains("sandbox 'yolo' is not one of"), "{err}");
        let err = parse_type_file(p, "---\nname: a\ndescription: d\nisolation: vm\n---\nbody")
            .unwrap_err();
        assert!(err.contains("isolation 'vm' is not one of"), "{err}");
    }

    #[test]
    fn malformed_type_files_are_clear_errors() {
        let p = Path::new("x.md");
        assert!(
            parse_type_file(p, "no front matter")
                .unwrap_err()
                .contains("must start")
        );
        assert!(
            parse_type_file(p, "---\nname: a\n")
                .unwrap_err()
                .contains("closing")
        );
        assert!(
            parse_type_file(p, "---\nname: a\ndescription: d\nbogus: 1\n---\nbody")
                .unwrap_err()
                .contains("invalid front matter")
        );
        assert!(
            parse_type_file(p, "---\nname: a\ndescription: d\n---\n")
                .unwrap_err()
                .contains("body")
        );
        assert!(
            parse_type_file(
                p,
                "---\nname: a\ndescription: d\npermissionMode: yolo\n---\nbody"
            )
            .unwrap_err()
            .contains("unknown permissionMode")
        );
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".git")).unwrap();
        std::fs::create_dir_all(dir.path().join(".agentd/agents")).unwrap();
        std::fs::write(
            dir.path().join(".agentd/agents/broken.md"),
            "---\nname: broken\n---\nx",
        )
        .unwrap();
        let err = resolve("broken", dir.path(), &dir.path().join("cfg")).unwrap_err();
        assert!(err.contains("broken.md"), "{err}");
    }
}
