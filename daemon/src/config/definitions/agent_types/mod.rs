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

mod builtin;
mod front_matter;
#[cfg(test)]
mod tests;

use super::repo_root;
use super::type_mcp::TypeMcp;
use crate::domain::{
    Budget, FamilyLimits, HostPattern, Isolation, PermissionMode, SandboxMode, ToolAllowlist,
};
use builtin::builtin;
pub use front_matter::{Dialect, model_for_child, parse_type_file, parse_type_file_as};

/// The type used when `subagent_type` is omitted.
pub const DEFAULT_TYPE: &str = "general-purpose";

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
    /// Limits on how the family of an agent of this type fans out
    /// (`max_children`, `max_depth`, `max_concurrent_requests`; DESIGN §24).
    pub limits: FamilyLimits,
    /// The budget an agent of this type gets unless it is given one
    /// (`budget_usd`, `budget_tokens`).
    pub budget: Option<Budget>,
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
