//! What a file tool (Write, Edit) changed: the file's content before and
//! after, recorded beside the call's result in the transcript, so every
//! client (`log`, `attach`, an editor over ACP, any gRPC client) shows the
//! change as it happened — after a restart too — and none has to read the
//! file again (by then it may hold something else, or sit in a directory
//! the client cannot see).
//!
//! Each side is kept to `RECORDED_BYTES`. A file over that is recorded
//! from a few lines before its first changed line, so even a change deep in
//! a large file is in the record; what is left out is said (`first_line`,
//! `cut`, the whole sizes).

use std::path::PathBuf;

/// The most of each side's text a change records.
pub const RECORDED_BYTES: usize = 64 * 1024;

/// Unchanged lines kept before the first changed one when a file's head is
/// left out.
const CONTEXT_LINES: usize = 3;

/// One file's change by one tool call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileChange {
    /// Absolute, as the tool resolved it.
    pub path: PathBuf,
    pub before: Before,
    pub after: FileText,
    /// The line (from 0) of both files where the recorded texts start: the
    /// lines before it are the same in both and left out.
    pub first_line: u64,
}

/// What the file was before the call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Before {
    /// There was no file: the call created it.
    Absent,
    /// Not UTF-8 text (a Write over a binary file): not recorded.
    Binary {
        size: u64,
    },
    Text(FileText),
}

/// One side of a change as recorded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileText {
    /// The file from line `first_line`, at most `RECORDED_BYTES`.
    pub text: String,
    /// The whole file's size in bytes.
    pub size: u64,
    /// The file goes on after `text` (the cap): its end is not recorded.
    pub cut: bool,
}

/// A change as a transcript entry holds it: with the call that made it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolFileChange {
    /// The id of the tool_use block whose result is in the same entry.
    pub tool_use_id: String,
    pub change: FileChange,
    /// An external agent said it made this change (an ACP `diff`); agentd
    /// did not see it made, so it is shown as the agent's claim, never as a
    /// recorded change. Its path is inside the agent's workspace: a claim
    /// outside it is not kept at all.
    pub reported: bool,
}

impl FileChange {
    /// The change from `before` (the bytes read before the call, which may
    /// be only the start of a file of `size` bytes; None: there was no
    /// file) to `after` (the whole new content).
    pub fn between(path: PathBuf, before: Option<(&[u8], u64)>, after: &str) -> FileChange {
        let text_before = match before {
            None => {
                return FileChange {
                    path,
                    before: Before::Absent,
                    after: recorded(after, after.len() as u64, true),
                    first_line: 0,
                };
            }
            Some((bytes, size)) => match utf8_prefix(bytes, bytes.len() as u64 >= size) {
                Some(text) => (text, size),
                None => {
                    return FileChange {
                        path,
                        before: Before::Binary { size },
                        after: recorded(after, after.len() as u64, true),
                        first_line: 0,
                    };
                }
            },
        };
        let (old, old_size) = text_before;
        let old_whole = old.len() as u64 == old_size;
        let fits = old_whole && old.len() <= RECORDED_BYTES && after.len() <= RECORDED_BYTES;
        let start = if fits { 0 } else { window_start(old, after) };
        FileChange {
            path,
            before: Before::Text(recorded(&old[start..], old_size, old_whole)),
            after: recorded(&after[start..], after.len() as u64, true),
            first_line: old[..start].matches('\n').count() as u64,
        }
    }
}

/// `rest` (the file from the recorded line on) kept to the cap. `whole`:
/// `rest` runs to the file's end (else only a start of it was read).
fn recorded(rest: &str, size: u64, whole: bool) -> FileText {
    let text = cut_to(rest, RECORDED_BYTES);
    FileText {
        text: text.to_string(),
        size,
        cut: !whole || text.len() < rest.len(),
    }
}

/// At most `max` bytes of `text`: up to its last line end within them when
/// there is one, else up to a character boundary.
fn cut_to(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    match text[..end].rfind('\n') {
        Some(nl) => &text[..=nl],
        None => &text[..end],
    }
}

/// `bytes` as text; when they are only the start of the file (`whole`
/// false), a character the read split at the end is left out. None when
/// they are not UTF-8.
fn utf8_prefix(bytes: &[u8], whole: bool) -> Option<&str> {
    match std::str::from_utf8(bytes) {
        Ok(text) => Some(text),
        Err(e) if !whole && e.error_len().is_none() => {
            std::str::from_utf8(&bytes[..e.valid_up_to()]).ok()
        }
        Err(_) => None,
    }
}

/// Where the recorded texts start: the start of the line `CONTEXT_LINES`
/// lines before the first line in which `old` and `new` differ. The two
/// are the same up to there, so it is one offset for both.
fn window_start(old: &str, new: &str) -> usize {
    let same = old
        .bytes()
        .zip(new.bytes())
        .take_while(|(a, b)| a == b)
        .count();
    // Bytes: the first difference may fall inside a character.
    let line_start = |end: usize| {
        old.as_bytes()[..end]
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |nl| nl + 1)
    };
    let mut start = line_start(same);
    for _ in 0..CONTEXT_LINES {
        if start == 0 {
            break;
        }
        start = line_start(start - 1);
    }
    start
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn change(before: Option<&str>, after: &str) -> FileChange {
        FileChange::between(
            PathBuf::from("/w/f.txt"),
            before.map(|b| (b.as_bytes(), b.len() as u64)),
            after,
        )
    }

    fn text(before: &Before) -> &FileText {
        match before {
            Before::Text(t) => t,
            other => panic!("not text: {other:?}"),
        }
    }

    #[test]
    fn small_files_are_recorded_whole() {
        let c = change(Some("one\ntwo\n"), "one\nTWO\n");
        assert_eq!(
            c.before,
            Before::Text(FileText {
                text: "one\ntwo\n".into(),
                size: 8,
                cut: false
            })
        );
        assert_eq!(c.after.text, "one\nTWO\n");
        assert!(!c.after.cut);
        assert_eq!(c.first_line, 0);
        let created = change(None, "new\n");
        assert_eq!(created.before, Before::Absent);
        assert_eq!(created.after.text, "new\n");
        let emptied = change(Some("gone\n"), "");
        assert_eq!(text(&emptied.before).text, "gone\n");
        assert_eq!(emptied.after.text, "");
    }

    #[test]
    fn a_change_deep_in_a_large_file_is_recorded_from_just_before_it() {
        let line = |i: usize| format!("line {i:06} of a long file, padded to some length\n");
        let old: String = (0..5000).map(line).collect();
        assert!(old.len() > 3 * RECORDED_BYTES);
        let new = old.replace("line 004000 of", "LINE 004000 OF");
        let c = change(Some(&old), &new);
        // Three lines of context before the changed line 4000.
        assert_eq!(c.first_line, 3997);
        let before = text(&c.before);
        assert!(
            before.text.starts_with(&line(3997)),
            "{}",
            &before.text[..80]
        );
        assert!(c.after.text.contains("LINE 004000 OF"));
        assert!(before.text.contains("line 004000 of"));
        // The rest (1000 lines, under the cap) runs to the end.
        assert!(!before.cut && !c.after.cut);
        assert_eq!(before.size, old.len() as u64);
        assert_eq!(c.after.size, new.len() as u64);
        // A change at the top of it: from line 0, cut at the cap, at a line end.
        let c = change(Some(&old), &format!("top\n{old}"));
        assert_eq!(c.first_line, 0);
        let before = text(&c.before);
        assert!(before.cut && c.after.cut);
        assert!(before.text.len() <= RECORDED_BYTES && before.text.ends_with('\n'));
        assert!(c.after.text.len() <= RECORDED_BYTES && c.after.text.starts_with("top\n"));
    }

    #[test]
    fn the_cap_never_splits_a_character() {
        let old = "é".repeat(RECORDED_BYTES); // two bytes each, no line ends
        let c = change(Some(&old), &format!("x{old}"));
        let before = text(&c.before);
        assert!(before.cut && before.text.len() <= RECORDED_BYTES);
        assert!(before.text.chars().all(|ch| ch == 'é'));
        assert!(c.after.text.len() <= RECORDED_BYTES && c.after.text.starts_with('x'));
        // The first difference inside a character (é and è share a byte).
        let old = format!("{}é\n", "a\n".repeat(RECORDED_BYTES));
        let c = change(Some(&old), &old.replace('é', "è"));
        assert_eq!(c.first_line, RECORDED_BYTES as u64 - 3);
        assert_eq!(text(&c.before).text, "a\na\na\né\n");
        assert_eq!(c.after.text, "a\na\na\nè\n");
    }

    #[test]
    fn a_partly_read_file_is_cut_and_a_binary_one_is_not_recorded() {
        // Only the first bytes were read, ending inside a character.
        let whole = "ab\né\nrest";
        let read = &whole.as_bytes()[..4];
        let c = FileChange::between(PathBuf::from("/w/f"), Some((read, whole.len() as u64)), "x");
        let before = text(&c.before);
        assert_eq!(before.text, "ab\n");
        assert!(before.cut);
        assert_eq!(before.size, whole.len() as u64);
        let c = FileChange::between(PathBuf::from("/w/f"), Some((&[0xff, 0xfe, 0], 3)), "x");
        assert_eq!(c.before, Before::Binary { size: 3 });
        assert_eq!(c.after.text, "x");
    }
}
