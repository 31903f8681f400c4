//! Printing a transcript for people: assistant text as it streams, and one
//! line per tool call with its outcome. Used by `run` (live) and `log`.
//! Everything here is the model's, a tool's or a repository's: it is
//! printed made visible (`agentd_shared::visible`), never raw.

use std::collections::HashMap;
use std::io::Write;

use agentd_shared::proto as pb;
use agentd_shared::tool_summary::summarize;
use agentd_shared::visible;
use serde_json::Value;

use super::render;

/// Turns attach events or stored entries into terminal output. Text goes to
/// stdout; tool lines go to stderr, so `agentctl run … > answer.txt` keeps
/// only what the agent said.
#[derive(Default)]
pub struct TranscriptView {
    /// tool_use id → (name, summary), to label results.
    tools: HashMap<String, (String, String)>,
    /// Text of the response in progress was already printed from deltas.
    streamed: bool,
    /// The last thing printed to stdout did not end a line.
    open_line: bool,
    /// Print user prompts and what file tools changed too (for `log` and
    /// `attach`, not for `run`).
    show_user_text: bool,
}

impl TranscriptView {
    /// A view that also prints the user's messages and daemon notes.
    pub fn with_user_text() -> Self {
        TranscriptView {
            show_user_text: true,
            ..Default::default()
        }
    }

    pub fn delta(&mut self, d: &pb::ContentDelta) {
        if let Some(pb::content_delta::Delta::Text(text)) = &d.delta {
            print!("{}", visible::text(text));
            let _ = std::io::stdout().flush();
            self.streamed = true;
            self.open_line = !text.ends_with('\n');
        }
    }

    fn end_line(&mut self) {
        if self.open_line {
            println!();
            self.open_line = false;
        }
    }

    pub fn entry(&mut self, e: &pb::TranscriptEntry) {
        let blocks = match render::content(e) {
            Value::Array(blocks) => blocks,
            other => vec![other],
        };
        match pb::Role::try_from(e.role).unwrap_or_default() {
            pb::Role::Assistant => {
                for block in &blocks {
                    match block["type"].as_str() {
                        Some("text") if !self.streamed => {
                            let text = block["text"].as_str().unwrap_or_default();
                            print!("{}", visible::text(text));
                            self.open_line = !text.ends_with('\n');
                        }
                        Some("tool_use") => {
                            let name = block["name"].as_str().unwrap_or("?");
                            let name = visible::line(name).into_owned();
                            let summary = summarize(&name, &block["input"]);
                            let id = block["id"].as_str().unwrap_or_default().to_string();
                            self.tools.insert(id, (name, summary));
                        }
                        _ => {}
                    }
                }
                self.end_line();
                self.streamed = false;
            }
            pb::Role::User => {
                for block in &blocks {
                    match block["type"].as_str() {
                        Some("tool_result") => self.tool_result(block, e),
                        Some("text") if self.show_user_text => {
                            self.end_line();
                            let text = block["text"].as_str().unwrap_or_default();
                            println!("> {}", visible::text(text));
                        }
                        _ => {}
                    }
                }
            }
            pb::Role::System if e.compact_boundary.is_some() => {
                let b = e.compact_boundary.clone().unwrap_or_default();
                self.end_line();
                println!(
                    "── context compacted ({}): ~{} tokens → ~{}; entries up to #{} are summarised ──",
                    render::compact_trigger_name(b.trigger),
                    b.tokens_before,
                    b.tokens_after,
                    b.covers_through_seq
                );
                if self.show_user_text {
                    println!("[summary] {}", visible::text(&b.summary));
                }
            }
            pb::Role::System
                if blocks
                    .iter()
                    .any(|b| b["type"] == "agentd_note" && b["kind"] == "rewind") =>
            {
                let b = blocks.iter().find(|b| b["kind"] == "rewind");
                let turn = b.and_then(|b| b["turn"].as_u64()).unwrap_or_default();
                let seq = b.and_then(|b| b["to_seq"].as_u64()).unwrap_or_default();
                self.end_line();
                println!(
                    "── rewound to the beginning of turn {turn}: later requests leave out entries from #{seq} on (they stay here) ──"
                );
            }
            pb::Role::System => {
                if self.show_user_text {
                    self.end_line();
                    for block in &blocks {
                        match block["text"].as_str() {
                            Some(text) => println!("[note] {}", visible::text(text)),
                            None => println!("[note] {}", visible::text(&block.to_string())),
                        }
                    }
                }
            }
            pb::Role::Unspecified => {}
        }
        let _ = std::io::stdout().flush();
    }

    fn tool_result(&mut self, block: &Value, e: &pb::TranscriptEntry) {
        let id = block["tool_use_id"].as_str().unwrap_or_default();
        let (name, summary) = self
            .tools
            .get(id)
            .cloned()
            .unwrap_or_else(|| ("tool".to_string(), visible::line(id).into_owned()));
        let is_error = block["is_error"].as_bool().unwrap_or(false);
        let text = match &block["content"] {
            Value::String(s) => s.clone(),
            Value::Array(parts) => parts
                .iter()
                .filter_map(|p| p["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n"),
            _ => String::new(),
        };
        let outcome = if is_error {
            let first = text.split('\n').next().unwrap_or("");
            format!("error: {}", render::clip(&visible::line(first), 120))
        } else {
            let lines = text.lines().count();
            format!("ok ({lines} line{})", if lines == 1 { "" } else { "s" })
        };
        self.end_line();
        let mark = if is_error { '✗' } else { '✓' };
        eprintln!("{mark} {name}({summary}) → {outcome}");
        // A deny already says so in its result.
        for line in super::rule_decision::lines_for(&e.rule_decisions, id) {
            if !outcome.contains(&line) {
                eprintln!("  · {line}");
            }
        }
        if self.show_user_text {
            for change in e.file_changes.iter().filter(|c| c.tool_use_id == id) {
                for line in super::change::terminal_lines(change) {
                    eprintln!("{line}");
                }
            }
        }
    }

    /// The response streamed so far was void; the model call is retried.
    pub fn retry(&mut self, r: &pb::ResponseRetry) {
        self.end_line();
        self.streamed = false;
        eprintln!(
            "⟳ model call failed (attempt {}): {} — retrying in {:.1}s",
            r.attempt,
            visible::line(&r.reason),
            r.delay_ms as f64 / 1000.0
        );
    }

    /// Closes any open line before the program prints its verdict.
    pub fn finish(&mut self) {
        self.end_line();
        let _ = std::io::stdout().flush();
    }
}
