//! `[agents.NAME]`: the coding agents agentd can run over ACP (DESIGN §19),
//! and the built-in entries for Claude Code, Codex and Gemini CLI, offered
//! when their command is on PATH.
//!
//! ```toml
//! [agents.claude-code]
//! command = "claude-agent-acp"
//! args = []
//! env = { ANTHROPIC_API_KEY = "sk-…" }   # added to its environment
//! sandbox = "agent"                       # or "off"
//! writable = ["/var/cache/claude-extra"]
//! ```
//!
//! The process gets the environment tools get (agentd's provider keys and
//! `[secrets]` removed), plus `env`. Under the agent's sandbox it may
//! write beneath its workspace, its temp dir and `writable` (where the
//! external agent keeps its own sessions and login). A built-in entry
//! gets a private home instead (`HomeSpec`, made by
//! `agent::external::home`): never the user's own `~/.claude` and the like,
//! whose settings and hooks a later unconfined run would obey.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::domain::ExternalAgentName;

/// Whether the external agent runs under the agent's sandbox.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ExternalSandbox {
    /// The agent's sandbox (and PID namespace), as its tools get.
    #[default]
    Agent,
    /// Unconfined (the entry's owner decided).
    Off,
}

/// A built-in agent's private home: the variable that moves its config
/// and state (`CLAUDE_CONFIG_DIR`, `CODEX_HOME`, `GEMINI_CLI_HOME`), set to
/// a directory of the agent's own, and the files of the user's own config
/// copied into it when it is made (their settings and login).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HomeSpec {
    /// The variable naming the directory.
    pub var: &'static str,
    /// Where, inside that directory, the agent keeps its files ("" for the
    /// directory itself; Gemini CLI's is `.gemini`).
    pub state: &'static str,
    /// The user's own config directory, relative to HOME.
    pub from: &'static str,
    /// Files of `from` copied into `state` (when they are regular files).
    pub copies: &'static [&'static str],
    /// Settings merged into a file of `state` (made if missing) when the
    /// home is made for a confined agent: (file, JSON object), what the
    /// agent needs to work under the sandbox.
    pub confined_settings: &'static [(&'static str, &'static str)],
}

/// One external agent: how to start it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExternalAgentDef {
    pub name: ExternalAgentName,
    pub command: String,
    pub args: Vec<String>,
    pub env: BTreeMap<String, String>,
    pub sandbox: ExternalSandbox,
    /// Absolute paths it may write beneath besides its workspace.
    pub writable: Vec<PathBuf>,
    /// Hosts its network proxy allows besides its API's (a gateway).
    pub network_allow: Vec<crate::domain::HostPattern>,
    /// Variables set to its temp dir (besides TMPDIR), for agents that
    /// keep their own (Claude Code's `CLAUDE_CODE_TMPDIR`).
    pub tmpdir_vars: Vec<String>,
    /// A built-in entry's private home.
    pub home: Option<HomeSpec>,
    /// Not from config.toml: a built-in entry.
    pub built_in: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEntry {
    /// Optional for a built-in name: its command then, with this entry's
    /// `env`, `sandbox` and `writable` added.
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    #[serde(default)]
    sandbox: ExternalSandbox,
    #[serde(default)]
    writable: Vec<String>,
    #[serde(default)]
    network_allow: Vec<String>,
}

/// config.toml's entries, checked as the file is read.
pub fn deserialize_agents<'de, D>(d: D) -> Result<Vec<ExternalAgentDef>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    let table = BTreeMap::<String, toml::Value>::deserialize(d)?;
    let home = home();
    let mut defs = Vec::new();
    for (name, value) in table {
        let parsed = ExternalAgentName::parse(&name).map_err(serde::de::Error::custom)?;
        let raw: RawEntry = value.try_into().map_err(|e: toml::de::Error| {
            serde::de::Error::custom(format!("agents.{name}: {}", e.message()))
        })?;
        let built_in = BUILT_IN.iter().any(|(n, ..)| *n == name);
        let command = match raw.command {
            Some(c) if c.trim().is_empty() => {
                return Err(serde::de::Error::custom(format!(
                    "agents.{name}: `command` is empty"
                )));
            }
            Some(c) => c,
            None if built_in => String::new(),
            None => {
                return Err(serde::de::Error::custom(format!(
                    "agents.{name}: `command` is required (only the built-in claude-code, codex and gemini have one already)"
                )));
            }
        };
        let writable = raw
            .writable
            .iter()
            .map(|p| expand(p, home.as_deref()))
            .collect::<Result<Vec<_>, String>>()
            .map_err(|e| serde::de::Error::custom(format!("agents.{name}: {e}")))?;
        let network_allow = raw
            .network_allow
            .iter()
            .map(|p| crate::domain::HostPattern::parse(p))
            .collect::<Result<Vec<_>, String>>()
            .map_err(|e| serde::de::Error::custom(format!("agents.{name}.network_allow: {e}")))?;
        defs.push(ExternalAgentDef {
            name: parsed,
            command,
            args: raw.args,
            env: raw.env,
            sandbox: raw.sandbox,
            writable,
            network_allow,
            tmpdir_vars: Vec::new(),
            home: None,
            built_in: false,
        });
    }
    Ok(defs)
}

/// The daemon's HOME, the user's.
pub fn home() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
}

/// `~/x` against `home`; anything else must be absolute.
fn expand(path: &str, home: Option<&Path>) -> Result<PathBuf, String> {
    let expanded = match path.strip_prefix("~/") {
        Some(rest) => home
            .ok_or_else(|| format!("`{path}` needs HOME, which is not set"))?
            .join(rest),
        None => PathBuf::from(path),
    };
    if !expanded.is_absolute() {
        return Err(format!(
            "writable path `{}` must be absolute or start with ~/",
            crate::domain::text::quote(path)
        ));
    }
    Ok(expanded)
}

/// The built-in entries: (name, command, args, private home, variables
/// that name its temp dir).
type BuiltIn = (
    &'static str,
    &'static str,
    &'static [&'static str],
    HomeSpec,
    &'static [&'static str],
);

const BUILT_IN: [BuiltIn; 3] = [
    (
        "claude-code",
        "claude-agent-acp",
        &[],
        HomeSpec {
            var: "CLAUDE_CONFIG_DIR",
            state: "",
            from: ".claude",
            copies: &["settings.json", ".credentials.json"],
            confined_settings: &[],
        },
        &["CLAUDE_CODE_TMPDIR"],
    ),
    (
        "codex",
        "codex-acp",
        &[],
        HomeSpec {
            var: "CODEX_HOME",
            state: "",
            from: ".codex",
            copies: &["config.toml", "auth.json"],
            confined_settings: &[],
        },
        &[],
    ),
    (
        "gemini",
        "gemini",
        &["--acp"],
        HomeSpec {
            var: "GEMINI_CLI_HOME",
            state: ".gemini",
            from: ".gemini",
            copies: &["settings.json", "oauth_creds.json", "google_accounts.json"],
            // The sandbox grants no terminal devices: its pseudo-terminal
            // shell would fail (`forkpty(3) failed`); it falls back to
            // plain child processes with this.
            confined_settings: &[(
                "settings.json",
                r#"{"tools": {"shell": {"enableInteractiveShell": false}}}"#,
            )],
        },
        &[],
    ),
];

/// The names of the built-in entries.
pub fn built_in_names() -> impl Iterator<Item = &'static str> {
    BUILT_IN.iter().map(|(name, ..)| *name)
}

/// The entry named `name`: config.toml's, else a built-in one whose
/// command is on `path` (the daemon's PATH). The error says what to do.
pub fn resolve(
    configured: &[ExternalAgentDef],
    name: &ExternalAgentName,
    path: Option<&std::ffi::OsStr>,
) -> Result<ExternalAgentDef, String> {
    let own = configured.iter().find(|d| &d.name == name);
    let built_in = BUILT_IN.iter().find(|(n, ..)| *n == name.as_str());
    if let Some(def) = own.filter(|d| !d.command.is_empty()) {
        // Its own command for a built-in name is still that agent: it
        // keeps the private home and temp dir variables.
        let mut def = def.clone();
        if let Some((.., home, tmp_vars)) = built_in {
            def.home = Some(*home);
            def.tmpdir_vars = tmp_vars.iter().map(|v| (*v).to_string()).collect();
        }
        return Ok(def);
    }
    let Some((_, command, args, home, tmp_vars)) = built_in else {
        let known: Vec<String> = configured
            .iter()
            .map(|d| d.name.to_string())
            .chain(built_in_names().map(String::from))
            .collect();
        return Err(format!(
            "no external agent `{name}` is configured (known: {}); add [agents.{name}] with its `command` to config.toml",
            known.join(", ")
        ));
    };
    if on_path(command, path).is_none() {
        return Err(format!(
            "`{name}` runs `{command}`, which is not on agentd's PATH; install it, or set [agents.{name}] command = \"/path/to/{command}\" in config.toml"
        ));
    }
    let mut def = ExternalAgentDef {
        name: name.clone(),
        command: (*command).to_string(),
        args: args.iter().map(|a| (*a).to_string()).collect(),
        env: BTreeMap::new(),
        sandbox: ExternalSandbox::Agent,
        writable: Vec::new(),
        network_allow: Vec::new(),
        tmpdir_vars: tmp_vars.iter().map(|v| (*v).to_string()).collect(),
        home: Some(*home),
        built_in: true,
    };
    // A config entry without a command adds to the built-in one.
    if let Some(own) = own {
        def.env = own.env.clone();
        def.sandbox = own.sandbox;
        def.writable.extend(own.writable.iter().cloned());
        def.network_allow.extend(own.network_allow.iter().cloned());
        if !own.args.is_empty() {
            def.args = own.args.clone();
        }
    }
    Ok(def)
}

/// The entries an agent can be run by here: config.toml's and the
/// built-in ones whose command is on `path`, by name.
pub fn available(
    configured: &[ExternalAgentDef],
    path: Option<&std::ffi::OsStr>,
) -> Vec<ExternalAgentName> {
    let mut names: Vec<ExternalAgentName> = configured.iter().map(|d| d.name.clone()).collect();
    // (A config entry without a command counts only if its built-in
    // command is there.)
    names.retain(|n| resolve(configured, n, path).is_ok());
    for (name, command, ..) in BUILT_IN {
        if let Ok(n) = ExternalAgentName::parse(name)
            && !names.contains(&n)
            && on_path(command, path).is_some()
        {
            names.push(n);
        }
    }
    names.sort();
    names
}

/// Where `command` is found on `path` (a command with a `/` as given).
fn on_path(command: &str, path: Option<&std::ffi::OsStr>) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let executable = |p: &Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if command.contains('/') {
        let p = PathBuf::from(command);
        return executable(&p).then_some(p);
    }
    std::env::split_paths(path?)
        .map(|dir| dir.join(command))
        .find(|p| executable(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Deserialize)]
    struct Wrapper {
        #[serde(deserialize_with = "deserialize_agents", default)]
        agents: Vec<ExternalAgentDef>,
    }

    fn parse(text: &str) -> Result<Vec<ExternalAgentDef>, String> {
        toml::from_str::<Wrapper>(text)
            .map(|w| w.agents)
            .map_err(|e| e.message().to_string())
    }

    #[test]
    fn entries_parse_and_are_checked() {
        let defs = parse(
            "[agents.mine]\ncommand = \"/opt/mine\"\nargs = [\"--acp\"]\nenv = { K = \"v\" }\nsandbox = \"off\"\nwritable = [\"/var/mine\"]\n",
        )
        .unwrap();
        assert_eq!(defs.len(), 1);
        assert_eq!(defs[0].name.as_str(), "mine");
        assert_eq!(defs[0].args, vec!["--acp"]);
        assert_eq!(defs[0].env["K"], "v");
        assert_eq!(defs[0].sandbox, ExternalSandbox::Off);
        assert_eq!(defs[0].writable, vec![PathBuf::from("/var/mine")]);
        let added = parse("[agents.claude-code]\nenv = { K = \"v\" }\n").unwrap();
        assert!(added[0].command.is_empty());
        for bad in [
            "[agents.mine]\nargs = []\n",
            "[agents.mine]\ncommand = \"x\"\nsandbox = \"sometimes\"\n",
            "[agents.mine]\ncommand = \"x\"\nteleport = true\n",
            "[agents.Mine]\ncommand = \"x\"\n",
            "[agents.mine]\ncommand = \" \"\n",
            "[agents.mine]\ncommand = \"x\"\nwritable = [\"relative/dir\"]\n",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn built_ins_need_their_command_on_path_and_config_wins() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("claude-agent-acp");
        std::fs::write(&bin, "#!/bin/sh\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
        let path = std::env::join_paths([dir.path()]).unwrap();
        let claude = ExternalAgentName::parse("claude-code").unwrap();
        let def = resolve(&[], &claude, Some(&path)).unwrap();
        assert!(def.built_in);
        assert_eq!(def.command, "claude-agent-acp");
        let codex = ExternalAgentName::parse("codex").unwrap();
        let err = resolve(&[], &codex, Some(&path)).unwrap_err();
        assert!(
            err.contains("codex-acp") && err.contains("not on agentd's PATH"),
            "{err}"
        );
        assert_eq!(available(&[], Some(&path)), vec![claude.clone()]);
        assert_eq!(def.tmpdir_vars, vec!["CLAUDE_CODE_TMPDIR"]);
        // Its own home, never the user's ~/.claude (nothing of HOME is
        // writable).
        let home = def.home.expect("a built-in entry has a private home");
        assert_eq!(home.var, "CLAUDE_CONFIG_DIR");
        assert_eq!(home.from, ".claude");
        assert!(def.writable.is_empty(), "{:?}", def.writable);
        let mine = parse("[agents.claude-code]\ncommand = \"/opt/cc\"\n").unwrap();
        let own = resolve(&mine, &claude, None).unwrap();
        assert_eq!(own.command, "/opt/cc");
        assert_eq!(
            own.home,
            Some(home),
            "its own command keeps the private home"
        );
        // An entry without a command adds its env to the built-in one.
        let keyed = parse(
            "[agents.claude-code]\nenv = { ANTHROPIC_API_KEY = \"k\" }\nwritable = [\"/var/cc\"]\n",
        )
        .unwrap();
        let def = resolve(&keyed, &claude, Some(&path)).unwrap();
        assert_eq!(def.command, "claude-agent-acp");
        assert_eq!(def.env["ANTHROPIC_API_KEY"], "k");
        assert!(def.writable.contains(&PathBuf::from("/var/cc")));
        assert!(
            resolve(&keyed, &claude, None).is_err(),
            "its command must be on PATH"
        );
        assert!(available(&keyed, None).is_empty());
        let unknown = ExternalAgentName::parse("aider").unwrap();
        let err = resolve(&mine, &unknown, Some(&path)).unwrap_err();
        assert!(err.contains("[agents.aider]"), "{err}");
    }
}
