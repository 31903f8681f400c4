//! A workload for compaction (DESIGN §17): an agent that works through `n`
//! numbered steps, each a Bash call that records its number in a file and
//! prints a large output, answering a summary request with the steps done.
//! The model's next step is read off the request (the highest step whose
//! command it holds, in its calls or in a summary), as a model would read
//! its conversation, so a compacted conversation continues where it was.

use std::time::Duration;

use serde_json::json;

use crate::mock::{Block, MockMessage, MockServer, RecordedRequest, Reply, last_text};

/// What the daemon's summary request asks (a phrase of it).
pub const SUMMARY_ASK: &str = "Write a continuation summary";
/// What a compacted conversation's first message starts with.
pub const SUMMARY_PREAMBLE: &str = "This session continues an earlier conversation";
/// The summary the mock writes: "STEPS-DONE-THROUGH-k".
pub const DONE_MARK: &str = "STEPS-DONE-THROUGH-";
/// The final answer.
pub const FINISHED: &str = "ALL STEPS FINISHED";

/// Whether `r` is a summary request.
pub fn is_summary_request(r: &RecordedRequest) -> bool {
    last_text(r).contains(SUMMARY_ASK)
}

/// The highest step the request shows was called (`STEP-k-OF` in a
/// command) or summarised (`STEPS-DONE-THROUGH-k`).
pub fn steps_seen(r: &RecordedRequest) -> u32 {
    let body = r.body_text();
    let mut best = 0;
    for marker in ["STEP-", DONE_MARK] {
        let mut rest = body.as_str();
        while let Some(at) = rest.find(marker) {
            rest = &rest[at + marker.len()..];
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            if let Ok(k) = digits.parse::<u32>() {
                best = best.max(k);
            }
        }
    }
    best
}

/// The Bash command of step `k`: appends `k` to `steps.log` in the working
/// directory and prints `bytes` bytes.
pub fn step_command(k: u32, n: u32, bytes: usize) -> String {
    format!("echo {k} >> steps.log; echo STEP-{k}-OF-{n}; head -c {bytes} /dev/zero | tr '\\0' x")
}

/// Makes the mock the model of the workload: `n` steps of `bytes` output
/// each; the summary (after `summary_delay`) names the last step done.
pub fn steps_workload(mock: &MockServer, n: u32, bytes: usize, summary_delay: Duration) {
    mock.respond_with(move |r| {
        let seen = steps_seen(r);
        if is_summary_request(r) {
            return Some(Reply::Message(
                MockMessage::text(format!(
                    "Task: run steps 1..{n}. {DONE_MARK}{seen}. Next: step {}.",
                    seen + 1
                ))
                .delay_start(summary_delay),
            ));
        }
        if seen >= n {
            return Some(Reply::text(FINISHED));
        }
        let k = seen + 1;
        Some(Reply::Message(MockMessage {
            content: vec![Block::tool(
                format!("toolu_step{k}"),
                "Bash",
                json!({"command": step_command(k, n, bytes)}),
            )],
            ..Default::default()
        }))
    });
}

/// The steps recorded in `steps.log` of `dir`, in order.
pub fn steps_run(dir: &std::path::Path) -> Vec<u32> {
    std::fs::read_to_string(dir.join("steps.log"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}
