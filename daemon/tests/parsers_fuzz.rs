//! The parsers of what people and providers hand the daemon — agent type
//! and fork profile front matter, scripted model files, SSE streams, model
//! specs, config.toml — fed arbitrary and mutated input (seeded, on stable
//! Rust): they may refuse it, never panic. An SSE stream split at random
//! points parses to the same events as in one piece.
//!
//! `AGENTD_FUZZ_SEED=<n>` repeats a run; `AGENTD_FUZZ_ROUNDS` makes it longer.

#![allow(clippy::unwrap_used)] // Tests: a panic is the failure report.

use std::path::Path;

use agentd::config::{agent_types as types, fork_profile};
use agentd::model::sse::SseParser;
use agentd::model::{ModelSpec, Script};

/// A tiny seeded generator (xorshift), so the test needs no extra crate.
struct Gen(u64);

impl Gen {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    /// `seed` mutated: bytes replaced, inserted, removed, duplicated.
    fn mutate(&mut self, seed: &str) -> Vec<u8> {
        let mut bytes = seed.as_bytes().to_vec();
        for _ in 0..=self.below(8) {
            let at = self.below(bytes.len() + 1);
            match self.below(5) {
                0 if at < bytes.len() => bytes[at] = self.next() as u8,
                1 => bytes.insert(at, self.next() as u8),
                2 if at < bytes.len() => {
                    bytes.remove(at);
                }
                3 => {
                    let piece: Vec<u8> = bytes[at..].iter().take(16).copied().collect();
                    bytes.splice(at..at, piece);
                }
                _ => bytes.extend(b"---\n\n:\x00{[\"'\\\xff".iter().take(self.below(12))),
            }
        }
        bytes
    }

    fn input(&mut self, seeds: &[&str]) -> Vec<u8> {
        if self.below(4) == 0 {
            (0..self.below(300)).map(|_| self.next() as u8).collect()
        } else {
            let seed = seeds[self.below(seeds.len())];
            self.mutate(seed)
        }
    }
}

const TYPE_FILES: [&str; 2] = [
    "---\nname: reviewer\ndescription: Reviews\ntools: Read, Grep\nmodel: sonnet\npermissionMode: plan\nisolation: worktree\nsandbox: read-only\n---\nYou review.\n",
    "---\nname: a\ndescription: d\ntools: [Read, Bash]\ncolor: red\n---\nbody",
];
const PROFILES: [&str; 1] =
    ["---\nname: researcher\ntools: [Read, Grep, Glob]\npromptHint: look only\n---\n"];
const SCRIPTS: [&str; 2] = [
    r#"{"turns":[{"delay_ms":5,"content":[{"type":"text","text":"hi"},{"type":"tool_use","name":"Bash","input":{"command":"ls"}}]},{"content":[{"type":"thinking","thinking":"t"}]}]}"#,
    "turns:\n  - content:\n      - type: text\n        text: hi\n",
];
const SSE: &str = "event: message_start\ndata: {\"type\":\"message_start\"}\n\n: comment\nevent: content_block_delta\ndata: {\"a\":\n data: 1}\r\n\r\ndata: [DONE]\n\n";
const CONFIGS: [&str; 1] = [
    "default_model = \"anthropic:x\"\nmax_turns = 5\n[anthropic]\ncache_ttl = \"1h\"\n[retry]\nmax_attempts = 2\n[prices.\"openai:*\"]\ninput = 1.0\noutput = 2.0\n",
];

fn seed() -> u64 {
    std::env::var("AGENTD_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x00c0_ffee)
        | 1
}

fn rounds() -> usize {
    std::env::var("AGENTD_FUZZ_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5_000)
}

#[test]
fn front_matter_and_model_specs_refuse_garbage_without_panicking() {
    let mut g = Gen(seed());
    let path = Path::new("fuzz.md");
    for _ in 0..rounds() {
        let text = String::from_utf8_lossy(&g.input(&TYPE_FILES)).into_owned();
        let _ = types::parse_type_file(path, &text);
        let _ = types::parse_type_file_as(path, &text, types::Dialect::ClaudeCode);
        let text = String::from_utf8_lossy(&g.input(&PROFILES)).into_owned();
        let _ = fork_profile::parse("fuzz", path, &text);
        let spec = String::from_utf8_lossy(&g.input(&["anthropic:claude-x", "scripted:a.json"]))
            .into_owned();
        let _ = ModelSpec::parse(&spec);
    }
}

#[test]
fn scripts_and_config_files_refuse_garbage_without_panicking() {
    let mut g = Gen(seed() ^ 0x5c);
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("s.json");
    let config = dir.path().join("config.toml");
    for _ in 0..rounds() / 5 {
        std::fs::write(&script, g.input(&SCRIPTS)).unwrap();
        let _ = Script::load(&script);
        std::fs::write(&config, g.input(&CONFIGS)).unwrap();
        let _ = agentd::config::Config::load(&config);
    }
}

#[test]
fn sse_parses_the_same_in_any_pieces_and_survives_garbage() {
    let mut g = Gen(seed() ^ 0x55e);
    for _ in 0..rounds() {
        let stream = g.input(&[SSE]);
        let mut whole = Vec::new();
        SseParser::default().feed(&stream, &mut whole);
        // The same bytes, cut at random points.
        let mut pieces = Vec::new();
        let mut parser = SseParser::default();
        let mut rest = &stream[..];
        while !rest.is_empty() {
            let n = 1 + g.below(rest.len().min(17));
            parser.feed(&rest[..n], &mut pieces);
            rest = &rest[n..];
        }
        assert_eq!(
            whole,
            pieces,
            "stream {:?}",
            String::from_utf8_lossy(&stream)
        );
    }
}
