//! Untrusted text made safe to print on a terminal: the one sanitiser every
//! human-facing view uses (docs/security.md).
//!
//! Model output, tool output, file names and contents, agent-chosen names
//! and descriptions and external agents' titles are written by whoever
//! controls the model, the repository or the agent. Printed raw, a control
//! character is an instruction to the terminal: `ESC[27D ESC[K` moves the
//! cursor back and erases what a permission ask said would run, `\r`
//! rewrites a line already shown, OSC 52 writes the clipboard, OSC 8 makes
//! links, and a bidi override (U+202E) reorders what is read. So every such
//! character is shown as a visible stand-in instead, never interpreted and
//! never dropped (dropping would hide that something was there):
//!
//! - C0 controls but `\n` and `\t`, and DEL: their Unicode control picture
//!   (`␛` for ESC, `␍` for a lone CR, `␇` for BEL, `␡` for DEL), one
//!   column wide, so tables keep their shape. A CR that ends a line
//!   (`\r\n`) is a line end, not an attack, and reads as one.
//! - C1 controls (U+0080–U+009F, among them CSI U+009B, which terminals
//!   read as `ESC[`), bidi embeddings, overrides, isolates and marks,
//!   zero-width and other invisible format characters, the line and
//!   paragraph separators and the tag characters (used to smuggle text
//!   past a reader): `<U+202E>`.
//!
//! [`line`] is for one-line places (a table cell, a tool call's line, an
//! ask's first line): it shows `\n` as `␊` and `\t` as `␉` too, so one
//! value can never print as two lines. `--json` output does not come here:
//! JSON escapes control characters itself and must stay exact.

use std::borrow::Cow;
use std::fmt::Write;

/// Whether `c` is kept as it is in multi-line text.
fn plain_in_text(c: char) -> bool {
    matches!(c, '\n' | '\t') || !needs_stand_in(c)
}

/// Whether `c` is kept as it is in a one-line place.
fn plain_in_line(c: char) -> bool {
    !needs_stand_in(c) && c != '\n' && c != '\t'
}

/// Characters a terminal would act on, or that a reader cannot see.
pub fn needs_stand_in(c: char) -> bool {
    let u = c as u32;
    match u {
        0x00..=0x1F | 0x7F => true,
        0x20..=0x7E => false,
        // C1, and the soft hyphen (invisible but where a line breaks).
        0x80..=0x9F | 0xAD => true,
        // Arabic letter mark, Mongolian vowel separator.
        0x061C | 0x180E => true,
        // Zero-width space/joiners, LRM, RLM; line and paragraph
        // separators; embeddings and overrides (LRE, RLE, PDF, LRO, RLO).
        0x200B..=0x200F | 0x2028..=0x202E => true,
        // Word joiner, invisible operators, isolates (LRI, RLI, FSI, PDI)
        // and the deprecated format characters after them.
        0x2060..=0x206F => true,
        // Byte order mark / zero-width no-break space; interlinear
        // annotation controls.
        0xFEFF | 0xFFF9..=0xFFFB => true,
        // Tag characters.
        0xE0000..=0xE007F => true,
        _ => false,
    }
}

/// The visible stand-in for a character [`needs_stand_in`] (or, in a
/// line, `\n` and `\t`).
fn push_stand_in(out: &mut String, c: char) {
    let u = c as u32;
    match u {
        // U+2400 CONTROL PICTURE block: ␀ … ␟.
        0x00..=0x1F => out.push(char::from_u32(0x2400 + u).unwrap_or('?')),
        0x7F => out.push('\u{2421}'),
        _ => {
            let _ = write!(out, "<U+{u:04X}>");
        }
    }
}

fn made_visible(s: &str, plain: fn(char) -> bool) -> Cow<'_, str> {
    if s.chars().all(plain) {
        Cow::Borrowed(s)
    } else {
        Cow::Owned(rewrite(s, plain))
    }
}

fn rewrite(s: &str, plain: fn(char) -> bool) -> String {
    let mut out = String::with_capacity(s.len() + 16);
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\r' && chars.peek() == Some(&'\n') && plain('\n') {
            // "\r\n" is a line end where line ends are kept.
            continue;
        }
        if plain(c) {
            out.push(c);
        } else {
            push_stand_in(&mut out, c);
        }
    }
    out
}

/// `s` for printing as text that may span lines: every character a
/// terminal would act on is shown as a visible stand-in; `\n` and `\t`
/// stay. Borrowed when nothing needed changing (the common case).
pub fn text(s: &str) -> Cow<'_, str> {
    made_visible(s, plain_in_text)
}

/// `s` for printing in one line: as [`text`], and `\n` and `\t` are shown
/// too (`␊`, `␉`), so the value cannot break the line it is printed in.
pub fn line(s: &str) -> Cow<'_, str> {
    made_visible(s, plain_in_line)
}

/// JSON text (`--json` output) with every character a terminal would act
/// on written as a `\uXXXX` escape: the same JSON value, byte for byte
/// once parsed, but safe to print. JSON escapes C0 itself; DEL, C1, the
/// bidi and invisible format characters it leaves raw, and a terminal may
/// act on C1 (U+009B is CSI) or reorder a line on a bidi override. Such
/// characters can only stand inside strings in JSON, so escaping them
/// there is always right.
pub fn json(s: &str) -> Cow<'_, str> {
    let risky = |c: char| (c as u32) >= 0x7F && needs_stand_in(c);
    if s.is_ascii() && !s.contains('\x7f') || !s.chars().any(risky) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        if risky(c) {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                let _ = write!(out, "\\u{unit:04x}");
            }
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Whether `s` holds a character [`text`] would change: names and other
/// identifiers are refused with one rather than shown with a stand-in.
pub fn has_control(s: &str) -> bool {
    s.chars()
        .any(|c| needs_stand_in(c) || c == '\n' || c == '\t')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_forged_permission_ask_shows_what_would_run() {
        let forged = "touch PWNED && echo pwned #\x1b[27D\x1b[K ls -la";
        assert_eq!(line(forged), "touch PWNED && echo pwned #␛[27D␛[K ls -la");
    }

    #[test]
    fn terminal_instructions_are_shown_never_kept() {
        // OSC 52 (clipboard), OSC 8 (link), OSC 0 (title), with BEL and ST.
        assert_eq!(text("\x1b]52;c;cHduZWQ=\x07"), "␛]52;c;cHduZWQ=␇");
        assert_eq!(
            text("\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\"),
            "␛]8;;http://x␛\\link␛]8;;␛\\"
        );
        // A lone CR would rewrite the line; a CRLF is a line end.
        assert_eq!(text("done\rforged"), "done␍forged");
        assert_eq!(text("a\r\nb"), "a\nb");
        assert_eq!(line("a\r\nb"), "a␍␊b");
        // DEL, C1 CSI, a bidi override, an isolate, a tag character.
        assert_eq!(text("a\x7fb"), "a␡b");
        assert_eq!(text("\u{9b}31m"), "<U+009B>31m");
        assert_eq!(text("abc\u{202e}fed"), "abc<U+202E>fed");
        assert_eq!(text("\u{2066}x\u{2069}"), "<U+2066>x<U+2069>");
        assert_eq!(text("\u{E0041}"), "<U+E0041>");
        assert_eq!(text("zero\u{200b}width"), "zero<U+200B>width");
    }

    #[test]
    fn text_keeps_lines_and_tabs_and_line_does_not() {
        assert_eq!(text("a\n\tb"), "a\n\tb");
        assert_eq!(line("a\n\tb"), "a␊␉b");
        assert!(matches!(text("plain ünïcødé 文字 ✓"), Cow::Borrowed(_)));
        assert!(matches!(line("plain"), Cow::Borrowed(_)));
        assert!(has_control("a\x1bb"));
        assert!(has_control("a\nb"));
        assert!(!has_control("ünï ✓"));
    }

    #[test]
    fn json_escapes_what_json_leaves_raw_and_keeps_the_value() {
        let value = serde_json::json!({"t": "a\u{9b}31m\u{202e}b\u{7f}\u{E0041}é\n"});
        let text = serde_json::to_string(&value).unwrap();
        let safe = json(&text);
        assert_eq!(safe, r#"{"t":"a\u009b31m\u202eb\u007f\udb40\udc41é\n"}"#);
        let back: serde_json::Value = serde_json::from_str(&safe).unwrap();
        assert_eq!(back, value);
        assert!(matches!(json(r#"{"a":"plain é"}"#), Cow::Borrowed(_)));
    }

    #[test]
    fn every_code_point_is_either_plain_or_visible() {
        // What comes out holds no character a terminal acts on, for every
        // code point in the ranges that hold them.
        let ranges = [0u32..0x3000, 0xFE00..0x10000, 0xE0000..0xE0100];
        for c in ranges.into_iter().flatten().filter_map(char::from_u32) {
            let shown = line(&c.to_string()).into_owned();
            assert!(
                shown
                    .chars()
                    .all(|s| !needs_stand_in(s) && s != '\n' && s != '\t'),
                "U+{:04X} came out as {shown:?}",
                c as u32
            );
            if needs_stand_in(c) {
                assert_ne!(shown, c.to_string(), "U+{:04X} was kept", c as u32);
            }
        }
    }
}
