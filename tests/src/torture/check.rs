//! The torture run's invariants, checked through the API after every
//! restart and at the end (DESIGN §3, §5, §12).

use std::collections::{HashMap, HashSet};
use std::path::Path;

use agentd_shared::proto as pb;
use serde_json::Value;

use super::ledger::{Ledger, Paused, Sent};
use super::model::{self, SIDE_LOG};
use crate::ApiClient;

/// A transcript as the daemon serves it.
pub struct Transcript {
    pub entries: Vec<pb::TranscriptEntry>,
    /// Each entry's content, parsed.
    pub content: Vec<Value>,
}

impl Transcript {
    /// Text of the user entries' text blocks (messages, notifications).
    fn user_texts(&self) -> impl Iterator<Item = &str> {
        self.entries
            .iter()
            .zip(&self.content)
            .filter(|(e, _)| e.role == pb::Role::User as i32)
            .flat_map(|(_, c)| c.as_array().into_iter().flatten())
            .filter(|b| b["type"] == "text")
            .filter_map(|b| b["text"].as_str())
    }

    fn blocks(&self) -> impl Iterator<Item = &Value> {
        self.content
            .iter()
            .flat_map(|c| c.as_array().into_iter().flatten())
    }

    /// The task notifications about `child` this agent received, whole.
    pub fn notifications_about(&self, child: &str) -> Vec<&str> {
        let id = format!("<task-id>{child}</task-id>");
        self.user_texts()
            .flat_map(|t| t.split_inclusive("</task-notification>"))
            .filter(|n| n.contains(&id))
            .collect()
    }

    /// The entry holding the agent's own task (a fork's transcript starts
    /// with its parent's), with the task's key and plan.
    pub fn task(&self) -> Option<(usize, String, String)> {
        self.entries
            .iter()
            .zip(&self.content)
            .enumerate()
            .rev()
            .filter(|(_, (e, _))| e.role == pb::Role::User as i32)
            .find_map(|(i, (_, c))| {
                c.as_array()?
                    .iter()
                    .filter(|b| b["type"] == "text")
                    .filter_map(|b| b["text"].as_str())
                    .find_map(model::find_tag)
                    .map(|(key, plan)| (i, key, plan))
            })
    }

    /// Index of the agent's own first entry.
    fn own_start(&self) -> usize {
        self.task().map_or(0, |(i, _, _)| i)
    }

    /// Runs that ended: the agent's own assistant entries that end the
    /// model's turn.
    pub fn ended_runs(&self) -> usize {
        self.entries[self.own_start()..]
            .iter()
            .filter(|e| e.stop_reason == pb::StopReason::EndTurn as i32)
            .count()
    }

    /// How many tool results' text holds `needle`.
    pub fn count_in_tool_results(&self, needle: &str) -> usize {
        self.blocks()
            .filter(|b| b["type"] == "tool_result")
            .filter(|b| crate::mock::text_of(&b["content"]).contains(needle))
            .count()
    }

    pub fn count_in_user_texts(&self, needle: &str) -> usize {
        self.user_texts().map(|t| t.matches(needle).count()).sum()
    }
}

pub async fn transcript(client: &mut ApiClient, id: &str) -> Result<Transcript, String> {
    let mut entries = Vec::new();
    let mut from_seq = 0;
    loop {
        let page = client
            .get_transcript(pb::GetTranscriptRequest {
                id: id.to_string(),
                from_seq,
                limit: 5000,
            })
            .await
            .map_err(|s| format!("agent {id}: GetTranscript: {}", s.message()))?
            .into_inner();
        entries.extend(page.entries);
        if page.end {
            break;
        }
        from_seq = page.next_seq;
    }
    let mut content = Vec::with_capacity(entries.len());
    for e in &entries {
        content.push(
            serde_json::from_slice(&e.content_json)
                .map_err(|err| format!("agent {id}: entry {} is not JSON: {err}", e.seq))?,
        );
    }
    Ok(Transcript { entries, content })
}

/// Sequence numbers contiguous; no tool call or tool result twice; every
/// result answers an earlier call; every entry a client was shown is there,
/// byte for byte.
pub fn structure(id: &str, t: &Transcript, ledger: &Ledger, violations: &mut Vec<String>) {
    for (i, e) in t.entries.iter().enumerate() {
        if e.seq != i as u64 {
            violations.push(format!("agent {id}: entry {i} has seq {}", e.seq));
            break;
        }
    }
    let mut calls = HashSet::new();
    let mut results = HashSet::new();
    for b in t.blocks() {
        if b["type"] == "tool_use" {
            let call = b["id"].as_str().unwrap_or("").to_string();
            if !calls.insert(call.clone()) {
                violations.push(format!("agent {id}: tool call {call} appears twice"));
            }
        } else if b["type"] == "tool_result" {
            let call = b["tool_use_id"].as_str().unwrap_or("").to_string();
            if !calls.contains(&call) {
                violations.push(format!("agent {id}: result for unknown call {call}"));
            }
            if !results.insert(call.clone()) {
                violations.push(format!("agent {id}: call {call} answered twice"));
            }
        }
    }
    if let Some(shown) = ledger.shown.get(id) {
        for (seq, s) in shown {
            match t.entries.get(*seq as usize) {
                None => violations.push(format!(
                    "agent {id}: entry {seq} a client was shown is missing (transcript has {})",
                    t.entries.len()
                )),
                Some(e) if e.role != s.role || e.content_json != s.content => violations.push(
                    format!("agent {id}: entry {seq} differs from what a client was shown"),
                ),
                Some(_) => {}
            }
        }
    }
}

/// The agent's answers are its plan's, in order, each once (a repeated or
/// lost answer shifts them), and a completed agent got through its first
/// run.
pub fn plan_followed(id: &str, t: &Transcript, status: i32, violations: &mut Vec<String>) {
    let Some((start, key, plan)) = t.task() else {
        violations.push(format!("agent {id}: no task in its transcript"));
        return;
    };
    let answers: Vec<&Value> = t.entries[start..]
        .iter()
        .zip(&t.content[start..])
        .filter(|(e, _)| e.role == pb::Role::Assistant as i32)
        .map(|(_, c)| c)
        .collect();
    for (step, answer) in answers.iter().enumerate() {
        let text = answer[0]["text"].as_str().unwrap_or("");
        let Some(expected) = model::expected_text(&key, &plan, step) else {
            violations.push(format!("agent {id}: plan {plan} does not parse"));
            return;
        };
        if !text.starts_with(&expected) {
            let shown: String = text.chars().take(60).collect();
            violations.push(format!(
                "agent {id} ({key}): answer {step} is {shown:?}, the plan's is {expected:?}"
            ));
            return;
        }
    }
    let needed = model::answers_to_finish(&plan).unwrap_or(0);
    if status == pb::AgentStatus::Completed as i32 && answers.len() < needed {
        violations.push(format!(
            "agent {id} ({key}): completed after {} of its plan's {needed} answers",
            answers.len()
        ));
    }
}

/// Compactions (DESIGN §17): each boundary of the agent's own covers the
/// conversation before it (no message between what it covers and it);
/// never two for one step of the plan (a compaction a kill cut short is
/// redone, not doubled); a completed agent made every one its plan asks
/// for. Returns how many it made and how many its plan asks for.
pub fn compactions(
    id: &str,
    t: &Transcript,
    status: i32,
    violations: &mut Vec<String>,
) -> (usize, usize) {
    let Some((start, key, plan)) = t.task() else {
        return (0, 0);
    };
    let mut made = 0;
    let mut last_boundary: Option<usize> = None;
    for (i, e) in t.entries.iter().enumerate().skip(start) {
        let Some(b) = &e.compact_boundary else {
            continue;
        };
        made += 1;
        let covered = b.covers_through_seq as usize;
        let talk_between = t.entries.get(covered + 1..i).is_none_or(|between| {
            between
                .iter()
                .any(|x| x.role != pb::Role::System as i32 || x.compact_boundary.is_some())
        });
        if covered >= i || talk_between {
            violations.push(format!(
                "agent {id} ({key}): boundary {} covers through {covered}, not the conversation before it",
                e.seq
            ));
        }
        let answered_since = last_boundary.is_none_or(|prev| {
            t.entries[prev + 1..i]
                .iter()
                .any(|x| x.role == pb::Role::Assistant as i32)
        });
        if !answered_since {
            violations.push(format!(
                "agent {id} ({key}): boundary {} repeats the one before it",
                e.seq
            ));
        }
        last_boundary = Some(i);
    }
    let asked = model::compactions_in(&plan).unwrap_or(0);
    if made > asked || (status == pb::AgentStatus::Completed as i32 && made < asked) {
        violations.push(format!(
            "agent {id} ({key}): {made} compactions, its plan {plan} asks for {asked}"
        ));
    }
    (made, asked)
}

/// An acknowledged pause holds across restarts: the agent takes no model
/// turn after it unless it is given input. Input is a message sent after
/// the pause, or a notification (a user entry): the entry after the
/// length the pause was acknowledged at, if any, is such a user entry, or
/// a message was sent to the agent after the pause (a revival a kill
/// interrupted resumes with the model's turn; the message follows at the
/// next boundary). With the agent's final `status`: one never given input
/// since is still paused.
pub fn pause_held(
    id: &str,
    t: &Transcript,
    pauses: &[Paused],
    sent: &[Sent],
    status: Option<i32>,
    violations: &mut Vec<String>,
) {
    for p in pauses {
        let messaged = sent
            .get(p.sent_before..)
            .unwrap_or_default()
            .iter()
            .any(|s| s.agent == id);
        match t.entries.get(p.at as usize) {
            Some(e) if e.role != pb::Role::User as i32 && !messaged => {
                let around: Vec<String> = (p.at.saturating_sub(2)..=p.at)
                    .filter_map(|i| Some((i, t.entries.get(i as usize)?)))
                    .map(|(i, e)| {
                        let text = String::from_utf8_lossy(&e.content_json);
                        format!(
                            "{i} {}: {}",
                            e.role,
                            text.chars().take(100).collect::<String>()
                        )
                    })
                    .collect();
                violations.push(format!(
                    "agent {id}: entry {}, after a pause acknowledged at that length, is the model's, given no input; entries {around:?}",
                    p.at
                ))
            }
            Some(_) => {}
            None => {
                if let Some(s) =
                    status.filter(|s| *s != pb::AgentStatus::Paused as i32 && !messaged)
                {
                    violations.push(format!(
                        "agent {id}: paused at length {} and given no input since, it ended {}",
                        p.at,
                        pb::AgentStatus::try_from(s)
                            .map(|s| s.as_str_name())
                            .unwrap_or("?")
                    ));
                }
            }
        }
    }
}

/// Every tool call of a settled agent has its result.
pub fn all_answered(id: &str, t: &Transcript, violations: &mut Vec<String>) {
    let results: HashSet<&str> = t
        .blocks()
        .filter(|b| b["type"] == "tool_result")
        .filter_map(|b| b["tool_use_id"].as_str())
        .collect();
    for b in t.blocks().filter(|b| b["type"] == "tool_use") {
        let call = b["id"].as_str().unwrap_or("");
        if !results.contains(call) {
            violations.push(format!("agent {id}: settled with call {call} unanswered"));
        }
    }
}

/// The Bash calls whose results say they ran (their markers must be on
/// disk once), and every marker of a call (none may be there twice).
pub fn bash_markers(t: &Transcript) -> (Vec<String>, Vec<String>) {
    let own = &t.content[t.own_start()..];
    let blocks = || own.iter().flat_map(|c| c.as_array().into_iter().flatten());
    let mut ok_results = HashSet::new();
    for b in blocks().filter(|b| b["type"] == "tool_result") {
        if b["is_error"] != Value::Bool(true) {
            ok_results.insert(b["tool_use_id"].as_str().unwrap_or("").to_string());
        }
    }
    let (mut ran, mut all) = (Vec::new(), Vec::new());
    for b in t
        .blocks()
        .filter(|b| b["type"] == "tool_use" && b["name"] == "Bash")
    {
        let command = b["input"]["command"].as_str().unwrap_or("");
        let Some(marker) = command
            .strip_prefix("echo ")
            .and_then(|c| c.split_once(" >> "))
            .map(|(m, _)| m.to_string())
        else {
            continue;
        };
        if ok_results.contains(b["id"].as_str().unwrap_or("")) {
            ran.push(marker.clone());
        }
        all.push(marker);
    }
    (ran, all)
}

/// Marker lines in the side logs under `dirs`: line → times written. A
/// directory given with a key counts only lines of that agent and its
/// descendants (`KEY.…`): a worktree made after another agent's tree was
/// merged holds that agent's lines too, as the merge carried them.
pub fn side_effects(dirs: &[(&Path, Option<&str>)]) -> HashMap<String, usize> {
    let mut counts = HashMap::new();
    for (dir, key) in dirs {
        if let Ok(text) = std::fs::read_to_string(dir.join(SIDE_LOG)) {
            for line in text.lines() {
                let own = key.is_none_or(|k| {
                    line.strip_prefix(k)
                        .is_some_and(|rest| rest.starts_with('.'))
                });
                if own {
                    *counts.entry(line.to_string()).or_insert(0) += 1;
                }
            }
        }
    }
    counts
}

/// Statuses an agent rests in: nothing will happen to it unprompted.
pub fn settled(status: i32) -> bool {
    [
        pb::AgentStatus::Completed,
        pb::AgentStatus::Failed,
        pb::AgentStatus::Cancelled,
        pb::AgentStatus::Paused,
    ]
    .iter()
    .any(|s| *s as i32 == status)
}

pub fn ended(status: i32) -> bool {
    [
        pb::AgentStatus::Completed,
        pb::AgentStatus::Failed,
        pb::AgentStatus::Cancelled,
    ]
    .iter()
    .any(|s| *s as i32 == status)
}
