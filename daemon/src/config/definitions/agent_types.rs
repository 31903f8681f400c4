//! Subagent types (DESIGN §7): the built-in `general-purpose` and `Explore`,
//! and custom types from Markdown files with YAML front matter, searched in
//! `<repo>/.agentd/agents/`, `<repo>/.claude/agents/`, then
//! `~/.config/agentd/agents/`, `~/.claude/agents/`, then the built-ins.
//!
//! Claude Code's files are read unchanged: `tools` as a comma list, `model`
//! as `sonnet`/`opus`/`haiku`/`inherit`, and keys agentd has no use for
//! (`color`…) are ignored there — in agentd's own directories an unknown key
//! is an error, since it is most likely a typo.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::type_mcp::TypeMcp;
use super::{FrontMatterError, Split, repo_root, split};
use crate::domain::{HostPattern, Isolation, PermissionMode, SandboxMode, ToolAllowlist, ToolName};

/// The type used when `subagent_type` is omitted.
pub const DEFAULT_TYPE: &str = "general-purpose";

/// Tools an Explore agent may run: it looks, it does not touch. Not
/// TodoWrite: an Explore agent answers a question in a few lookups, and a
/// plan for that would only be noise in `list`.
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
    pub tools: Option<ToolAllowlist>,
    pub model: Option<String>,
    pub background: bool,
    /// Overrides the parent's permission mode for agents of this type.
    pub permission_mode: Option<PermissionMode>,
    /// Where agents of this type work (front matter `isolation: worktree`).
    pub isolation: Isolation,
    /// A stricter sandbox for agents of this type (front matter `sandbox`);
    /// never looser than the parent's.
    pub sandbox: Option<SandboxMode>,
    /// Hosts its agents' proxy allows (front matter `network_allow`);
    /// honoured only for a type of the person's own (a repository's type
    /// never widens the network).
    pub network_allow: Vec<HostPattern>,
    /// The type's own instructions, placed before the environment section.
    pub instructions: String,
    /// The MCP servers the type defines or names (front matter
    /// `mcpServers`).
    pub mcp: TypeMcp,
    /// Where the type was defined: a repository's type file is the
    /// repository's, and its servers run only once approved.
    pub origin: TypeOrigin,
}

/// Where an agent type comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TypeOrigin {
    BuiltIn,
    /// A file in the repository (`.agentd/agents`, `.claude/agents`):
    /// whoever wrote the repository wrote it.
    Repository(PathBuf),
    /// A file of the person's own (`~/.config/agentd/agents`,
    /// `~/.claude/agents`).
    User(PathBuf),
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
            network_allow: Vec::new(),
            mcp: TypeMcp::default(),
            origin: TypeOrigin::BuiltIn,
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
            tools: Some(ToolAllowlist::only(&READ_ONLY_TOOLS)),
            model: None,
            background: false,
            permission_mode: None,
            isolation: Isolation::None,
            sandbox: None,
            network_allow: Vec::new(),
            mcp: TypeMcp::default(),
            origin: TypeOrigin::BuiltIn,
            instructions: "You are a read-only exploration agent. Find files with Glob, search \
contents with Grep, read with Read. You cannot and must not modify anything. Answer with the \
facts you found, citing file paths and line numbers."
                .into(),
        }),
        _ => None,
    }
}

/// Where a type file comes from: its dialect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// `.agentd/agents`: every key known, unknown keys refused.
    Agentd,
    /// `.claude/agents`: Claude Code's format; keys for its UI are ignored.
    ClaudeCode,
}

/// Front matter of a custom type file.
#[derive(Debug, Deserialize)]
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
    #[serde(default, alias = "networkAllow")]
    network_allow: Vec<String>,
    #[serde(default, rename = "permissionMode", alias = "permission_mode")]
    permission_mode: Option<String>,
    #[serde(default, rename = "mcpServers", alias = "mcp_servers")]
    mcp_servers: Option<serde_norway::Value>,
    /// Keys not above: refused or ignored as the dialect says.
    #[serde(flatten)]
    other: std::collections::BTreeMap<String, serde_norway::Value>,
}

/// Claude Code's model aliases, as the Anthropic models they name.
const MODEL_ALIASES: [(&str, &str); 3] = [
    ("sonnet", "anthropic:claude-sonnet-4-5"),
    ("opus", "anthropic:claude-opus-4-1"),
    ("haiku", "anthropic:claude-haiku-4-5"),
];

/// The model an agent of a type runs on, given its parent's: the type's
/// own model; a Claude Code alias resolved to its Anthropic model when the
/// parent runs on Anthropic (on another provider the alias names nothing
/// there, and the parent's model is kept); None to inherit.
pub fn model_for_child(type_model: Option<&str>, parent_model: &str) -> Option<String> {
    let model = type_model?.trim();
    match MODEL_ALIASES.iter().find(|(alias, _)| *alias == model) {
        Some((_, full)) if parent_model.starts_with("anthropic:") => Some(full.to_string()),
        Some(_) => None,
        None => Some(model.to_string()),
    }
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum ToolList {
    List(Vec<String>),
    Comma(String),
}

/// Parses a type file: `---`, YAML front matter, `---`, then the prompt.
pub fn parse_type_file(path: &Path, text: &str) -> Result<AgentType, String> {
    parse_type_file_as(path, text, Dialect::Agentd)
}

/// Parses a type file written in `dialect`.
pub fn parse_type_file_as(path: &Path, text: &str, dialect: Dialect) -> Result<AgentType, String> {
    let where_ = path.display();
    let Split { yaml, body } = split(text).map_err(|e| match e {
        FrontMatterError::NoOpening => {
            format!("{where_}: must start with a '---' line and YAML front matter")
        }
        FrontMatterError::NoClosing => {
            format!("{where_}: the front matter has no closing '---' line")
        }
    })?;
    let body = body.trim_start_matches(['\r', '\n']).trim_end();
    let fm: FrontMatter =
        serde_norway::from_str(yaml).map_err(|e| format!("{where_}: invalid front matter: {e}"))?;
    if let Some(key) = fm.other.keys().next() {
        match dialect {
            Dialect::Agentd => {
                return Err(format!(
                    "{where_}: invalid front matter: unknown field `{}` (known: name, description, \
                     tools, model, background, isolation, sandbox, network_allow, permissionMode, mcpServers)",
                    crate::error::quote(key)
                ));
            }
            Dialect::ClaudeCode => {
                tracing::debug!(file = %where_, keys = ?fm.other.keys().collect::<Vec<_>>(), "keys agentd has no use for are ignored");
            }
        }
    }
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
    let network_allow = fm
        .network_allow
        .iter()
        .map(|p| HostPattern::parse(p).map_err(|why| format!("{where_}: network_allow: {why}")))
        .collect::<Result<Vec<_>, _>>()?;
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
    let mcp = match &fm.mcp_servers {
        None => TypeMcp::default(),
        Some(value) => TypeMcp::parse(value).map_err(|e| format!("{where_}: {e}"))?,
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
        // the type gets less, never more. MCP tools and patterns are kept,
        // and the type's own servers are its own: all their tools.
        let own = mcp.inline.iter().map(|d| format!("mcp__{}__*", d.name));
        ToolAllowlist::lenient(
            names
                .into_iter()
                .chain(own)
                .collect::<Vec<_>>()
                .iter()
                .map(String::as_str),
        )
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
        network_allow,
        instructions: body.to_string(),
        mcp,
        // Until the caller says it is the person's own: a type whose
        // origin is not known is trusted no more than a repository's.
        origin: TypeOrigin::Repository(path.to_path_buf()),
    })
}

/// The most bytes of one type file (as for fork profiles).
pub const MAX_TYPE_BYTES: u64 = 64 * 1024;
/// The most directory entries looked at in one types directory.
const MAX_ENTRIES: usize = 4096;

/// The text of the type file `path` in `dir`, read as fork profiles are: a
/// regular file resolving inside `dir`, opened without blocking, at most
/// 64 KiB. A repository decides what these files are (`/dev/zero`, a FIFO,
/// a 200 MB file): none of it may hang or fill the daemon.
fn read_type_file(dir: &Path, path: &Path) -> Result<String, String> {
    use crate::beneath::{ContainedRead, Unreadable};
    let bytes = crate::beneath::read_contained(dir, path, MAX_TYPE_BYTES).map_err(|e| match e {
        ContainedRead::Missing => "it cannot be resolved".to_string(),
        ContainedRead::Outside => format!("it links outside {}", dir.display()),
        ContainedRead::Refused(Unreadable::NotRegular) => {
            "it is not a regular file (a FIFO, device or directory)".to_string()
        }
        ContainedRead::Refused(Unreadable::TooLarge(n)) => {
            format!("it is {n} bytes; the limit is {MAX_TYPE_BYTES} bytes (64 KiB)")
        }
        ContainedRead::Refused(Unreadable::Io(e)) => format!("it cannot be read: {e}"),
    })?;
    String::from_utf8(bytes).map_err(|_| "it is not UTF-8 text".to_string())
}

fn find_in(
    dir: &Path,
    name: &str,
    dialect: Dialect,
    skipped: &mut Vec<String>,
) -> Result<Option<AgentType>, String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(None);
    };
    let mut paths: Vec<PathBuf> = entries
        .take(MAX_ENTRIES)
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    paths.sort();
    for path in paths {
        // A file that cannot be the one asked for is skipped (and said so);
        // one that could (its stem matches) is an error.
        let stem_matches = path.file_stem().is_some_and(|s| s == name);
        let text = match read_type_file(dir, &path) {
            Ok(text) => text,
            Err(why) if stem_matches => {
                return Err(format!("agent type file {}: {why}", path.display()));
            }
            Err(why) => {
                tracing::warn!(file = %path.display(), "skipped an agent type file: {why}");
                skipped.push(format!("{} ({why})", path.display()));
                continue;
            }
        };
        match parse_type_file_as(&path, &text, dialect) {
            Ok(t) if t.name == name => return Ok(Some(t)),
            Ok(_) => {}
            Err(e) if stem_matches || text.contains(&format!("name: {name}")) => return Err(e),
            Err(_) => {}
        }
    }
    Ok(None)
}

/// Why a type cannot be had.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TypeError {
    /// No type of that name, built in or in any place searched.
    Unknown(String),
    /// Its file cannot be read or is not a valid type.
    Unusable(String),
}

impl std::fmt::Display for TypeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TypeError::Unknown(why) | TypeError::Unusable(why) => f.write_str(why),
        }
    }
}

/// Finds the type `name` for an agent working in `cwd`.
pub fn resolve(name: &str, cwd: &Path, config_dir: &Path) -> Result<AgentType, TypeError> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    resolve_in(name, cwd, config_dir, home.as_deref())
}

/// `resolve`, with the home directory given.
fn resolve_in(
    name: &str,
    cwd: &Path,
    config_dir: &Path,
    home: Option<&Path>,
) -> Result<AgentType, TypeError> {
    let root = repo_root(cwd);
    let repo_dir = root.join(".agentd/agents");
    let home_claude = home.map(|h| h.join(".claude/agents"));
    // Each place, its dialect, and whether its files are the person's own.
    let places = [
        (Some(repo_dir.clone()), Dialect::Agentd, false),
        (
            Some(root.join(".claude/agents")),
            Dialect::ClaudeCode,
            false,
        ),
        (Some(config_dir.join("agents")), Dialect::Agentd, true),
        (home_claude, Dialect::ClaudeCode, true),
    ];
    let mut skipped = Vec::new();
    for (dir, dialect, own) in places {
        if let Some(dir) = dir
            && let Some(mut t) =
                find_in(&dir, name, dialect, &mut skipped).map_err(TypeError::Unusable)?
        {
            if own && let TypeOrigin::Repository(file) = t.origin {
                t.origin = TypeOrigin::User(file);
            }
            return Ok(t);
        }
    }
    builtin(name).ok_or_else(|| {
        TypeError::Unknown(unknown_type(name, &repo_dir, &root, config_dir, &skipped))
    })
}

fn unknown_type(
    name: &str,
    repo_dir: &Path,
    root: &Path,
    config_dir: &Path,
    skipped: &[String],
) -> String {
    let skipped = if skipped.is_empty() {
        String::new()
    } else {
        format!(
            "; skipped, unreadable: {}",
            skipped
                .iter()
                .take(5)
                .cloned()
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    format!(
        "unknown subagent_type '{}': built-in types are general-purpose and Explore; \
custom types live in {}, {}, {} and ~/.claude/agents{skipped}",
        crate::error::quote(name),
        repo_dir.display(),
        root.join(".claude/agents").display(),
        config_dir.join("agents").display()
    )
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
                .unwrap()
                .tools()[0],
            ToolName::Read
        );
        std::fs::create_dir_all(repo.join(".agentd/agents")).unwrap();
        std::fs::write(
            repo.join(".agentd/agents/reviewer.md"),
            "---\nname: reviewer\ndescription: Reviews diffs\ntools: Read, Grep\nmodel: anthropic:claude-x\npermissionMode: plan\n---\nYou review code.\n",
        )
        .unwrap();
        let t = resolve("reviewer", &repo.join("sub"), &cfg).unwrap();
        assert_eq!(
            t.tools,
            Some(ToolAllowlist::only(&[ToolName::Read, ToolName::Grep]))
        );
        assert_eq!(t.model.as_deref(), Some("anthropic:claude-x"));
        assert_eq!(t.instructions, "You review code.");
        assert_eq!(t.permission_mode, Some(PermissionMode::Plan));
        let err = resolve("nobody", &repo, &cfg).unwrap_err();
        assert!(
            matches!(&err, TypeError::Unknown(m) if m.contains("unknown subagent_type 'nobody'")),
            "{err}"
        );
    }

    /// A file as Claude Code writes it (its documented sub-agent format).
    const CLAUDE_CODE_REVIEWER: &str = "---\nname: code-reviewer\ndescription: Expert code \
review specialist. Use proactively after writing code.\ntools: Read, Grep, Glob, Bash, \
WebFetch\nmodel: sonnet\ncolor: purple\n---\n\nYou are a senior code reviewer.\n";

    #[test]
    fn claude_code_agent_files_are_read_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = dir.path().join("cfg");
        let repo = dir.path().join("repo");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::create_dir_all(repo.join(".claude/agents")).unwrap();
        std::fs::write(
            repo.join(".claude/agents/code-reviewer.md"),
            CLAUDE_CODE_REVIEWER,
        )
        .unwrap();
        let t = resolve("code-reviewer", &repo, &cfg).unwrap();
        // WebFetch is not agentd's: left out, never more.
        assert_eq!(
            t.tools,
            Some(ToolAllowlist::only(&[
                ToolName::Read,
                ToolName::Grep,
                ToolName::Glob,
                ToolName::Bash
            ]))
        );
        assert_eq!(t.model.as_deref(), Some("sonnet"));
        assert_eq!(t.instructions, "You are a senior code reviewer.");
        // The same file among agentd's own types: `color` is refused there.
        let err = parse_type_file(Path::new("x.md"), CLAUDE_CODE_REVIEWER).unwrap_err();
        assert!(err.contains("unknown field `color`"), "{err}");
        // agentd's directory wins over Claude Code's for the same name.
        std::fs::create_dir_all(repo.join(".agentd/agents")).unwrap();
        std::fs::write(
            repo.join(".agentd/agents/code-reviewer.md"),
            "---\nname: code-reviewer\ndescription: ours\n---\nOurs.\n",
        )
        .unwrap();
        assert_eq!(
            resolve("code-reviewer", &repo, &cfg).unwrap().description,
            "ours"
        );
        // ~/.claude/agents too, after the repository's and agentd's own;
        // `model: inherit` means the parent's model.
        let home = dir.path().join("home");
        std::fs::create_dir_all(home.join(".claude/agents")).unwrap();
        std::fs::write(
            home.join(".claude/agents/helper.md"),
            "---\nname: helper\ndescription: Helps\nmodel: inherit\ncolor: red\n---\nHelp.\n",
        )
        .unwrap();
        let t = resolve_in("helper", &repo, &cfg, Some(&home)).unwrap();
        assert_eq!(t.model, None);
        assert_eq!(t.instructions, "Help.");
        assert!(resolve_in("helper", &repo, &cfg, None).is_err());
    }

    #[test]
    fn claude_code_model_aliases_resolve_on_anthropic_and_inherit_elsewhere() {
        let on = |m, parent| model_for_child(m, parent);
        assert_eq!(
            on(Some("sonnet"), "anthropic:claude-opus-4-1").as_deref(),
            Some("anthropic:claude-sonnet-4-5")
        );
        assert_eq!(
            on(Some("haiku"), "anthropic:x").as_deref(),
            Some("anthropic:claude-haiku-4-5")
        );
        assert_eq!(on(Some("sonnet"), "openai:gpt-5"), None);
        assert_eq!(on(Some("opus"), "scripted:s.json"), None);
        assert_eq!(on(None, "anthropic:x"), None);
        assert_eq!(
            on(Some("openai:gpt-5"), "anthropic:x").as_deref(),
            Some("openai:gpt-5")
        );
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
        let hosts = parse_type_file(
            p,
            "---\nname: a\ndescription: d\nnetwork_allow: [\"*.corp.example\", \"h:8443\"]\n---\nbody",
        )
        .unwrap();
        assert_eq!(hosts.network_allow.len(), 2);
        let bad = parse_type_file(
            p,
            "---\nname: a\ndescription: d\nnetwork_allow: [\"a b\"]\n---\nb",
        )
        .unwrap_err();
        assert!(bad.contains("network_allow"), "{bad}");
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
        assert!(
            matches!(&err, TypeError::Unusable(m) if m.contains("broken.md")),
            "{err}"
        );
    }

    #[test]
    fn a_types_servers_are_read_and_its_origin_says_whose_they_are() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        let cfg = dir.path().join("cfg");
        let home = dir.path().join("home");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        for d in [
            repo.join(".claude/agents"),
            cfg.join("agents"),
            home.join(".claude/agents"),
        ] {
            std::fs::create_dir_all(d).unwrap();
        }
        let file = |servers: &str| {
            format!(
                "---\nname: db-helper\ndescription: Queries\ntools: Read, mcp__github__*\n\
                 mcpServers:\n{servers}---\nYou query.\n"
            )
        };
        std::fs::write(
            home.join(".claude/agents/db.md"),
            file("  - github\n  - db:\n      command: db-server\n"),
        )
        .unwrap();
        let t = resolve_in("db-helper", &repo, &cfg, Some(&home)).unwrap();
        assert_eq!(
            t.origin,
            TypeOrigin::User(home.join(".claude/agents/db.md"))
        );
        assert_eq!(t.mcp.inline.len(), 1);
        assert_eq!(t.mcp.references[0].as_str(), "github");
        // Its own server's tools are on its list; others' only as listed.
        let tools = t.tools.unwrap();
        let tool = |n: &str| crate::domain::McpToolName::parse(n).unwrap();
        assert!(tools.allows_mcp(&tool("mcp__db__query")));
        assert!(tools.allows_mcp(&tool("mcp__github__search")));
        assert!(!tools.allows_mcp(&tool("mcp__other__x")));

        // The same in agentd's own dialect, which knows the key.
        std::fs::write(cfg.join("agents/db.md"), file("  db:\n    command: mine\n")).unwrap();
        let t = resolve_in("db-helper", &repo, &cfg, Some(&home)).unwrap();
        assert_eq!(t.origin, TypeOrigin::User(cfg.join("agents/db.md")));

        // A repository's type file is the repository's.
        std::fs::write(
            repo.join(".claude/agents/db.md"),
            file("  db:\n    command: theirs\n"),
        )
        .unwrap();
        let t = resolve_in("db-helper", &repo, &cfg, Some(&home)).unwrap();
        assert_eq!(
            t.origin,
            TypeOrigin::Repository(repo.join(".claude/agents/db.md"))
        );
        // A bad definition makes the type unusable, saying why.
        std::fs::write(
            repo.join(".claude/agents/db.md"),
            file("  db:\n    command: x\n    sandbox: off\n"),
        )
        .unwrap();
        let err = resolve_in("db-helper", &repo, &cfg, Some(&home)).unwrap_err();
        assert!(
            matches!(&err, TypeError::Unusable(m) if m.contains("server \"db\"") && m.contains("sandbox")),
            "{err}"
        );
    }
}
