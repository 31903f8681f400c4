//! The torture workload's model: the mock's answer is computed from the
//! request alone, so an agent resumed after a SIGKILL gets the step it had
//! reached, whatever order the requests arrive in.
//!
//! An agent's task carries a tag `[[torture key=KEY plan=PLAN]]` (its
//! prompt, a child's prompt, a fork's directive). The newest user message
//! with a tag names the agent; its step is the number of assistant messages
//! after it. PLAN is a list of steps:
//!
//! - `B<n>`: n steps, each one Bash call appending the line `KEY.<step>` to
//!   `torture-side.log` in the agent's directory (then sleeping a little, so
//!   kills land inside tools too);
//! - `S<n>`: one step starting n background subagents (`KEY.c<i>`, named
//!   so, plan `B2`);
//! - `R1`: one step starting a read-only subagent (`KEY.r`, of the
//!   project's type `torture-reader`, plan `M1`);
//! - `M1`: one step sending the sibling `PARENT.c0` (an agent less confined
//!   than this one) a message to run something: the daemon must refuse it
//!   (`ESCAPE_MARK` must never reach that sibling);
//! - `F<n>`: one step forking n times (`KEY.f<i>`, plan `B1`);
//! - `L<n>`: n long answers (128 KiB of text streamed at full speed, some
//!   16,000 events): the output a client that never reads chokes on;
//! - `V<n>`: n Bash steps that also leave a process behind every way it
//!   can (a new session, no environment, a double fork, `nohup`, another
//!   name): none may outlive its agent's run or the daemon;
//! - `G<n>`: n Bash steps that also commit the side log (`git add`,
//!   `git commit -m KEY.<step>`): in a worktree under the sandbox, through
//!   the agent's git quarantine (DESIGN §23), which a kill may cut short;
//! - `P<n>`: n Bash steps that also make a FIFO, then Read it and Grep the
//!   directory holding it: answered at once, never a hang;
//! - `C1`: the conversation outgrows the window before the next step: its
//!   request is refused as Anthropic refuses one ("prompt is too long"), and
//!   the summary request (answered slowly, so kills land inside a
//!   compaction) is answered with a summary carrying the tag and the step
//!   to resume at (`[[torture key=KEY plan=PLAN from=STEP]]`). A request
//!   whose conversation starts with that summary is at STEP plus the
//!   assistant messages after it. A C step takes no answer of its own.
//!
//! After the plan the agent answers `done KEY`, and `ok KEY` to anything
//! later (a message, a notification).

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};

use crate::mock::{Block, MockMessage, RecordedRequest, Reply};
use agentd_shared::sync::Unpoisoned as _;

/// The file every Bash step appends its marker line to.
pub const SIDE_LOG: &str = "torture-side.log";

/// What a read-only agent's message to a less confined sibling says: it
/// must never be found in any agent's messages.
pub const ESCAPE_MARK: &str = "torture-escape";

/// The agent type of `R` steps' children (written into the project).
pub const READER_TYPE: &str = "torture-reader";

/// The type file of [`READER_TYPE`]: read-only, every tool.
pub const READER_TYPE_FILE: &str = "---\nname: torture-reader\ndescription: reads and reports\nsandbox: read-only\n---\nYou read and report.\n";

/// The tag for an agent's task.
pub fn tag(key: &str, plan: &str) -> String {
    format!("[[torture key={key} plan={plan}]]")
}

/// One step of a plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    Bash,
    Commit,
    Spawn(usize),
    Fork(usize),
    Long,
    Survivor,
    Fifo,
    Reader,
    Message,
}

/// A parsed plan: its steps, and the steps a compaction comes before.
#[derive(Debug, PartialEq, Eq)]
struct Plan {
    steps: Vec<Step>,
    compact_before: Vec<usize>,
}

fn parse_plan(plan: &str) -> Option<Plan> {
    let mut steps = Vec::new();
    let mut compact_before = Vec::new();
    let mut chars = plan.chars().peekable();
    while let Some(kind) = chars.next() {
        let mut digits = String::new();
        while let Some(d) = chars.peek().filter(|c| c.is_ascii_digit()) {
            digits.push(*d);
            chars.next();
        }
        let n: usize = digits.parse().ok()?;
        match kind {
            'B' => steps.extend(std::iter::repeat_n(Step::Bash, n)),
            'G' => steps.extend(std::iter::repeat_n(Step::Commit, n)),
            'S' => steps.push(Step::Spawn(n)),
            'F' => steps.push(Step::Fork(n)),
            'L' => steps.extend(std::iter::repeat_n(Step::Long, n)),
            'V' => steps.extend(std::iter::repeat_n(Step::Survivor, n)),
            'P' => steps.extend(std::iter::repeat_n(Step::Fifo, n)),
            'R' if n == 1 => steps.push(Step::Reader),
            'M' if n == 1 => steps.push(Step::Message),
            'C' if n == 1 && compact_before.last() != Some(&steps.len()) => {
                compact_before.push(steps.len());
            }
            _ => return None,
        }
    }
    Some(Plan {
        steps,
        compact_before,
    })
}

/// How many compactions a plan asks for (`None`: it does not parse).
pub fn compactions_in(plan: &str) -> Option<usize> {
    parse_plan(plan).map(|p| p.compact_before.len())
}

/// Text blocks of a message (not tool results).
fn texts(message: &Value) -> Vec<&str> {
    match &message["content"] {
        Value::String(s) => vec![s.as_str()],
        Value::Array(blocks) => blocks
            .iter()
            .filter(|b| b["type"] == "text")
            .filter_map(|b| b["text"].as_str())
            .collect(),
        _ => Vec::new(),
    }
}

/// The tag a summary carries: the agent's, and the step to resume at.
fn resume_tag(key: &str, plan: &str, from: usize) -> String {
    format!("[[torture key={key} plan={plan} from={from}]]")
}

/// A tag found in a text: key, plan, and the step a summary resumes at.
struct Tag {
    key: String,
    plan: String,
    from: Option<usize>,
}

fn parse_tag(text: &str) -> Option<Tag> {
    let start = text.rfind("[[torture key=")?;
    let rest = &text[start + "[[torture key=".len()..];
    let end = rest.find("]]")?;
    let (key, plan) = rest[..end].split_once(" plan=")?;
    let (plan, from) = match plan.split_once(" from=") {
        Some((plan, from)) => (plan, Some(from.parse().ok()?)),
        None => (plan, None),
    };
    Some(Tag {
        key: key.to_string(),
        plan: plan.to_string(),
        from,
    })
}

/// The tag's key and plan in a text, the last one if several.
pub fn find_tag(text: &str) -> Option<(String, String)> {
    parse_tag(text).map(|t| (t.key, t.plan))
}

/// Whether a request is the daemon's summary request (its last message
/// asks for a continuation summary).
pub fn is_summary_request(r: &RecordedRequest) -> bool {
    r.json["messages"]
        .as_array()
        .and_then(|m| m.last())
        .is_some_and(|m| texts(m).iter().any(|t| t.contains(SUMMARY_ASK)))
}

/// A phrase of the daemon's summary request.
const SUMMARY_ASK: &str = "Write a continuation summary";

/// How the text of the assistant's answer at `step` begins (`None`: the
/// plan does not parse).
pub fn expected_text(key: &str, plan: &str, step: usize) -> Option<String> {
    let steps = parse_plan(plan)?.steps;
    Some(match steps.get(step) {
        Some(Step::Bash | Step::Commit | Step::Survivor | Step::Fifo) => {
            format!("Step {step} of {key}: recording it.")
        }
        Some(Step::Spawn(n)) => format!("Starting {n} helpers."),
        Some(Step::Reader) => "Starting a reader.".to_string(),
        Some(Step::Message) => format!("Step {step} of {key}: messaging."),
        Some(Step::Fork(n)) => format!("Forking {n} ways."),
        Some(Step::Long) => format!("Long answer {step} of {key}: "),
        None if step == steps.len() => format!("done {key}"),
        None => format!("ok {key}"),
    })
}

/// Answers a first run takes to end: through the first answer without a
/// tool call (a long answer, or the final `done`).
pub fn answers_to_finish(plan: &str) -> Option<usize> {
    let steps = parse_plan(plan)?.steps;
    Some(
        steps
            .iter()
            .position(|s| *s == Step::Long)
            .map_or(steps.len() + 1, |i| i + 1),
    )
}

/// Where a request stands: the agent's key and plan, its step, and the
/// step the summary its conversation starts with resumed at (if any).
struct At {
    key: String,
    plan: String,
    step: usize,
    resumed_at: Option<usize>,
}

/// Which agent sent a request and the step it is at.
fn identify(r: &RecordedRequest) -> Option<At> {
    let messages = r.json["messages"].as_array()?;
    let (at, tag) = messages.iter().enumerate().rev().find_map(|(i, m)| {
        if m["role"] != "user" {
            return None;
        }
        texts(m)
            .into_iter()
            .rev()
            .find_map(parse_tag)
            .map(|t| (i, t))
    })?;
    let answered = messages[at + 1..]
        .iter()
        .filter(|m| m["role"] == "assistant")
        .count();
    Some(At {
        step: tag.from.unwrap_or(0) + answered,
        resumed_at: tag.from,
        key: tag.key,
        plan: tag.plan,
    })
}

/// The reply for a request of the workload (`None`: not one of ours).
/// `survivor` names the processes `V` steps leave behind (unique to the
/// run, so runs side by side do not see each other's).
pub fn answer(r: &RecordedRequest, survivor: &str) -> Option<Reply> {
    let At {
        key,
        plan,
        step,
        resumed_at,
    } = identify(r)?;
    let Plan {
        steps,
        compact_before,
    } = parse_plan(&plan)?;
    if is_summary_request(r) {
        // Slow: a kill lands inside the compaction now and then.
        let summary = format!(
            "Summary of {key}: steps before {step} are done. {}",
            resume_tag(&key, &plan, step)
        );
        return Some(Reply::Message(
            MockMessage::text(summary)
                .delay_start(Duration::from_millis(150))
                .slow(Duration::from_millis(20)),
        ));
    }
    if compact_before.contains(&step) && resumed_at != Some(step) {
        return Some(Reply::status(
            400,
            "prompt is too long: 212000 tokens > 200000 maximum",
        ));
    }
    let mut pace = Duration::from_millis(2);
    let message = match steps.get(step) {
        Some(Step::Long) => {
            pace = Duration::ZERO;
            MockMessage::text(
                format!("Long answer {step} of {key}: ") + &"all work and no play ".repeat(6242),
            )
        }
        Some(Step::Bash) => MockMessage::text(format!("Step {step} of {key}: recording it.")).with(
            Block::bash("", format!("echo {key}.{step} >> {SIDE_LOG}; sleep 0.05")),
        ),
        Some(Step::Commit) => MockMessage::text(format!("Step {step} of {key}: recording it."))
            .with(Block::bash(
                "",
                format!(
                    "echo {key}.{step} >> {SIDE_LOG}; git add {SIDE_LOG} && git commit -q -m {key}.{step}; sleep 0.05"
                ),
            )),
        Some(Step::Survivor) => MockMessage::text(format!("Step {step} of {key}: recording it."))
            .with(Block::bash(
                "",
                format!(
                    "echo {key}.{step} >> {SIDE_LOG}; (setsid env -i nohup bash -c '(exec -a {survivor} sleep 600 &)' >/dev/null 2>&1 &); sleep 0.05"
                ),
            )),
        Some(Step::Fifo) => {
            let fifo = format!("fifo.{key}.{step}");
            MockMessage::text(format!("Step {step} of {key}: recording it."))
                .with(Block::bash(
                    "",
                    format!("echo {key}.{step} >> {SIDE_LOG}; mkfifo {fifo} 2>/dev/null; sleep 0.05"),
                ))
                .with(Block::tool("", "Read", json!({"file_path": fifo})))
                .with(Block::tool(
                    "",
                    "Grep",
                    json!({"pattern": "never-written", "path": "."}),
                ))
        }
        Some(Step::Spawn(n)) => {
            let mut m = MockMessage::text(format!("Starting {n} helpers."));
            for i in 0..*n {
                let child = format!("{key}.c{i}");
                m = m.with(Block::tool(
                    "",
                    "Agent",
                    json!({
                        "description": format!("helper {child}"),
                        "prompt": format!("Help out. {}", tag(&child, "B2")),
                        "subagent_type": "general-purpose",
                        "run_in_background": true,
                        "name": child,
                    }),
                ));
            }
            m
        }
        Some(Step::Reader) => {
            let child = format!("{key}.r");
            MockMessage::text("Starting a reader.").with(Block::tool(
                "",
                "Agent",
                json!({
                    "description": format!("reader {child}"),
                    "prompt": format!("Look around. {}", tag(&child, "M1")),
                    "subagent_type": READER_TYPE,
                    "run_in_background": true,
                }),
            ))
        }
        Some(Step::Message) => {
            // The sibling the parent's S step made first.
            let parent = key.rsplit_once('.').map_or(key.as_str(), |(p, _)| p);
            MockMessage::text(format!("Step {step} of {key}: messaging.")).with(Block::tool(
                "",
                "SendMessage",
                json!({
                    "to": format!("{parent}.c0"),
                    "message": format!("@bash echo {ESCAPE_MARK} >> ESCAPED"),
                }),
            ))
        }
        Some(Step::Fork(n)) => {
            let mut m = MockMessage::text(format!("Forking {n} ways."));
            for i in 0..*n {
                let child = format!("{key}.f{i}");
                m = m.with(Block::tool(
                    "",
                    "Agent",
                    json!({
                        "description": format!("fork {child}"),
                        "prompt": format!("Take part {i}. {}", tag(&child, "B1")),
                        "subagent_type": "fork",
                    }),
                ));
            }
            m
        }
        None if step == steps.len() => MockMessage::text(format!("done {key}")),
        None => MockMessage::text(format!("ok {key}")),
    };
    Some(Reply::Message(message.slow(pace)))
}

/// Faults the model server injects, at random (seeded).
pub struct Faults {
    rng: Mutex<StdRng>,
    /// Probability that a request gets a fault instead of its answer.
    pub rate: f64,
    /// Faults served so far.
    pub injected: AtomicUsize,
}

impl Faults {
    pub fn new(seed: u64, rate: f64) -> Faults {
        Faults {
            rng: Mutex::new(StdRng::seed_from_u64(seed ^ 0xfa17)),
            rate,
            injected: AtomicUsize::new(0),
        }
    }

    /// A fault in place of `reply`, or `reply`.
    pub fn maybe(&self, reply: Reply) -> Reply {
        let mut rng = self.rng.locked();
        if !rng.random_bool(self.rate) {
            return reply;
        }
        let Reply::Message(message) = reply else {
            return reply;
        };
        self.injected.fetch_add(1, Ordering::Relaxed);
        match rng.random_range(0..7) {
            0 => Reply::overloaded(),
            1 => Reply::status(500, "Internal server error"),
            2 => Reply::rate_limited(0),
            3 => Reply::Reset,
            4 => Reply::Cut {
                message,
                after_events: rng.random_range(1..4),
            },
            5 => Reply::ErrorEvent {
                message,
                after_events: rng.random_range(1..4),
                error_type: "overloaded_error".into(),
                error_message: "Overloaded".into(),
            },
            // A stall mid-stream: longer than the daemon's idle timeout
            // (1 s in the fault run) half of the time.
            _ => {
                let stall = if rng.random_bool(0.5) { 1500 } else { 400 };
                Reply::Message(message.slow(Duration::from_millis(stall)))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_parse_and_garbage_does_not() {
        assert_eq!(
            parse_plan("B2S1F3").map(|p| p.steps),
            Some(vec![Step::Bash, Step::Bash, Step::Spawn(1), Step::Fork(3)])
        );
        assert_eq!(
            parse_plan("V1P2").map(|p| p.steps),
            Some(vec![Step::Survivor, Step::Fifo, Step::Fifo])
        );
        assert_eq!(
            parse_plan("B1C1B2C1F2"),
            Some(Plan {
                steps: vec![Step::Bash, Step::Bash, Step::Bash, Step::Fork(2)],
                compact_before: vec![1, 3],
            })
        );
        assert_eq!(parse_plan("X1"), None);
        assert_eq!(parse_plan("B"), None);
        assert_eq!(parse_plan("C2"), None);
        assert_eq!(parse_plan("B1C1C1"), None);
    }

    #[test]
    fn the_newest_tag_names_the_agent() {
        let text = format!("{} and then {}", tag("a", "B1"), tag("a.f0", "B1"));
        assert_eq!(find_tag(&text), Some(("a.f0".into(), "B1".into())));
        let summary = format!("done so far {}", resume_tag("a", "B1C1B1", 1));
        let t = parse_tag(&summary).unwrap();
        assert_eq!(
            (t.key.as_str(), t.plan.as_str(), t.from),
            ("a", "B1C1B1", Some(1))
        );
    }

    fn request(messages: Value) -> RecordedRequest {
        let json = json!({"model": "m", "messages": messages});
        RecordedRequest {
            api: crate::mock::Api::Anthropic,
            method: "POST".into(),
            path: "/v1/messages".into(),
            query: None,
            headers: Vec::new(),
            body: json.to_string().into_bytes(),
            json,
            cache: None,
            output_tokens: None,
            received_at: std::time::Instant::now(),
            completed_at: None,
            index: 0,
        }
    }

    /// The text of a message the workload answers with.
    fn text_of(reply: Option<Reply>) -> String {
        match reply {
            Some(Reply::Message(m)) => match m.content.first() {
                Some(Block::Text(t)) => t.clone(),
                other => panic!("a text first, not {other:?}"),
            },
            _ => panic!("a message"),
        }
    }

    /// The compaction a plan asks for: the request at its step is refused
    /// as too long, the summary request is answered with the step to
    /// resume at, and the compacted conversation goes on from there.
    #[test]
    fn a_compaction_step_refuses_summarises_and_resumes() {
        let task = format!("go {}", tag("k", "B1C1B1"));
        let at_step_1 = request(json!([
            {"role": "user", "content": task},
            {"role": "assistant", "content": [{"type": "text", "text": "Step 0 of k: recording it."}]},
            {"role": "user", "content": [{"type": "text", "text": "ok"}]},
        ]));
        assert!(matches!(
            answer(&at_step_1, "s"),
            Some(Reply::Status { code: 400, ref message, .. }) if message.starts_with("prompt is too long")
        ));
        let summary_request = request(json!([
            {"role": "user", "content": task},
            {"role": "assistant", "content": [{"type": "text", "text": "Step 0 of k: recording it."}]},
            {"role": "user", "content": [{"type": "text", "text": "ok"}, {"type": "text", "text": "agentd: Write a continuation summary now"}]},
        ]));
        let text = text_of(answer(&summary_request, "s"));
        assert!(text.contains(&resume_tag("k", "B1C1B1", 1)), "{text}");
        let resumed =
            request(json!([{"role": "user", "content": [{"type": "text", "text": text}]}]));
        let next = text_of(answer(&resumed, "s"));
        assert!(next.starts_with("Step 1 of k"), "{next}");
        // Before the compaction, step 0 is answered as usual.
        let first = request(json!([{"role": "user", "content": task}]));
        assert!(text_of(answer(&first, "s")).starts_with("Step 0 of k"));
    }
}
