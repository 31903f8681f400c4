//! `sandbox` in config.toml: the mode alone (`sandbox = "read-only"`) or a
//! table that also adjusts what confined processes may not read
//! (DESIGN §22):
//!
//! ```toml
//! [sandbox]
//! mode = "workspace-write"
//! deny_read = ["~/work/customer-keys", "/srv/secrets"]
//! allow_read = ["~/.docker/config.json"]
//! ```
//!
//! Paths are absolute or start with `~/` (the home directory); anything
//! else is refused as the file is read. `allow_read` takes entries off
//! the built-in list of secret stores only: agentd's own directories stay
//! denied whatever it says.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::domain::SandboxMode;

/// The `sandbox` setting.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SandboxSetting {
    /// How tools are confined unless an agent asks for another mode.
    pub mode: SandboxMode,
    /// Also denied to confined processes.
    pub deny_read: Vec<PathBuf>,
    /// Taken off the built-in deny list.
    pub allow_read: Vec<PathBuf>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Raw {
    Mode(SandboxMode),
    Table(Table),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Table {
    #[serde(default)]
    mode: SandboxMode,
    #[serde(default)]
    deny_read: Vec<String>,
    #[serde(default)]
    allow_read: Vec<String>,
}

impl<'de> Deserialize<'de> for SandboxSetting {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<SandboxSetting, D::Error> {
        let raw = Raw::deserialize(d).map_err(|_| {
            serde::de::Error::custom(
                "sandbox is \"workspace-write\", \"read-only\" or \"off\", or a table with mode, deny_read and allow_read",
            )
        })?;
        match raw {
            Raw::Mode(mode) => Ok(SandboxSetting {
                mode,
                ..SandboxSetting::default()
            }),
            Raw::Table(t) => {
                let home = agentd_shared::paths::home_dir();
                let paths = |key: &str, list: &[String]| -> Result<Vec<PathBuf>, D::Error> {
                    list.iter()
                        .map(|p| {
                            expand(p, &home).map_err(|why| {
                                serde::de::Error::custom(format!("sandbox.{key}: {why}"))
                            })
                        })
                        .collect()
                };
                Ok(SandboxSetting {
                    mode: t.mode,
                    deny_read: paths("deny_read", &t.deny_read)?,
                    allow_read: paths("allow_read", &t.allow_read)?,
                })
            }
        }
    }
}

/// `~/x` under `home`, or an absolute path as it is.
fn expand(path: &str, home: &Path) -> Result<PathBuf, String> {
    let shown: String = path
        .chars()
        .take(60)
        .collect::<String>()
        .escape_debug()
        .to_string();
    if path.chars().any(char::is_control) {
        return Err(format!("\"{shown}\" holds control characters"));
    }
    if let Some(rest) = path.strip_prefix("~/") {
        return Ok(home.join(rest));
    }
    let p = PathBuf::from(path);
    if p.is_absolute() {
        Ok(p)
    } else {
        Err(format!(
            "\"{shown}\" is neither absolute nor under ~/ (a relative path would depend on where an agent runs)"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Deserialize)]
    struct Doc {
        sandbox: SandboxSetting,
    }

    fn parse(text: &str) -> Result<SandboxSetting, String> {
        toml::from_str::<Doc>(text)
            .map(|d| d.sandbox)
            .map_err(|e| e.message().to_string())
    }

    #[test]
    fn the_mode_alone_and_the_table_are_both_read() {
        assert_eq!(
            parse(r#"sandbox = "read-only""#).unwrap().mode,
            SandboxMode::ReadOnly
        );
        let s = parse("[sandbox]\ndeny_read = [\"/srv/keys\"]\nallow_read = [\"/x\"]\n").unwrap();
        assert_eq!(s.mode, SandboxMode::WorkspaceWrite);
        assert_eq!(s.deny_read, vec![PathBuf::from("/srv/keys")]);
        assert_eq!(s.allow_read, vec![PathBuf::from("/x")]);
    }

    #[test]
    fn relative_paths_unknown_keys_and_modes_are_refused() {
        let e = parse("[sandbox]\ndeny_read = [\"keys\"]\n").unwrap_err();
        assert!(
            e.contains("sandbox.deny_read") && e.contains("neither absolute"),
            "{e}"
        );
        assert!(parse("[sandbox]\ndeny = [\"/k\"]\n").is_err());
        assert!(parse(r#"sandbox = "everything""#).is_err());
    }

    #[test]
    fn a_home_path_is_expanded() {
        let home = Path::new("/home/u");
        assert_eq!(expand("~/.ssh", home).unwrap(), home.join(".ssh"));
        assert!(expand("~user/.ssh", home).is_err(), "only ~/ is expanded");
    }
}
