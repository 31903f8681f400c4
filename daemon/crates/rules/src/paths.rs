//! A `Read(…)`/`Edit(…)` rule's path, gitignore-style as Claude Code's
//! settings write it: `//path` from the root of the file system, `~/path`
//! from the home directory, `/path` from the directory the settings file
//! belongs to (a project's root, for its `.claude/settings.json`), and
//! `path` or `./path` from the agent's working directory; a pattern with no
//! `/` in it (`*.env`) matches a file of that name at any depth beneath the
//! working directory. `**` is any number of directories, `*` any text
//! within one name, `?` one character; a trailing `/` is everything
//! beneath.

use std::path::{Component, Path, PathBuf};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Anchor {
    Root,
    Home,
    Settings,
    Cwd,
    /// No `/`: a name at any depth beneath the working directory.
    AnyDepth,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathPattern {
    pub anchor: Anchor,
    /// The glob's names, from the anchor.
    pub parts: Vec<String>,
}

/// Where a rule's relative paths are resolved.
#[derive(Debug, Clone)]
pub struct Places {
    pub cwd: PathBuf,
    pub home: PathBuf,
    /// The directory the rule's settings file speaks for.
    pub settings: PathBuf,
}

impl PathPattern {
    pub fn parse(spec: &str) -> Result<PathPattern, &'static str> {
        let (anchor, rest) = if let Some(r) = spec.strip_prefix("//") {
            (Anchor::Root, r)
        } else if let Some(r) = spec.strip_prefix("~/") {
            (Anchor::Home, r)
        } else if let Some(r) = spec.strip_prefix('/') {
            (Anchor::Settings, r)
        } else if let Some(r) = spec.strip_prefix("./") {
            (Anchor::Cwd, r)
        } else if spec.trim_end_matches('/').contains('/') {
            (Anchor::Cwd, spec)
        } else {
            (Anchor::AnyDepth, spec)
        };
        let dir = rest.ends_with('/');
        let mut parts: Vec<String> = rest
            .split('/')
            .filter(|p| !p.is_empty() && *p != ".")
            .map(str::to_string)
            .collect();
        if parts.iter().any(|p| p == "..") {
            return Err("has a .. in its path");
        }
        if dir || parts.is_empty() {
            parts.push("**".to_string());
        }
        Ok(PathPattern { anchor, parts })
    }

    /// Whether the absolute, normalised `path` matches.
    pub fn matches(&self, path: &Path, places: &Places) -> bool {
        let base = match self.anchor {
            Anchor::Root => PathBuf::from("/"),
            Anchor::Home => places.home.clone(),
            Anchor::Settings => places.settings.clone(),
            Anchor::Cwd | Anchor::AnyDepth => places.cwd.clone(),
        };
        let Ok(rel) = path.strip_prefix(&base) else {
            return false;
        };
        let names: Vec<String> = rel
            .components()
            .filter_map(|c| match c {
                Component::Normal(n) => Some(n.to_string_lossy().into_owned()),
                _ => None,
            })
            .collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let parts: Vec<&str> = self.parts.iter().map(String::as_str).collect();
        if self.anchor == Anchor::AnyDepth {
            // Its name, at any depth (and what lies beneath a matching dir).
            return (0..names.len())
                .any(|i| glob_parts(&parts, &names[i..]) || glob_parts(&parts, &names[i..i + 1]));
        }
        glob_parts(&parts, &names)
    }
}

/// Segment globbing with `**`.
fn glob_parts(parts: &[&str], names: &[&str]) -> bool {
    match parts.split_first() {
        None => names.is_empty(),
        Some((&"**", rest)) => (0..=names.len()).any(|i| glob_parts(rest, &names[i..])),
        Some((p, rest)) => names.split_first().is_some_and(|(n, more)| {
            glob_name(p.as_bytes(), n.as_bytes()) && glob_parts(rest, more)
        }),
    }
}

/// One name against `*` and `?`.
fn glob_name(p: &[u8], n: &[u8]) -> bool {
    match p.split_first() {
        None => n.is_empty(),
        Some((b'*', rest)) => (0..=n.len()).any(|i| glob_name(rest, &n[i..])),
        Some((b'?', rest)) => !n.is_empty() && glob_name(rest, &n[1..]),
        Some((c, rest)) => n.first() == Some(c) && glob_name(rest, &n[1..]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn places() -> Places {
        Places {
            cwd: "/work/proj/sub".into(),
            home: "/home/p".into(),
            settings: "/work/proj".into(),
        }
    }

    fn m(spec: &str, path: &str) -> bool {
        PathPattern::parse(spec)
            .unwrap()
            .matches(Path::new(path), &places())
    }

    #[test]
    fn anchors_as_claude_code_writes_them() {
        assert!(m("//etc/passwd", "/etc/passwd"));
        assert!(!m("//etc/passwd", "/work/proj/sub/etc/passwd"));
        assert!(m("~/.ssh/**", "/home/p/.ssh/id_ed25519"));
        assert!(m("/secrets/*", "/work/proj/secrets/key"));
        assert!(!m("/secrets/*", "/work/proj/sub/secrets/key"));
        assert!(m("./src/**", "/work/proj/sub/src/a/b.rs"));
        assert!(m("src/*.rs", "/work/proj/sub/src/lib.rs"));
        assert!(!m("src/*.rs", "/work/proj/sub/src/a/lib.rs"));
    }

    #[test]
    fn a_name_alone_matches_at_any_depth_and_a_trailing_slash_everything_beneath() {
        assert!(m("*.env", "/work/proj/sub/.env"));
        assert!(m(".env", "/work/proj/sub/deep/er/.env"));
        assert!(m("*.env", "/work/proj/sub/a/prod.env"));
        assert!(
            !m("*.env", "/work/proj/other/.env"),
            "beneath the working directory only"
        );
        assert!(m("build/", "/work/proj/sub/build/out/x.o"));
        assert!(m("node_modules", "/work/proj/sub/a/node_modules/p/i.js"));
        assert!(m("?.txt", "/work/proj/sub/a.txt"));
        assert!(!m("?.txt", "/work/proj/sub/ab.txt"));
    }

    #[test]
    fn dotdot_is_refused() {
        assert!(PathPattern::parse("../x").is_err());
        assert!(PathPattern::parse("~/a/../b").is_err());
    }
}
