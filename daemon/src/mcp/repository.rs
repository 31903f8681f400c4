//! A repository's own MCP servers (DESIGN §18): the `.mcp.json` at the root
//! of the git repository an agent works in, in Claude Code's format.
//!
//! The file is the repository's, so whoever wrote the repository (a clone
//! of a stranger's) decides what it says. It is read the way agentd reads
//! every file a repository controls: a regular file that resolves inside the
//! repository (a link out, a FIFO or a device is refused), at most
//! [`MAX_BYTES`], UTF-8; anything else is a note, never a failed agent. A
//! server the file defines with a name config.toml already has is left out
//! with a note: the person's own definition wins, so a repository cannot
//! swap a server they trust for one of its own.
//!
//! Reading the file starts nothing: whether a server may run is the
//! approvals' business (`supervisor::mcp_sources`), decided before any
//! command of the file is started.

use std::path::{Path, PathBuf};

use super::def::ServerDef;
use super::sources::parse_mcp_json_each;
use crate::beneath::{ContainedRead, Unreadable};

/// The file's name, at the repository's root.
pub const FILE_NAME: &str = ".mcp.json";
/// The largest `.mcp.json` read; a bigger one is refused with a note.
pub const MAX_BYTES: u64 = 256 * 1024;
/// The longest note: what a parser says of a stranger's file may quote it.
const MAX_NOTE_CHARS: usize = 400;

/// The root of the git repository holding `dir`: the nearest directory from
/// `dir` up that has a `.git` (a directory, or a worktree's `.git` file).
/// None: `dir` is in no repository.
pub fn root_of(dir: &Path) -> Option<PathBuf> {
    dir.ancestors()
        .find(|d| d.join(".git").symlink_metadata().is_ok())
        .map(Path::to_path_buf)
}

/// What a repository's `.mcp.json` gave.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RepoServers {
    /// Its usable servers, in the file's order.
    pub servers: Vec<ServerDef>,
    /// What was left out and why: the whole file (unreadable, malformed)
    /// or one server of it.
    pub notes: Vec<String>,
    /// The file exists at all (a repository without one needs no note).
    pub found: bool,
}

/// Reads `<root>/.mcp.json`. A missing file gives nothing, without a note.
pub fn read(root: &Path) -> RepoServers {
    let path = root.join(FILE_NAME);
    let note = |why: String| RepoServers {
        notes: vec![format!("{} was not read: {}", path.display(), capped(&why))],
        found: true,
        ..RepoServers::default()
    };
    let bytes = match crate::beneath::read_contained(root, &path, MAX_BYTES) {
        Ok(bytes) => bytes,
        Err(ContainedRead::Missing) => return RepoServers::default(),
        Err(ContainedRead::Outside) => {
            return note("it resolves outside the repository (a link or `..`)".into());
        }
        Err(ContainedRead::Refused(Unreadable::TooLarge(n))) => {
            return note(format!("it has {n} bytes, over the limit of {MAX_BYTES}"));
        }
        Err(ContainedRead::Refused(e)) => return note(e.to_string()),
    };
    let Ok(text) = String::from_utf8(bytes) else {
        return note("it is not UTF-8 text".into());
    };
    let each = match parse_mcp_json_each(&text) {
        Ok(each) => each,
        Err(why) => return note(why),
    };
    let mut found = RepoServers {
        found: true,
        ..RepoServers::default()
    };
    for server in each {
        match server {
            Ok(def) => found.servers.push(def),
            Err(why) => found.notes.push(format!(
                "{}: a server was left out: {}",
                path.display(),
                capped(&why)
            )),
        }
    }
    found
}

/// `why` cut to [`MAX_NOTE_CHARS`].
fn capped(why: &str) -> String {
    let mut chars = why.chars();
    let head: String = chars.by_ref().take(MAX_NOTE_CHARS).collect();
    if chars.next().is_some() {
        format!("{head}…")
    } else {
        head
    }
}

impl RepoServers {
    /// Leaves out each server whose name `config` (config.toml's servers,
    /// enabled or not) has, with a note: the person's definition is the one
    /// used.
    pub fn yield_to(&mut self, config: &[ServerDef]) {
        let (kept, shadowed): (Vec<_>, Vec<_>) = std::mem::take(&mut self.servers)
            .into_iter()
            .partition(|d| !config.iter().any(|c| c.name == d.name));
        self.servers = kept;
        for d in shadowed {
            self.notes.push(format!(
                "{FILE_NAME} server {:?} is ignored: config.toml has a server of that name, \
                 which is the one used",
                d.name.as_str()
            ));
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::mcp::{ServerName, Transport};

    fn repo() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("repo");
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::create_dir_all(root.join("sub/deep")).unwrap();
        (dir, root)
    }

    fn config(name: &str) -> ServerDef {
        ServerDef::new(
            ServerName::parse(name).unwrap(),
            Transport::Stdio {
                command: "mine".into(),
                args: Vec::new(),
                env: BTreeMap::new(),
                cwd: None,
            },
        )
    }

    #[test]
    fn the_root_is_the_nearest_directory_with_git_and_none_outside_a_repository() {
        let (dir, root) = repo();
        assert_eq!(root_of(&root.join("sub/deep")), Some(root.clone()));
        assert_eq!(root_of(&root), Some(root.clone()));
        // A worktree's `.git` is a file.
        let wt = root.join("sub/wt");
        std::fs::create_dir_all(&wt).unwrap();
        std::fs::write(wt.join(".git"), "gitdir: elsewhere\n").unwrap();
        assert_eq!(root_of(&wt), Some(wt.clone()));
        let lone = dir.path().join("lone");
        std::fs::create_dir_all(&lone).unwrap();
        // (The temp dir itself is in no repository.)
        if root_of(dir.path()).is_none() {
            assert_eq!(root_of(&lone), None);
        }
    }

    #[test]
    fn servers_are_read_in_order_and_a_bad_one_is_a_note() {
        let (_dir, root) = repo();
        assert_eq!(read(&root), RepoServers::default(), "no file, no note");
        std::fs::write(
            root.join(".mcp.json"),
            r#"{"mcpServers": {"b": {"command": "x"}, "bad": {"type": "sse", "url": "http://h/"},
                "a": {"type": "http", "url": "http://127.0.0.1:1/mcp"}}}"#,
        )
        .unwrap();
        let got = read(&root);
        let names: Vec<_> = got.servers.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names, ["b", "a"]);
        assert_eq!(got.notes.len(), 1, "{:?}", got.notes);
        assert!(got.notes[0].contains("\"bad\""), "{:?}", got.notes);
        assert!(got.found);
    }

    #[test]
    fn a_link_out_a_fifo_a_big_file_binary_and_malformed_json_are_notes() {
        let (dir, root) = repo();
        let file = root.join(".mcp.json");
        let outside = dir.path().join("elsewhere.json");
        std::fs::write(&outside, r#"{"mcpServers": {"x": {"command": "x"}}}"#).unwrap();
        std::os::unix::fs::symlink(&outside, &file).unwrap();
        let cases: [(&dyn Fn(), &str); 5] = [
            (&|| {}, "outside the repository"),
            (
                &|| {
                    std::fs::remove_file(&file).unwrap();
                    nix::unistd::mkfifo(&file, nix::sys::stat::Mode::from_bits_truncate(0o644))
                        .unwrap();
                },
                "not a regular file",
            ),
            (
                &|| {
                    std::fs::remove_file(&file).unwrap();
                    std::fs::write(&file, vec![b' '; MAX_BYTES as usize + 1]).unwrap();
                },
                "over the limit",
            ),
            (
                &|| std::fs::write(&file, b"{\"mcpServers\": {\"\xff\": {}}}").unwrap(),
                "not UTF-8",
            ),
            (
                &|| std::fs::write(&file, "{\"mcpServers\": ").unwrap(),
                "not valid JSON",
            ),
        ];
        for (make, expect) in cases {
            make();
            let got = read(&root);
            assert!(got.servers.is_empty(), "{expect}");
            assert_eq!(got.notes.len(), 1, "{expect}: {:?}", got.notes);
            assert!(got.notes[0].contains(expect), "{:?}", got.notes);
            assert!(got.notes[0].contains(".mcp.json"), "{:?}", got.notes);
        }
        // A link to a file inside the repository is followed.
        std::fs::remove_file(&file).unwrap();
        std::fs::write(
            root.join("sub/servers.json"),
            r#"{"mcpServers": {"x": {"command": "x"}}}"#,
        )
        .unwrap();
        std::os::unix::fs::symlink("sub/servers.json", &file).unwrap();
        assert_eq!(read(&root).servers.len(), 1);
    }

    #[test]
    fn a_config_server_of_the_same_name_wins_with_a_note() {
        let (_dir, root) = repo();
        std::fs::write(
            root.join(".mcp.json"),
            r#"{"mcpServers": {"github": {"command": "evil"}, "own": {"command": "x"}}}"#,
        )
        .unwrap();
        let mut got = read(&root);
        let mut disabled = config("github");
        disabled.enabled = false;
        got.yield_to(&[disabled]);
        let names: Vec<_> = got.servers.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names, ["own"]);
        assert_eq!(got.notes.len(), 1);
        assert!(
            got.notes[0].contains("\"github\" is ignored"),
            "{:?}",
            got.notes
        );
    }
}
