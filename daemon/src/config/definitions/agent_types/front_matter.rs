//! A custom type file: YAML front matter, then the prompt, in agentd's
//! dialect or Claude Code's.

use std::path::Path;

use serde::Deserialize;

use super::super::{FrontMatterError, Split, split};
use super::{AgentType, TypeMcp, TypeOrigin};
use crate::domain::{
    Budget, FamilyLimits, HostPattern, Isolation, PermissionMode, SandboxMode, ToolAllowlist,
};

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
    #[serde(default)]
    max_children: Option<u32>,
    #[serde(default)]
    max_depth: Option<u32>,
    #[serde(default)]
    max_concurrent_requests: Option<u32>,
    #[serde(default)]
    budget_usd: Option<f64>,
    #[serde(default)]
    budget_tokens: Option<u64>,
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

/// The family limits and budget a type sets. They only tighten: a
/// repository's type may set them.
fn caps(fm: &FrontMatter) -> Result<(FamilyLimits, Option<Budget>), String> {
    let limits = FamilyLimits::new(fm.max_children, fm.max_depth, fm.max_concurrent_requests)?;
    let budget = match (fm.budget_usd, fm.budget_tokens) {
        (None, None) => None,
        (usd, tokens) => Some(
            Budget::new(usd, tokens).map_err(|why| format!("budget_usd / budget_tokens: {why}"))?,
        ),
    };
    Ok((limits, budget))
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
                     tools, model, background, isolation, sandbox, network_allow, permissionMode, mcpServers, \
                     max_children, max_depth, max_concurrent_requests, budget_usd, budget_tokens)",
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
    let (limits, budget) = caps(&fm).map_err(|why| format!("{where_}: {why}"))?;
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
        limits,
        budget,
    })
}
