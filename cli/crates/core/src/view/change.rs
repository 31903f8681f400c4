//! What a file tool call changed (`TranscriptEntry.file_changes`), as the
//! terminal shows it under the call's line and as `log --json` prints it.
//! The daemon recorded both sides when the call ran; nothing here reads
//! the file.

use agentd_shared::proto as pb;
use agentd_shared::visible;
use serde::Serialize;

/// Lines of each side shown under a call; the rest is counted.
const SHOWN_LINES: usize = 12;

/// The changed lines of a change: the lines between the texts' common
/// start and common end, numbered from the file's line 1. One hunk: what
/// differs is all in it, though not always as the shortest diff.
pub struct Hunk<'a> {
    /// The first changed line (from 1).
    pub line: u64,
    pub removed: Vec<&'a str>,
    pub added: Vec<&'a str>,
}

pub fn hunk(c: &pb::FileChange) -> Hunk<'_> {
    let old: Vec<&str> = c.before.lines().collect();
    let new: Vec<&str> = c.after.lines().collect();
    let same_start = old.iter().zip(&new).take_while(|(a, b)| a == b).count();
    let same_end = old[same_start..]
        .iter()
        .rev()
        .zip(new[same_start..].iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    Hunk {
        line: c.first_line + same_start as u64 + 1,
        removed: old[same_start..old.len() - same_end].to_vec(),
        added: new[same_start..new.len() - same_end].to_vec(),
    }
}

/// The lines printed under a call's line.
pub fn terminal_lines(c: &pb::FileChange) -> Vec<String> {
    let h = hunk(c);
    let what = if c.created {
        format!("created ({} bytes)", c.after_size)
    } else if c.before_binary {
        format!("replaced binary content ({} bytes)", c.before_size)
    } else {
        format!("changed at line {}", h.line)
    };
    let partly = if c.before_cut || c.after_cut {
        "; only the first 64 KiB from the change are recorded"
    } else {
        ""
    };
    // An external agent's word, not a change agentd saw made.
    let what = if c.reported {
        format!("{what}, as the agent reported it (not verified)")
    } else {
        what
    };
    // Paths and lines are the repository's and the model's: made visible.
    let mut out = vec![format!("  {} {what}{partly}", visible::line(&c.path))];
    for (mark, lines) in [('-', &h.removed), ('+', &h.added)] {
        for line in lines.iter().take(SHOWN_LINES) {
            let line = visible::line(line);
            out.push(format!("  {mark} {}", super::render::clip(&line, 200)));
        }
        if lines.len() > SHOWN_LINES {
            out.push(format!(
                "  {mark} … {} more lines",
                lines.len() - SHOWN_LINES
            ));
        }
    }
    out
}

/// A change as `log --json` prints it.
#[derive(Debug, Serialize)]
pub struct FileChangeJson<'a> {
    pub tool_use_id: &'a str,
    pub path: &'a str,
    pub created: bool,
    pub before: &'a str,
    pub after: &'a str,
    pub before_size: u64,
    pub after_size: u64,
    pub first_line: u64,
    pub before_cut: bool,
    pub after_cut: bool,
    pub before_binary: bool,
    /// An external agent's claim, not a change agentd recorded.
    pub reported: bool,
}

impl<'a> FileChangeJson<'a> {
    pub fn of(c: &'a pb::FileChange) -> Self {
        FileChangeJson {
            tool_use_id: &c.tool_use_id,
            path: &c.path,
            created: c.created,
            before: &c.before,
            after: &c.after,
            before_size: c.before_size,
            after_size: c.after_size,
            first_line: c.first_line,
            before_cut: c.before_cut,
            after_cut: c.after_cut,
            before_binary: c.before_binary,
            reported: c.reported,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(before: &str, after: &str, first_line: u64) -> pb::FileChange {
        pb::FileChange {
            path: "/w/a.txt".into(),
            before: before.into(),
            after: after.into(),
            first_line,
            ..Default::default()
        }
    }

    #[test]
    fn the_hunk_is_the_lines_between_the_common_start_and_end() {
        let c = change("a\nb\nc\nd\n", "a\nB\nB2\nc\nd\n", 10);
        let h = hunk(&c);
        assert_eq!(h.line, 12);
        assert_eq!(h.removed, vec!["b"]);
        assert_eq!(h.added, vec!["B", "B2"]);
        assert_eq!(
            terminal_lines(&c),
            vec!["  /w/a.txt changed at line 12", "  - b", "  + B", "  + B2"]
        );
        // Lines only added at the end: nothing removed.
        let appended = change("a\n", "a\nb\n", 0);
        let h = hunk(&appended);
        assert!(h.removed.is_empty());
        assert_eq!((h.line, h.added), (2, vec!["b"]));
        let created = pb::FileChange {
            created: true,
            after_size: 2,
            ..change("", "x\n", 0)
        };
        assert_eq!(terminal_lines(&created)[0], "  /w/a.txt created (2 bytes)");
    }

    #[test]
    fn long_hunks_are_counted_not_printed() {
        let after: String = (0..30).map(|i| format!("{i}\n")).collect();
        let lines = terminal_lines(&change("", &after, 0));
        assert_eq!(lines.len(), 1 + SHOWN_LINES + 1);
        assert_eq!(lines.last().unwrap(), "  + … 18 more lines");
    }
}
