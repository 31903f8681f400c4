//! Definitions people write for agents as Markdown files with YAML front
//! matter: agent types (`agent_types`, Claude Code's format too) and fork
//! profiles (`fork_profile`). Both are read by the one reader here and
//! looked up from the repository an agent works in.

pub mod agent_types;
pub mod fork_profile;
pub mod type_mcp;

use std::path::{Path, PathBuf};

/// A definition file split at its front matter.
pub struct Split<'a> {
    /// The YAML between the `---` lines.
    pub yaml: &'a str,
    /// What follows the closing `---` line, as it is.
    pub body: &'a str,
}

/// Why a text is not a definition file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrontMatterError {
    /// It does not start with a `---` line.
    NoOpening,
    /// Its front matter has no closing `---` line.
    NoClosing,
}

/// Splits `text`: a `---` line, YAML front matter, a `---` line, then the
/// body.
pub fn split(text: &str) -> Result<Split<'_>, FrontMatterError> {
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
        .ok_or(FrontMatterError::NoOpening)?;
    let end = rest.find("\n---").ok_or(FrontMatterError::NoClosing)?;
    Ok(Split {
        yaml: &rest[..end],
        body: &rest[end + 4..],
    })
}

/// The repository root above `cwd` (the nearest directory holding
/// `.git`), else `cwd`: where a repository's definitions are looked up.
pub fn repo_root(cwd: &Path) -> PathBuf {
    cwd.ancestors()
        .find(|d| d.join(".git").exists())
        .unwrap_or(cwd)
        .to_path_buf()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn front_matter_is_split_from_the_body() {
        let s = split("---\nname: a\n---\nbody\n").unwrap();
        assert_eq!((s.yaml, s.body), ("name: a", "\nbody\n"));
        let s = split("---\r\nname: a\r\n---\r\n").unwrap();
        assert_eq!(s.yaml, "name: a\r");
        assert_eq!(split("name: a").err(), Some(FrontMatterError::NoOpening));
        assert_eq!(
            split("---\nname: a\n").err(),
            Some(FrontMatterError::NoClosing)
        );
    }

    #[test]
    fn the_repository_root_is_the_nearest_directory_with_git() {
        let dir = tempfile::tempdir().unwrap();
        let deep = dir.path().join("a/b");
        std::fs::create_dir_all(&deep).unwrap();
        std::fs::create_dir(dir.path().join("a/.git")).unwrap();
        assert_eq!(repo_root(&deep), dir.path().join("a"));
        let lone = tempfile::tempdir().unwrap();
        assert_eq!(repo_root(lone.path()), lone.path());
    }
}
