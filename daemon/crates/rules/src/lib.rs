//! Permission rules in Claude Code's syntax and semantics (DESIGN §24):
//! what `permissions.allow`, `ask` and `deny` in `settings.json` (and
//! `[permissions]` in agentd's config) say of one tool call.
//!
//! - `pattern`: one rule as written, parsed (malformed rules are refused
//!   with the rule quoted);
//! - `shell`: a Bash command split at its operators with its wrappers
//!   looked through (what cannot be split safely is never allowed);
//! - `paths`: `Read(…)`/`Edit(…)` paths, gitignore-style.
//!
//! The decision: any deny that matches wins; then any ask; then allow,
//! which for a compound command needs every part allowed. A bare tool name
//! matches every use of the tool.

pub mod hook_output;
pub mod hooks;
pub mod paths;
pub mod pattern;
pub mod remember;
pub mod settings;
pub mod shell;

use std::path::{Path, PathBuf};

use serde_json::Value;

pub use paths::Places;
pub use pattern::{CommandPattern, Pattern};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    Allow,
    Ask,
    Deny,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Allow => "allow",
            Kind::Ask => "ask",
            Kind::Deny => "deny",
        }
    }
}

/// One rule: what it says, as written, and where it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    pub kind: Kind,
    pub pattern: Pattern,
    /// As written (`Bash(rm:*)`).
    pub text: String,
    /// The file it came from, as shown (`~/.claude/settings.json`).
    pub source: String,
    /// The directory that file speaks for (`/path` rules start there).
    pub settings_root: PathBuf,
}

impl Rule {
    pub fn new(kind: Kind, text: &str, source: &str, settings_root: &Path) -> Result<Rule, String> {
        Ok(Rule {
            kind,
            pattern: pattern::parse(text)?,
            text: text.to_string(),
            source: source.to_string(),
            settings_root: settings_root.to_path_buf(),
        })
    }
}

/// One tool call, as the rules see it.
#[derive(Debug, Clone)]
pub struct Call<'a> {
    /// The tool's name (`Bash`, `Read`, `mcp__github__create_issue`).
    pub tool: &'a str,
    pub input: &'a Value,
    pub cwd: &'a Path,
    pub home: &'a Path,
}

/// What the rules decide.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision<'r> {
    /// No rule speaks: the permission mode decides.
    None,
    Allow(&'r Rule),
    Ask(Why<'r>),
    Deny(&'r Rule),
}

/// Why a call is asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Why<'r> {
    Rule(&'r Rule),
    /// Allow rules would have let it run, but the command cannot be taken
    /// apart safely.
    Unparsed(&'static str),
}

/// The paths a call of a file tool touches (absolute, normalised), and
/// whether the tool reads or edits.
fn target(call: &Call<'_>) -> Option<(bool, PathBuf)> {
    let (edit, field) = match call.tool {
        "Read" => (false, "file_path"),
        "Grep" | "Glob" => (false, "path"),
        "Write" | "Edit" | "NotebookEdit" => (true, "file_path"),
        _ => return None,
    };
    let given = call.input[field].as_str().unwrap_or(".");
    let given = Path::new(given);
    let joined = if given.is_absolute() {
        given.to_path_buf()
    } else {
        call.cwd.join(given)
    };
    Some((edit, normalise(&joined)))
}

/// `path` with `.` and `..` resolved lexically.
fn normalise(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            c => out.push(c),
        }
    }
    out
}

/// Whether `rule` speaks of the whole call (Bash: one of its commands,
/// `command`, instead).
fn matches(rule: &Rule, call: &Call<'_>, command: Option<&str>) -> bool {
    let places = || Places {
        cwd: call.cwd.to_path_buf(),
        home: call.home.to_path_buf(),
        settings: rule.settings_root.clone(),
    };
    match &rule.pattern {
        Pattern::Tool(name) => name == call.tool,
        Pattern::McpServer(server) => call
            .tool
            .strip_prefix("mcp__")
            .and_then(|t| t.split_once("__"))
            .is_some_and(|(s, _)| s == server),
        Pattern::Bash(p) => call.tool == "Bash" && command.is_some_and(|c| p.matches(c)),
        Pattern::Read(p) => target(call).is_some_and(|(_, path)| p.matches(&path, &places())),
        Pattern::Edit(p) => {
            target(call).is_some_and(|(edit, path)| edit && p.matches(&path, &places()))
        }
        Pattern::Agent(t) => {
            call.tool == "Agent" && call.input["subagent_type"].as_str() == Some(t.as_str())
        }
        Pattern::WebFetch(domain) => {
            call.tool == "WebFetch"
                && call.input["url"]
                    .as_str()
                    .and_then(host)
                    .is_some_and(|h| h == *domain || h.ends_with(&format!(".{domain}")))
        }
    }
}

fn host(url: &str) -> Option<String> {
    let rest = url.split_once("://")?.1;
    let host = rest.split(['/', '?', '#']).next()?;
    let host = host.rsplit('@').next()?;
    Some(host.split(':').next()?.to_ascii_lowercase())
}

/// What `rules` decide of `call`: deny, then ask, then allow.
pub fn decide<'r>(rules: &'r [Rule], call: &Call<'_>) -> Decision<'r> {
    let of = |kind: Kind| rules.iter().filter(move |r| r.kind == kind);
    if call.tool != "Bash" {
        for kind in [Kind::Deny, Kind::Ask, Kind::Allow] {
            if let Some(r) = of(kind).find(|r| matches(r, call, None)) {
                return match kind {
                    Kind::Deny => Decision::Deny(r),
                    Kind::Ask => Decision::Ask(Why::Rule(r)),
                    Kind::Allow => Decision::Allow(r),
                };
            }
        }
        return Decision::None;
    }
    let line = call.input["command"].as_str().unwrap_or("");
    // A bare `Bash` rule speaks of every command, parsed or not.
    let bare =
        |kind: Kind| of(kind).find(|r| matches!(&r.pattern, Pattern::Tool(t) if t == "Bash"));
    let commands = match shell::parse(line) {
        shell::Parsed::Commands(c) => c,
        shell::Parsed::Unparsed(why) => {
            // Deny rules still see the whole line as written.
            if let Some(r) = bare(Kind::Deny)
                .or_else(|| of(Kind::Deny).find(|r| matches(r, call, Some(line.trim()))))
            {
                return Decision::Deny(r);
            }
            if let Some(r) = bare(Kind::Ask) {
                return Decision::Ask(Why::Rule(r));
            }
            let would_allow = bare(Kind::Allow).is_some()
                || of(Kind::Allow).any(|r| matches(r, call, Some(line.trim())));
            return if would_allow {
                Decision::Ask(Why::Unparsed(why))
            } else {
                Decision::None
            };
        }
    };
    let speaks = |kind: Kind, c: &str| {
        of(kind).find(|r| {
            matches(r, call, Some(c)) || matches!(&r.pattern, Pattern::Tool(t) if t == "Bash")
        })
    };
    for kind in [Kind::Deny, Kind::Ask] {
        if let Some(r) = commands.iter().find_map(|c| speaks(kind, c)) {
            return if kind == Kind::Deny {
                Decision::Deny(r)
            } else {
                Decision::Ask(Why::Rule(r))
            };
        }
    }
    let allowed: Vec<Option<&Rule>> = commands.iter().map(|c| speaks(Kind::Allow, c)).collect();
    match allowed.iter().all(Option::is_some) {
        true => allowed
            .into_iter()
            .flatten()
            .next()
            .map_or(Decision::None, Decision::Allow),
        false => Decision::None,
    }
}

#[cfg(test)]
mod tests;
