//! The instruction files people keep for agents (DESIGN §17): `AGENTS.md`,
//! `CLAUDE.md` and `.claude/CLAUDE.md` in each directory from the
//! repository root down to the agent's working directory, then the
//! person's own `AGENTS.md` in agentd's config directory. Read once, when
//! an agent is created, into its frozen system prompt (so the prompt cache
//! keeps matching and forks inherit them byte for byte).
//!
//! A repository decides what these files are. Each is read only if it is
//! a regular file that resolves inside the repository (the person's own,
//! inside the config directory): a link out, a FIFO or a device is left
//! out with a note. Each file is cut at [`MAX_FILE_BYTES`] and all of them
//! at [`MAX_TOTAL_BYTES`], with a note where text was cut; text that is not
//! UTF-8 is left out with a note. Claude Code's `@path` imports in a
//! `CLAUDE.md` are followed one level, inside the repository only.

use std::path::{Path, PathBuf};

use crate::beneath::{ContainedRead, Unreadable};
use crate::domain::{InstructionFile, InstructionsLoaded};

/// The most bytes read of one instruction file.
pub const MAX_FILE_BYTES: usize = 40 * 1024;
/// The most bytes of instructions an agent gets in all.
pub const MAX_TOTAL_BYTES: usize = 100 * 1024;
/// The file names looked for in each directory, in this order.
const NAMES: [&str; 3] = ["AGENTS.md", "CLAUDE.md", ".claude/CLAUDE.md"];

/// One instruction file, as the agent gets it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Loaded {
    pub path: PathBuf,
    pub text: String,
    /// Its end was left out (a limit was reached).
    pub cut: bool,
}

/// What was found for an agent: the files read, in order, and notes on
/// what was left out and why.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Instructions {
    pub files: Vec<Loaded>,
    pub notes: Vec<String>,
    /// The repository root the files were looked for from: the prompt
    /// names a file in it by its path from there.
    pub root: PathBuf,
}

/// Finds and reads the instructions for an agent working in `cwd` (an
/// absolute, resolved directory); `config_dir` is agentd's config
/// directory, for the person's own file.
pub fn load(cwd: &Path, config_dir: &Path) -> Instructions {
    let root = crate::config::definitions::repo_root(cwd);
    let mut found = Instructions {
        root: root.clone(),
        ..Instructions::default()
    };
    let mut budget = MAX_TOTAL_BYTES;
    for dir in dirs_down(&root, cwd) {
        for name in NAMES {
            found.read(&root, &dir.join(name), &mut budget, true);
        }
    }
    found.read(
        config_dir,
        &config_dir.join("AGENTS.md"),
        &mut budget,
        false,
    );
    found
}

impl Instructions {
    /// The system prompt's block of instructions (None when there are
    /// none): each file quoted with its path (from the repository root for
    /// a repository's file), in the order read.
    pub fn prompt_text(&self) -> Option<String> {
        if self.files.is_empty() {
            return None;
        }
        let mut out = String::from(INTRO);
        for f in &self.files {
            let shown = f.path.strip_prefix(&self.root).unwrap_or(&f.path);
            out.push_str(&format!(
                "\n\nContents of {}:\n\n{}",
                shown.display(),
                f.text
            ));
            if f.cut {
                out.push_str(&format!(
                    "\n\n[agentd: the rest of {} was left out; the instructions are limited to {MAX_FILE_BYTES} bytes a file and {MAX_TOTAL_BYTES} in all]",
                    shown.display()
                ));
            }
        }
        Some(out)
    }

    /// What the agent's record says was loaded.
    pub fn loaded(&self) -> InstructionsLoaded {
        InstructionsLoaded {
            files: self
                .files
                .iter()
                .map(|f| InstructionFile {
                    path: f.path.clone(),
                    bytes: f.text.len() as u64,
                    cut: f.cut,
                })
                .collect(),
            notes: self.notes.clone(),
            skipped: false,
        }
    }
}

/// How the instructions are introduced to the model.
const INTRO: &str = "Instructions the user keeps for agents working here follow, \
each file quoted with its path (a repository's files from its root down to the working \
directory, then the user's own). Follow them: they take precedence over the general \
guidelines above, and a file further down applies more specifically than one above it.";

/// `root`, then each directory below it on the way to `cwd`, ending with
/// `cwd` (only `cwd` when it is not below `root`).
fn dirs_down(root: &Path, cwd: &Path) -> Vec<PathBuf> {
    let Ok(rest) = cwd.strip_prefix(root) else {
        return vec![cwd.to_path_buf()];
    };
    let mut dirs = vec![root.to_path_buf()];
    let mut at = root.to_path_buf();
    for part in rest.components() {
        at.push(part);
        dirs.push(at.clone());
    }
    dirs
}

impl Instructions {
    /// Reads `path` if it exists, contained in `within`; `imports`: follow
    /// a `CLAUDE.md`'s `@path` lines (one level, inside `within`).
    fn read(&mut self, within: &Path, path: &Path, budget: &mut usize, imports: bool) {
        let Some(loaded) = self.read_one(within, path, budget) else {
            return;
        };
        let follow = imports && path.file_name().is_some_and(|n| n == "CLAUDE.md");
        let imported: Vec<PathBuf> = if follow {
            import_paths(&loaded.text, path.parent().unwrap_or(within))
        } else {
            Vec::new()
        };
        self.files.push(loaded);
        for import in imported {
            if self.files.iter().any(|f| f.path == import) {
                continue;
            }
            if let Some(loaded) = self.read_one(within, &import, budget) {
                self.files.push(loaded);
            }
        }
    }

    fn read_one(&mut self, within: &Path, path: &Path, budget: &mut usize) -> Option<Loaded> {
        if std::fs::symlink_metadata(path).is_err() {
            return None;
        }
        let shown = path.display();
        if *budget == 0 {
            self.notes.push(format!(
                "{shown} left out: the instructions reached {MAX_TOTAL_BYTES} bytes"
            ));
            return None;
        }
        let cap = MAX_FILE_BYTES.min(*budget);
        let (bytes, cut) = match read_prefix(within, path, cap) {
            Ok(read) => read,
            Err(why) => {
                self.notes.push(format!("{shown} left out: {why}"));
                return None;
            }
        };
        let text = match String::from_utf8(bytes) {
            Ok(text) => text,
            // A cut may split a character: keep what precedes it.
            Err(e) if cut && e.utf8_error().error_len().is_none() => {
                let valid = e.utf8_error().valid_up_to();
                let mut bytes = e.into_bytes();
                bytes.truncate(valid);
                String::from_utf8(bytes).unwrap_or_default()
            }
            Err(_) => {
                self.notes
                    .push(format!("{shown} left out: it is not UTF-8 text"));
                return None;
            }
        };
        *budget -= text.len();
        if cut {
            self.notes
                .push(format!("{shown} was cut at {} bytes", text.len()));
        }
        Some(Loaded {
            path: path.to_path_buf(),
            text,
            cut,
        })
    }
}

/// Claude Code's imports: a line of the form `@path` (relative to the
/// file's directory, or absolute), outside code fences.
fn import_paths(text: &str, dir: &Path) -> Vec<PathBuf> {
    let mut fenced = false;
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        if let Some(rest) = line.strip_prefix('@')
            && !rest.is_empty()
            && !rest.contains(char::is_whitespace)
        {
            out.push(dir.join(rest));
        }
    }
    out
}

/// Why a file was left out, in words for the note.
fn why(e: ContainedRead) -> String {
    match e {
        ContainedRead::Missing => "it cannot be resolved".into(),
        ContainedRead::Outside => "it resolves outside the repository (a link or `..`)".into(),
        ContainedRead::Refused(Unreadable::NotRegular) => {
            "not a regular file (a FIFO, socket, device or directory)".into()
        }
        ContainedRead::Refused(e) => e.to_string(),
    }
}

/// At most `cap` bytes of `path` (contained in `within`, a regular file),
/// and whether there was more.
fn read_prefix(within: &Path, path: &Path, cap: usize) -> Result<(Vec<u8>, bool), String> {
    match crate::beneath::read_contained(within, path, cap as u64) {
        Ok(bytes) => Ok((bytes, false)),
        Err(ContainedRead::Refused(Unreadable::TooLarge(_))) => {
            // Larger than the cap: read the cap's worth, as contained as
            // the whole read would have been.
            let bytes =
                crate::beneath::read_contained_prefix(within, path, cap as u64).map_err(why)?;
            Ok((bytes, true))
        }
        Err(e) => Err(why(e)),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn repo() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap().join("repo");
        std::fs::create_dir_all(root.join(".git")).unwrap();
        (dir, root)
    }

    fn names(found: &Instructions, root: &Path) -> Vec<String> {
        found
            .files
            .iter()
            .map(|f| {
                f.path
                    .strip_prefix(root)
                    .unwrap_or(&f.path)
                    .display()
                    .to_string()
            })
            .collect()
    }

    #[test]
    fn files_are_read_from_the_root_down_then_the_persons_own() {
        let (tmp, root) = repo();
        let sub = root.join("a/b");
        std::fs::create_dir_all(sub.join(".claude")).unwrap();
        std::fs::write(root.join("AGENTS.md"), "root agents").unwrap();
        std::fs::write(root.join("CLAUDE.md"), "root claude").unwrap();
        std::fs::write(root.join("a/AGENTS.md"), "a agents").unwrap();
        std::fs::write(sub.join(".claude/CLAUDE.md"), "b claude").unwrap();
        let config = tmp.path().canonicalize().unwrap().join("config");
        std::fs::create_dir_all(&config).unwrap();
        std::fs::write(config.join("AGENTS.md"), "mine").unwrap();
        let found = load(&sub, &config);
        assert_eq!(
            names(&found, &root),
            [
                "AGENTS.md",
                "CLAUDE.md",
                "a/AGENTS.md",
                "a/b/.claude/CLAUDE.md",
                config.join("AGENTS.md").display().to_string().as_str()
            ]
        );
        assert_eq!(found.files[4].text, "mine");
        assert!(found.notes.is_empty(), "{:?}", found.notes);
    }

    #[test]
    fn links_out_fifos_and_binary_files_are_left_out_with_a_note() {
        let (tmp, root) = repo();
        let outside = tmp.path().join("secret.md");
        std::fs::write(&outside, "do not read").unwrap();
        std::os::unix::fs::symlink(&outside, root.join("AGENTS.md")).unwrap();
        nix::unistd::mkfifo(&root.join("CLAUDE.md"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        std::fs::create_dir_all(root.join(".claude")).unwrap();
        std::fs::write(root.join(".claude/CLAUDE.md"), [0xff, 0xfe, 0x00]).unwrap();
        let found = load(&root, &tmp.path().join("no-config"));
        assert!(found.files.is_empty(), "{:?}", found.files);
        let notes = found.notes.join("\n");
        assert!(notes.contains("resolves outside the repository"), "{notes}");
        assert!(notes.contains("not a regular file"), "{notes}");
        assert!(notes.contains("not UTF-8"), "{notes}");
        assert!(!notes.contains("do not read"));
    }

    #[test]
    fn big_files_are_cut_and_the_total_is_bounded() {
        let (_tmp, root) = repo();
        let sub = root.join("a/b/c");
        std::fs::create_dir_all(&sub).unwrap();
        // 'é' is two bytes: a cut inside one keeps the text before it.
        let big = "é".repeat(MAX_FILE_BYTES);
        for dir in [&root, &root.join("a"), &root.join("a/b"), &sub] {
            std::fs::write(dir.join("AGENTS.md"), &big).unwrap();
        }
        let found = load(&sub, Path::new("/nonexistent"));
        assert!(found.files.iter().all(|f| f.cut));
        assert_eq!(found.files[0].text.len(), MAX_FILE_BYTES);
        let total: usize = found.files.iter().map(|f| f.text.len()).sum();
        assert!(total <= MAX_TOTAL_BYTES, "{total}");
        assert_eq!(found.files.len(), 3, "the fourth is over the total");
        assert!(
            found.notes.iter().any(|n| n.contains("reached")),
            "{:?}",
            found.notes
        );
    }

    #[test]
    fn claude_md_imports_are_followed_once_inside_the_repository() {
        let (tmp, root) = repo();
        std::fs::create_dir_all(root.join("docs")).unwrap();
        std::fs::write(root.join("docs/style.md"), "style @docs/deeper.md").unwrap();
        std::fs::write(root.join("docs/deeper.md"), "deeper").unwrap();
        std::fs::write(tmp.path().join("outside.md"), "outside").unwrap();
        std::fs::write(
            root.join("CLAUDE.md"),
            "See\n@docs/style.md\n```\n@docs/deeper.md\n```\n@../outside.md\n",
        )
        .unwrap();
        let found = load(&root, Path::new("/nonexistent"));
        assert_eq!(names(&found, &root), ["CLAUDE.md", "docs/style.md"]);
        assert!(
            found
                .notes
                .iter()
                .any(|n| n.contains("outside the repository")),
            "{:?}",
            found.notes
        );
    }
}
