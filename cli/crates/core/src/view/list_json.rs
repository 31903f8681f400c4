//! `list --json` written straight into one buffer.
//!
//! The same bytes serde_json writes for [`AgentJson`] (a test compares them
//! on random agents), without its per-byte string escaping, which was the
//! largest single cost of listing a thousand agents (12 % of the command's
//! CPU, profiled with `perf`): strings are scanned eight bytes at a time and
//! copied in runs.

use agentd_shared::proto as pb;

use super::plan::PlanItemJson;
use super::render::{AgentJson, UsageJson};
use super::worktree::AgentWorktreeJson;

/// The JSON array of `agents`, then a newline: what `list --json` prints.
pub fn agents(agents: &[pb::Agent]) -> Vec<u8> {
    // About 700 bytes each; one growth at most for most listings.
    let mut out = Vec::with_capacity(64 + agents.len() * 800);
    out.push(b'[');
    for (i, a) in agents.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        agent(&mut out, &AgentJson::of(a));
    }
    out.extend_from_slice(b"]\n");
    out
}

/// One agent as an object, fields in declaration order (serde's). The
/// struct is taken apart whole, so a field added to it does not compile
/// until it is written here too.
fn agent(out: &mut Vec<u8>, a: &AgentJson<'_>) {
    let AgentJson {
        id,
        short_id,
        name,
        description,
        subagent_type,
        status,
        background,
        parent_id,
        model,
        cwd,
        created_at,
        updated_at,
        turns,
        tool_uses,
        max_turns,
        permission_mode,
        usage: tokens,
        can_message,
        resume_blocked_reason,
        resume_blocked_detail,
        result,
        error,
        waiting_for,
        transcript_len,
        worktree: tree,
        sandbox,
        no_network,
        network,
        plan: items,
        budget,
    } = a;
    let mut o = Object::open(out);
    o.str("id", id);
    o.str("short_id", short_id);
    o.opt_str("name", *name);
    o.str("description", description);
    o.opt_str("subagent_type", *subagent_type);
    o.str("status", status);
    o.bool("background", *background);
    o.opt_str("parent_id", *parent_id);
    o.str("model", model);
    o.str("cwd", cwd);
    o.str("created_at", created_at);
    o.str("updated_at", updated_at);
    o.uint("turns", (*turns).into());
    o.uint("tool_uses", (*tool_uses).into());
    o.uint("max_turns", (*max_turns).into());
    o.str("permission_mode", permission_mode);
    o.key("usage");
    usage(o.out, tokens);
    o.bool("can_message", *can_message);
    o.opt_str("resume_blocked_reason", *resume_blocked_reason);
    o.opt_str("resume_blocked_detail", *resume_blocked_detail);
    o.opt_str("result", *result);
    o.opt_str("error", *error);
    o.opt_str("waiting_for", *waiting_for);
    o.uint("transcript_len", *transcript_len);
    if let Some(w) = tree {
        o.key("worktree");
        worktree(o.out, w);
    }
    o.str("sandbox", sandbox);
    o.bool("no_network", *no_network);
    o.str("network", network);
    o.key("plan");
    plan(o.out, items);
    if let Some(b) = budget {
        // Rare (an agent with a budget of its own): serde writes it.
        o.key("budget");
        serde_json::to_writer(&mut *o.out, b).unwrap_or_default();
    }
    o.close();
}

fn plan(out: &mut Vec<u8>, items: &[PlanItemJson<'_>]) {
    out.push(b'[');
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        let PlanItemJson {
            content,
            status,
            active_form,
        } = item;
        let mut o = Object::open(out);
        o.str("content", content);
        o.str("status", status);
        o.str("activeForm", active_form);
        o.close();
    }
    out.push(b']');
}

fn usage(out: &mut Vec<u8>, u: &UsageJson) {
    let UsageJson {
        input_tokens,
        output_tokens,
        cache_read_input_tokens,
        cache_creation_input_tokens,
    } = u;
    let mut o = Object::open(out);
    o.uint("input_tokens", *input_tokens);
    o.uint("output_tokens", *output_tokens);
    o.uint("cache_read_input_tokens", *cache_read_input_tokens);
    o.uint("cache_creation_input_tokens", *cache_creation_input_tokens);
    o.close();
}

fn worktree(out: &mut Vec<u8>, w: &AgentWorktreeJson<'_>) {
    let AgentWorktreeJson {
        path,
        branch,
        base,
        state,
        checkout,
        owned,
        changed,
        untracked,
        ahead,
        notice,
    } = w;
    let mut o = Object::open(out);
    o.str("path", path);
    o.str("branch", branch);
    o.str("base", base);
    o.str("state", state);
    o.str("checkout", checkout);
    o.bool("owned", *owned);
    o.uint("changed", (*changed).into());
    o.uint("untracked", (*untracked).into());
    o.uint("ahead", (*ahead).into());
    if !notice.is_empty() {
        o.str("notice", notice);
    }
    o.close();
}

/// A JSON object being written: commas between members.
struct Object<'a> {
    out: &'a mut Vec<u8>,
    first: bool,
}

impl<'a> Object<'a> {
    fn open(out: &'a mut Vec<u8>) -> Object<'a> {
        out.push(b'{');
        Object { out, first: true }
    }

    /// A member's key (keys here are plain ASCII names: no escaping).
    fn key(&mut self, key: &str) {
        if !self.first {
            self.out.push(b',');
        }
        self.first = false;
        self.out.push(b'"');
        self.out.extend_from_slice(key.as_bytes());
        self.out.extend_from_slice(b"\":");
    }

    fn str(&mut self, key: &str, value: &str) {
        self.key(key);
        string(self.out, value);
    }

    fn opt_str(&mut self, key: &str, value: Option<&str>) {
        self.key(key);
        match value {
            Some(v) => string(self.out, v),
            None => self.out.extend_from_slice(b"null"),
        }
    }

    fn bool(&mut self, key: &str, value: bool) {
        self.key(key);
        self.out
            .extend_from_slice(if value { b"true" } else { b"false" });
    }

    fn uint(&mut self, key: &str, value: u64) {
        self.key(key);
        let mut digits = [0u8; 20];
        let mut at = digits.len();
        let mut n = value;
        loop {
            at -= 1;
            digits[at] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        self.out.extend_from_slice(&digits[at..]);
    }

    fn close(self) {
        self.out.push(b'}');
    }
}

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// Whether any of the eight bytes in `v` must be escaped: a control
/// character (below 0x20), `"` or `\`. Exact for "any" (the borrow tricks
/// can misplace which byte, never invent one).
fn any_to_escape(v: u64) -> bool {
    let zero_byte = |x: u64| x.wrapping_sub(ONES) & !x & HIGHS;
    let below_space = v.wrapping_sub(ONES * 0x20) & !v & HIGHS;
    let quote = zero_byte(v ^ (ONES * u64::from(b'"')));
    let backslash = zero_byte(v ^ (ONES * u64::from(b'\\')));
    below_space | quote | backslash != 0
}

/// `s` as a JSON string, escaped as serde_json escapes it: `\"`, `\\`,
/// the short forms of \b \f \n \r \t, `\u00xx` (lowercase) for the other
/// control characters; everything else, including non-ASCII, as is.
fn string(out: &mut Vec<u8>, s: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let bytes = s.as_bytes();
    out.push(b'"');
    let mut run = 0;
    let mut i = 0;
    while i < bytes.len() {
        if let Some(chunk) = bytes.get(i..i + 8)
            && let Ok(eight) = <[u8; 8]>::try_from(chunk)
            && !any_to_escape(u64::from_le_bytes(eight))
        {
            i += 8;
            continue;
        }
        let b = bytes[i];
        let short: Option<&[u8]> = match b {
            b'"' => Some(b"\\\""),
            b'\\' => Some(b"\\\\"),
            0x08 => Some(b"\\b"),
            0x0c => Some(b"\\f"),
            b'\n' => Some(b"\\n"),
            b'\r' => Some(b"\\r"),
            b'\t' => Some(b"\\t"),
            _ => None,
        };
        if short.is_some() || b < 0x20 {
            out.extend_from_slice(&bytes[run..i]);
            match short {
                Some(escaped) => out.extend_from_slice(escaped),
                None => out.extend_from_slice(&[
                    b'\\',
                    b'u',
                    b'0',
                    b'0',
                    HEX[usize::from(b >> 4)],
                    HEX[usize::from(b & 0xf)],
                ]),
            }
            run = i + 1;
        }
        i += 1;
    }
    out.extend_from_slice(&bytes[run..]);
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small deterministic generator (xorshift), so a failure repeats.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }

        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }

        /// Text that exercises escaping: runs of plain ASCII (long enough
        /// for the eight-byte path), quotes, backslashes, every control
        /// character, DEL, and multi-byte characters.
        fn text(&mut self) -> String {
            let len = self.below(40);
            let mut s = String::new();
            for _ in 0..len {
                match self.below(10) {
                    0 => s.push(char::from(self.below(0x20) as u8)),
                    1 => s.push(['"', '\\', '/', '\u{7f}'][self.below(4) as usize]),
                    2 => s.push(['é', '…', '中', '🦀', '\u{2028}'][self.below(5) as usize]),
                    3 => s.push_str("plain words and more plain words"),
                    _ => s.push(char::from(b' ' + self.below(95) as u8)),
                }
            }
            s
        }

        fn agent(&mut self) -> pb::Agent {
            let maybe = |r: &mut Rng| {
                if r.below(3) == 0 {
                    String::new()
                } else {
                    r.text()
                }
            };
            pb::Agent {
                id: self.text(),
                short_id: self.text(),
                name: maybe(self),
                description: self.text(),
                subagent_type: maybe(self),
                // Out of range too: shown as "unknown".
                status: self.below(12) as i32,
                background: self.below(2) == 0,
                parent_id: maybe(self),
                model: self.text(),
                cwd: self.text(),
                created_at: Some(prost_types::Timestamp {
                    seconds: self.below(4_000_000_000) as i64,
                    nanos: self.below(1_000_000_000) as i32,
                }),
                updated_at: (self.below(4) > 0).then(|| prost_types::Timestamp {
                    seconds: self.below(4_000_000_000) as i64,
                    nanos: self.below(1_000_000_000) as i32,
                }),
                turns: self.next() as u32,
                tool_uses: self.next() as u32,
                max_turns: self.below(1000) as u32,
                permission_mode: self.below(7) as i32,
                usage: (self.below(3) > 0).then(|| pb::Usage {
                    input_tokens: self.next(),
                    output_tokens: self.below(100_000),
                    cache_read_input_tokens: self.below(10),
                    cache_creation_input_tokens: u64::MAX,
                }),
                can_message: self.below(2) == 0,
                resume_blocked_reason: self.below(10) as i32,
                resume_blocked_detail: maybe(self),
                result: maybe(self),
                error: maybe(self),
                waiting_for: maybe(self),
                transcript_len: self.next(),
                worktree: (self.below(3) == 0).then(|| pb::AgentWorktree {
                    path: self.text(),
                    branch: self.text(),
                    base: self.text(),
                    state: self.below(8) as i32,
                    checkout: self.text(),
                    owned: self.below(2) == 0,
                    work: (self.below(2) == 0).then(|| pb::WorkSummary {
                        changed: self.next() as u32,
                        untracked: self.below(5) as u32,
                        ahead: self.below(5) as u32,
                    }),
                    notice: if self.below(2) == 0 {
                        self.text()
                    } else {
                        String::new()
                    },
                    ..Default::default()
                }),
                sandbox: self.below(6) as i32,
                no_network: self.below(2) == 0,
                network: self.below(5) as i32,
                plan: (0..self.below(4))
                    .map(|_| pb::PlanItem {
                        content: self.text(),
                        // Out of range too: shown as "unknown".
                        status: self.below(5) as i32,
                        active_form: self.text(),
                    })
                    .collect(),
                budget: (self.below(3) == 0).then(|| pb::AgentBudget {
                    usd: self.below(1000) as f64 / 7.0,
                    tokens: self.below(100_000),
                    spent_usd: self.below(1000) as f64 / 3.0,
                    spent_tokens: self.below(100_000),
                    unmeasured: maybe(self),
                }),
                ..Default::default()
            }
        }
    }

    fn serde_listing(agents: &[pb::Agent]) -> Vec<u8> {
        let json: Vec<_> = agents.iter().map(AgentJson::of).collect();
        let mut out = serde_json::to_vec(&json).unwrap();
        out.push(b'\n');
        out
    }

    #[test]
    fn the_listing_is_byte_for_byte_what_serde_json_writes() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for round in 0..300 {
            let n = rng.below(6) as usize;
            let list: Vec<pb::Agent> = (0..n).map(|_| rng.agent()).collect();
            let fast = agents(&list);
            let slow = serde_listing(&list);
            assert!(
                fast == slow,
                "round {round}:\n fast {}\n serde {}",
                String::from_utf8_lossy(&fast),
                String::from_utf8_lossy(&slow)
            );
        }
        assert_eq!(agents(&[]), b"[]\n");
    }

    #[test]
    fn every_byte_is_escaped_as_serde_json_escapes_it_at_every_offset() {
        for b in 0u8..0x80 {
            for offset in 0..17 {
                let s = format!("{}{}{}", "a".repeat(offset), char::from(b), "b".repeat(9));
                let mut fast = Vec::new();
                string(&mut fast, &s);
                assert_eq!(
                    fast,
                    serde_json::to_vec(&s).unwrap(),
                    "byte {b:#04x} at offset {offset}"
                );
            }
        }
    }
}
