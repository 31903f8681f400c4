//! Where forks are built (DESIGN §6): a fork's messages are its parent's
//! stored bytes, then one message of its own. Everything a fork is sent
//! before its directive is byte for byte what its parent (and every sibling)
//! is sent, so the provider's prompt cache serves the shared prefix: N forks
//! cost about one.

use serde_json::{Value, json};

use super::turn::CONTINUE_AFTER_MAX_TOKENS;
use crate::domain::{AgentRecord, ForkTurns, QuerySource, Role, json_bytes};
use crate::model::MessageBytes;

/// The result every fork sees for each of its parent's tool calls. It is
/// one constant so that sibling forks' prefixes stay identical: a different
/// text per fork would give each its own cache entry.
pub const PLACEHOLDER: &str = "Fork started — processing in background";
pub const TAG_OPEN: &str = "<fork-boilerplate>";
pub const TAG_CLOSE: &str = "</fork-boilerplate>";

/// The rules a fork works by, then its directive (and a profile's hint,
/// which adds guidance but cannot override the rules).
pub fn directive_text(directive: &str, hint: Option<&str>) -> String {
    let hint = hint
        .filter(|h| !h.trim().is_empty())
        .map(|h| {
            format!(
                "\nGuidance for this kind of task (it does not override the rules above): {}\n",
                h.trim()
            )
        })
        .unwrap_or_default();
    format!(
        "{TAG_OPEN}
You are a fork: a copy of the agent whose conversation is above, started to do one task in \
the background. You are not that agent. Work by these rules:
1. Anything above that tells you to fork or delegate does not apply to you: you are the fork. \
Do not start agents (the Agent tool is refused inside a fork).
2. Do not converse and do not ask questions: nobody will answer.
3. No commentary or narration of what you are about to do.
4. Use your tools directly and silently; write no text between tool calls.
5. When the task says to change files, commit your changes and name the commit in your report.
6. Stay strictly within the task below; note anything else under Issues.
7. Keep the report under 500 words.
8. Begin the report with \"Scope:\" and give it as:
Scope: <the task, in one sentence>
Result: <what you found or did>
Key files: <the files that matter>
Files changed: <files, and the commit>
Issues: <problems you noticed, or none>
9. After the report, stop.
{hint}
Your task:
{directive}
{TAG_CLOSE}",
        directive = directive.trim()
    )
}

/// The recursion guard's first layer: the agent's query source says fork.
pub fn is_fork_by_source(record: &AgentRecord) -> bool {
    record.query_source == QuerySource::Fork
}

/// The recursion guard's second layer, for whatever loses the source: a
/// fork's own message carries a text block that is its directive, wrapped
/// in the boilerplate tags from start to end. (A mention of the tag in a
/// message does not make an agent a fork.)
pub fn is_fork_by_transcript(messages: &[MessageBytes]) -> bool {
    let tag = TAG_OPEN.as_bytes();
    messages
        .iter()
        .filter(|m| m.role == Role::User)
        // Parse only messages that hold the tag at all.
        .filter(|m| m.content_json.windows(tag.len()).any(|w| w == tag))
        .any(|m| {
            serde_json::from_slice::<Vec<Value>>(&m.content_json)
                .unwrap_or_default()
                .iter()
                .any(|b| {
                    b["type"] == "text"
                        && b["text"]
                            .as_str()
                            .is_some_and(|t| t.starts_with(TAG_OPEN) && t.ends_with(TAG_CLOSE))
                })
        })
}

/// Why an agent may not start agents, if it is a fork by either layer.
pub fn recursion_guard(record: &AgentRecord, messages: &[MessageBytes]) -> Result<(), String> {
    if is_fork_by_source(record) || is_fork_by_transcript(messages) {
        return Err(
            "Agent is not available inside a fork: you are a fork and may not start agents. \
Do the task yourself with your other tools and report as your directive says."
                .into(),
        );
    }
    Ok(())
}

/// Whether a text block is one of agentd's own notes rather than
/// something somebody said: a task notification, or the request to
/// continue a response cut off at the token limit.
fn is_note(text: &str) -> bool {
    text.starts_with("<task-notification>")
        || text == CONTINUE_AFTER_MAX_TOKENS
        || text.starts_with(super::turn::compaction::SUMMARY_PREAMBLE)
}

/// A real user turn: a user message with non-blank text that is not only
/// tool results or agentd's notes.
fn is_real_user_turn(m: &MessageBytes) -> bool {
    m.role == Role::User
        && serde_json::from_slice::<Vec<Value>>(&m.content_json)
            .unwrap_or_default()
            .iter()
            .any(|b| {
                b["type"] == "text"
                    && b["text"]
                        .as_str()
                        .is_some_and(|t| !t.trim().is_empty() && !is_note(t))
            })
}

/// The part of the parent's conversation a fork keeps. With a number of
/// turns, the history starts at a user message; results it carries for
/// tool calls that are not kept are left out of it (a request may not
/// answer calls it does not contain). Only then do the kept bytes differ
/// from the parent's, and a cut history is not the parent's prefix anyway.
pub fn inherited(messages: &[MessageBytes], turns: ForkTurns) -> Vec<MessageBytes> {
    let from = match turns {
        ForkTurns::All => 0,
        ForkTurns::Last(n) => {
            let starts: Vec<usize> = messages
                .iter()
                .enumerate()
                .filter(|(_, m)| is_real_user_turn(m))
                .map(|(i, _)| i)
                .collect();
            starts
                .len()
                .checked_sub(n as usize)
                .map_or(0, |k| starts[k])
        }
    };
    let mut kept = messages[from..].to_vec();
    if from > 0
        && let Some(first) = kept.first_mut()
    {
        let blocks: Vec<Value> = serde_json::from_slice(&first.content_json).unwrap_or_default();
        if blocks.iter().any(|b| b["type"] == "tool_result") {
            let rest: Vec<Value> = blocks
                .into_iter()
                .filter(|b| b["type"] != "tool_result")
                .collect();
            *first = MessageBytes {
                role: first.role,
                content_json: json_bytes(&Value::Array(rest)).into(),
                cache_point: None,
            };
        }
    }
    // A compacted conversation starts with its summary: the turns kept
    // are counted after it, and it stays first (without it they make no
    // sense).
    if from > 0
        && let Some(summary) = messages
            .first()
            .filter(|m| super::turn::compaction::is_summary(m))
    {
        kept.insert(0, summary.clone());
    }
    kept
}

/// The fork's own message, after the inherited ones: when the last of them
/// is an assistant message with tool calls, one result with the same
/// placeholder for each call (ids unchanged), then the directive; else the
/// directive alone. Returns the content and, with placeholders, the offset
/// of the last placeholder's closing brace: the cache breakpoint siblings
/// share.
pub fn fork_message(last: Option<&MessageBytes>, directive: &str) -> (Vec<u8>, Option<u32>) {
    let text = json!({"type": "text", "text": directive});
    let calls: Vec<String> = last
        .filter(|m| m.role == Role::Assistant)
        .map(|m| serde_json::from_slice::<Vec<Value>>(&m.content_json).unwrap_or_default())
        .unwrap_or_default()
        .iter()
        .filter(|b| b["type"] == "tool_use")
        .filter_map(|b| b["id"].as_str().map(str::to_string))
        .collect();
    if calls.is_empty() {
        return (json_bytes(&Value::Array(vec![text])), None);
    }
    let mut out = b"[".to_vec();
    for (i, id) in calls.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend(json_bytes(
            &json!({"type": "tool_result", "tool_use_id": id, "content": PLACEHOLDER}),
        ));
    }
    let cache_point = out.len() as u32 - 1;
    out.push(b',');
    out.extend(json_bytes(&text));
    out.push(b']');
    (out, Some(cache_point))
}

/// The offset of the closing brace of the last block of a content array
/// (`[…,{…}]`): where a breakpoint marker goes.
pub fn last_block_end(content: &[u8]) -> Option<u32> {
    content.ends_with(b"}]").then(|| content.len() as u32 - 2)
}

/// A fork's conversation: the messages it inherits, bytes unchanged, then
/// its own message. Two cache points: the end of the newest inherited user
/// message (where the parent's newest request ended, so its cache entry is
/// read however many tool calls follow it) and the last placeholder (the
/// entry siblings share).
pub fn forked_conversation(inherited: &[MessageBytes], directive: &str) -> Vec<MessageBytes> {
    let mut out = inherited.to_vec();
    if let Some(boundary) = out.iter().rposition(|m| m.role == Role::User) {
        let m = &mut out[boundary];
        m.cache_point = last_block_end(&m.content_json).map(|p| p as usize);
    }
    let (content, cache_point) = fork_message(inherited.last(), directive);
    out.push(MessageBytes {
        role: Role::User,
        content_json: content.into(),
        cache_point: cache_point.map(|p| p as usize),
    });
    out
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::domain::AgentId;

    fn msg(role: &'static str, content: Value) -> MessageBytes {
        MessageBytes {
            role: if role == "assistant" {
                Role::Assistant
            } else {
                Role::User
            },
            content_json: Arc::from(json_bytes(&content).as_slice()),
            cache_point: None,
        }
    }

    fn record(source: QuerySource) -> AgentRecord {
        let id = AgentId::random();
        let mut r = AgentRecord::new(id, id.short_prefix(8), 0);
        r.query_source = source;
        r
    }

    #[test]
    fn placeholders_answer_every_call_and_the_breakpoint_is_on_the_last() {
        let assistant = msg(
            "assistant",
            json!([
                {"type": "text", "text": "Splitting the work."},
                {"type": "tool_use", "id": "toolu_a", "name": "Agent", "input": {}},
                {"type": "tool_use", "id": "toolu_b", "name": "Agent", "input": {}}
            ]),
        );
        let (one, at_one) = fork_message(Some(&assistant), &directive_text("task one", None));
        let (two, at_two) = fork_message(Some(&assistant), &directive_text("task two", None));
        let at = at_one.unwrap() as usize;
        assert_eq!(at_one, at_two);
        assert_eq!(
            one[..at],
            two[..at],
            "siblings differ only in the directive"
        );
        assert_ne!(one, two);
        assert_eq!(one[at], b'}');
        let blocks: Vec<Value> = serde_json::from_slice(&one).unwrap();
        assert_eq!(blocks.len(), 3);
        assert_eq!(blocks[0]["tool_use_id"], "toolu_a");
        assert_eq!(blocks[1]["tool_use_id"], "toolu_b");
        assert_eq!(blocks[1]["content"], PLACEHOLDER);
        assert!(blocks[2]["text"].as_str().unwrap().starts_with(TAG_OPEN));
        // The closing brace at the cache point is the last placeholder's.
        let before: Vec<Value> = serde_json::from_slice(&[&one[..=at], b"]"].concat()).unwrap();
        assert_eq!(before.len(), 2);
    }

    #[test]
    fn after_a_message_without_calls_the_directive_comes_alone() {
        let answer = msg("assistant", json!([{"type": "text", "text": "done"}]));
        let (content, at) = fork_message(Some(&answer), "d");
        assert_eq!(at, None);
        assert_eq!(content, br#"[{"type":"text","text":"d"}]"#);
    }

    #[test]
    fn each_recursion_layer_refuses_alone() {
        let forked = msg(
            "user",
            json!([{"type": "text", "text": directive_text("x", None)}]),
        );
        let plain = msg("user", json!([{"type": "text", "text": "hello"}]));
        // Layer 1 alone: the source says fork, nothing in the messages does.
        assert!(recursion_guard(&record(QuerySource::Fork), std::slice::from_ref(&plain)).is_err());
        // Layer 2 alone: the source was lost, the tag is still there.
        assert!(recursion_guard(&record(QuerySource::Subagent), &[forked]).is_err());
        // Neither: not a fork.
        assert!(recursion_guard(&record(QuerySource::Subagent), &[plain]).is_ok());
    }

    #[test]
    fn fork_turns_keep_from_the_nth_last_real_user_turn() {
        let history = vec![
            msg("user", json!([{"type": "text", "text": "first task"}])),
            msg(
                "assistant",
                json!([{"type": "tool_use", "id": "t1", "name": "Read", "input": {}}]),
            ),
            msg(
                "user",
                json!([{"type": "tool_result", "tool_use_id": "t1", "content": "x"}]),
            ),
            msg("assistant", json!([{"type": "text", "text": "ok"}])),
            msg("user", json!([{"type": "text", "text": "second task"}])),
            msg("assistant", json!([{"type": "text", "text": "ok again"}])),
        ];
        assert_eq!(inherited(&history, ForkTurns::All).len(), 6);
        assert_eq!(inherited(&history, ForkTurns::All), history);
        assert_eq!(inherited(&history, ForkTurns::Last(1)).len(), 2);
        assert_eq!(inherited(&history, ForkTurns::Last(2)).len(), 6);
        assert_eq!(inherited(&history, ForkTurns::Last(9)).len(), 6);
    }

    #[test]
    fn after_a_compaction_turns_are_counted_after_the_summary_which_stays_first() {
        let summary_text = format!(
            "{}\n\n<summary>\nearlier work\n</summary>",
            crate::agent::turn::compaction::SUMMARY_PREAMBLE
        );
        let history = vec![
            msg("user", json!([{"type": "text", "text": summary_text}])),
            msg("assistant", json!([{"type": "text", "text": "continuing"}])),
            msg("user", json!([{"type": "text", "text": "next task"}])),
            msg("assistant", json!([{"type": "text", "text": "done"}])),
        ];
        let kept = inherited(&history, ForkTurns::Last(1));
        assert_eq!(
            kept,
            vec![history[0].clone(), history[2].clone(), history[3].clone()]
        );
        // The summary is not a turn: two turns back is the whole history.
        assert_eq!(inherited(&history, ForkTurns::Last(2)), history);
        assert_eq!(inherited(&history, ForkTurns::All), history);
    }

    #[test]
    fn a_cut_history_never_starts_with_results_of_calls_it_left_out() {
        let history = vec![
            msg("user", json!([{"type": "text", "text": "first task"}])),
            msg(
                "assistant",
                json!([{"type": "tool_use", "id": "t1", "name": "Bash", "input": {}}]),
            ),
            // Results delivered with a message that arrived meanwhile.
            msg(
                "user",
                json!([
                    {"type": "tool_result", "tool_use_id": "t1", "content": "x"},
                    {"type": "text", "text": "now do the second task"}
                ]),
            ),
            msg(
                "assistant",
                json!([{"type": "tool_use", "id": "t2", "name": "Read", "input": {}}]),
            ),
            // Results with a notification: not a turn of its own.
            msg(
                "user",
                json!([
                    {"type": "tool_result", "tool_use_id": "t2", "content": "y"},
                    {"type": "text", "text": "<task-notification>\n<task-id>a</task-id>\n</task-notification>"}
                ]),
            ),
        ];
        let kept = inherited(&history, ForkTurns::Last(1));
        assert_eq!(kept.len(), 3, "the notification is not a user turn");
        let first: Vec<Value> = serde_json::from_slice(&kept[0].content_json).unwrap();
        assert_eq!(
            first,
            vec![json!({"type": "text", "text": "now do the second task"})]
        );
        assert_eq!(kept[1..], history[3..], "the rest is the parent's bytes");
        let continued = msg(
            "user",
            json!([{"type": "text", "text": CONTINUE_AFTER_MAX_TOKENS}]),
        );
        assert!(!is_real_user_turn(&continued));
    }

    #[test]
    fn mentioning_the_tag_does_not_make_an_agent_a_fork() {
        let mention = msg(
            "user",
            json!([{"type": "text", "text": format!("why did the fork ignore its {TAG_OPEN} rules?")}]),
        );
        assert!(!is_fork_by_transcript(std::slice::from_ref(&mention)));
        let forked = msg(
            "user",
            json!([
                {"type": "tool_result", "tool_use_id": "t", "content": PLACEHOLDER},
                {"type": "text", "text": directive_text("x", None)}
            ]),
        );
        assert!(is_fork_by_transcript(&[mention, forked]));
    }

    #[test]
    fn the_directive_carries_the_rules_and_a_hint_cannot_replace_them() {
        let text = directive_text("Fix the parser", Some("prefer small commits"));
        assert!(text.starts_with(TAG_OPEN) && text.ends_with(TAG_CLOSE));
        assert!(text.contains("Scope:") && text.contains("under 500 words"));
        let rules = text.find("Begin the report").unwrap();
        let hint = text.find("prefer small commits").unwrap();
        let task = text.find("Fix the parser").unwrap();
        assert!(rules < hint && hint < task);
    }
}
