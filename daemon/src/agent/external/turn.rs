//! One prompt turn of an external agent: what its `session/update`s
//! become in the transcript, each durable before any client can see it.
//!
//! - Message and thought chunks are gathered and written as one assistant
//!   entry (a `text` or `thinking` block) when something else comes, when
//!   the turn ends, or [`FLUSH_AFTER`] after the first chunk not yet
//!   written — so attachers see the answer grow a few times a second.
//! - A tool call is an assistant entry with its `tool_use` block (its ACP
//!   title as the name, its raw input, its kind as `acp_kind`); when it
//!   completes or fails, a user entry with its `tool_result` (the text of
//!   its content) and, beside it, the files its diffs changed.
//! - A plan replaces the agent's plan in its record, durably, then is
//!   published.
//! - A `usage_update`'s cost is added to the record's reported cost,
//!   and its context fill replaces the record's, durably.
//! - A turn that ends with calls still open ends them as errors, so every
//!   `tool_use` has its result.

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::time::Instant;

use super::ExternalDriver;
use crate::acp_client::wire::{CallFields, CallKind, Diff, PromptEnd, Update, UsageReport};
use crate::agent::events::ToolEvent;
use crate::agent::run::Halt;
use crate::domain::{FileChange, Role, StopReason, ToolFileChange, json_bytes};

/// How long chunks wait before they are written anyway.
pub(super) const FLUSH_AFTER: Duration = Duration::from_millis(200);
/// The longest tool title kept as a call's name.
const MAX_TITLE: usize = 200;

/// What one turn has gathered and not yet written.
#[derive(Default)]
pub(super) struct TurnState {
    /// Blocks not yet written, in order: ("text" | "thinking", text).
    pending: Vec<(&'static str, String)>,
    /// When the oldest unwritten chunk came.
    pending_since: Option<Instant>,
    /// Calls announced and not yet ended, by id.
    open: HashMap<String, CallFields>,
    /// The text since the last call: the turn's answer.
    pub(super) answer: String,
}

impl TurnState {
    /// When the pending chunks are due to be written.
    pub(super) fn flush_at(&self) -> Option<Instant> {
        self.pending_since.map(|t| t + FLUSH_AFTER)
    }

    fn push(&mut self, kind: &'static str, text: String) {
        if text.is_empty() {
            return;
        }
        if kind == "text" {
            self.answer.push_str(&text);
        }
        match self.pending.last_mut() {
            Some((k, t)) if *k == kind => t.push_str(&text),
            _ => self.pending.push((kind, text)),
        }
        self.pending_since.get_or_insert_with(Instant::now);
    }
}

impl ExternalDriver {
    /// Applies one update of the turn.
    pub(super) async fn apply_update(
        &mut self,
        turn: &mut TurnState,
        update: Update,
    ) -> Result<(), Halt> {
        match update {
            Update::Text(t) => turn.push("text", t),
            Update::Thought(t) => turn.push("thinking", t),
            Update::Call(fields) => {
                self.flush_chunks(turn, None, None).await?;
                if turn.open.contains_key(&fields.id) {
                    return self.update_call(turn, fields).await;
                }
                self.open_call(turn, fields).await?;
            }
            Update::CallUpdate(fields) => {
                self.flush_chunks(turn, None, None).await?;
                if !turn.open.contains_key(&fields.id) {
                    // Updated before it was announced: announced now.
                    return self.open_call(turn, fields).await;
                }
                self.update_call(turn, fields).await?;
            }
            Update::Plan(plan) => {
                self.flush_chunks(turn, None, None).await?;
                if plan != self.core.record.plan {
                    let before = std::mem::replace(&mut self.core.record.plan, plan);
                    if let Err(halt) = self.core.write_record().await {
                        self.core.record.plan = before;
                        return Err(halt);
                    }
                    self.core.hub.publish_plan(self.core.record.plan.clone());
                }
            }
            Update::Usage(report) => self.record_usage(report).await?,
            Update::UserText => {}
            Update::Ignored(kind) => {
                tracing::debug!(agent = %self.core.record.id, kind, "external agent update not shown");
            }
        }
        Ok(())
    }

    /// Takes the agent's context fill and cumulative cost, durably when
    /// they change the record.
    async fn record_usage(&mut self, report: UsageReport) -> Result<(), Halt> {
        let Some(run) = self.core.record.external.as_mut() else {
            return Ok(());
        };
        let before = (run.cost, run.context);
        if let Some(micros) = report.cost_micros {
            run.cost.get_or_insert_default().observe(micros);
        }
        if report.context.is_some() {
            run.context = report.context;
        }
        if (run.cost, run.context) == before {
            return Ok(());
        }
        if let Err(halt) = self.core.write_record().await {
            if let Some(run) = self.core.record.external.as_mut() {
                (run.cost, run.context) = before;
            }
            return Err(halt);
        }
        Ok(())
    }

    /// Makes sure the call `fields` names has its `tool_use` entry (a
    /// permission request can come before the call's announcement).
    pub(super) async fn ensure_call(
        &mut self,
        turn: &mut TurnState,
        fields: &CallFields,
    ) -> Result<(), Halt> {
        if turn.open.contains_key(&fields.id) {
            return Ok(());
        }
        self.flush_chunks(turn, None, None).await?;
        let announced = CallFields {
            status: None,
            ..fields.clone()
        };
        self.open_call(turn, announced).await
    }

    /// The kind of an open call, as its updates last said.
    pub(super) fn call_kind(turn: &TurnState, id: &str) -> Option<CallKind> {
        turn.open.get(id).and_then(|c| c.kind)
    }

    /// The raw input of an open call, as its updates last said.
    pub(super) fn call_input(turn: &TurnState, id: &str) -> Option<Value> {
        turn.open.get(id).and_then(|c| c.raw_input.clone())
    }

    async fn open_call(&mut self, turn: &mut TurnState, fields: CallFields) -> Result<(), Halt> {
        let name = fields
            .title
            .as_deref()
            .filter(|t| !t.trim().is_empty())
            .map(|t| cut(t.trim(), MAX_TITLE))
            .unwrap_or_else(|| fields.kind.unwrap_or(CallKind::Other).as_str().to_string());
        let mut block = json!({
            "type": "tool_use",
            "id": fields.id,
            "name": name,
            "input": fields.raw_input.clone().unwrap_or_else(|| json!({})),
            "acp_kind": fields.kind.unwrap_or(CallKind::Other).as_str(),
        });
        if !fields.locations.is_empty() {
            block["locations"] = fields
                .locations
                .iter()
                .map(|(p, line)| json!({"path": p, "line": line}))
                .collect();
        }
        self.core
            .write_entry(
                Role::Assistant,
                json_bytes(&json!([block])),
                None,
                Some(StopReason::ToolUse),
                &[],
            )
            .await?;
        self.core.record.tool_uses += 1;
        self.core.hub.publish_tool(ToolEvent {
            tool_use_id: fields.id.clone(),
            name,
            finished: false,
            summary: String::new(),
            is_error: false,
        });
        turn.answer.clear();
        let done = fields.status.is_some_and(|s| s.is_done());
        let id = fields.id.clone();
        turn.open.insert(id.clone(), fields);
        if done {
            self.end_call(turn, &id, None).await?;
        }
        Ok(())
    }

    async fn update_call(&mut self, turn: &mut TurnState, fields: CallFields) -> Result<(), Halt> {
        let id = fields.id.clone();
        let Some(open) = turn.open.get_mut(&id) else {
            return Ok(());
        };
        merge(open, fields);
        if open.status.is_some_and(|s| s.is_done()) {
            self.end_call(turn, &id, None).await?;
        }
        Ok(())
    }

    /// Writes the call's result and closes it; `forced` is the error of a
    /// call the turn ended without finishing.
    async fn end_call(
        &mut self,
        turn: &mut TurnState,
        id: &str,
        forced: Option<&str>,
    ) -> Result<(), Halt> {
        let Some(call) = turn.open.remove(id) else {
            return Ok(());
        };
        let failed =
            forced.is_some() || call.status == Some(crate::acp_client::wire::CallStatus::Failed);
        let mut text = match (forced, call.text.as_deref()) {
            (Some(why), _) => why.to_string(),
            (None, Some(t)) if !t.is_empty() => t.to_string(),
            (None, _) if failed => "failed".to_string(),
            (None, _) => "done".to_string(),
        };
        let workspace = self
            .core
            .record
            .worktree
            .as_ref()
            .filter(|w| w.owned)
            .map_or(self.core.record.cwd.as_path(), |w| w.path.as_path());
        let (changes, outside) = claimed_changes(id, &call.diffs, &self.core.record.cwd, workspace);
        for path in outside {
            text.push_str(&format!(
                "\n[agentd: the agent reported a change to {}, outside its workspace {}; it is not recorded as a change]",
                crate::error::quote(&path.display().to_string()),
                workspace.display()
            ));
        }
        let block =
            json!({"type": "tool_result", "tool_use_id": id, "content": text, "is_error": failed});
        self.core
            .write_results(json_bytes(&json!([block])), changes, &[])
            .await?;
        self.core.hub.publish_tool(ToolEvent {
            tool_use_id: id.to_string(),
            name: call.title.unwrap_or_default(),
            finished: true,
            summary: cut(&text, MAX_TITLE),
            is_error: failed,
        });
        Ok(())
    }

    /// Writes the chunks gathered so far as one assistant entry; at the
    /// turn's end with its stop reason and usage.
    pub(super) async fn flush_chunks(
        &mut self,
        turn: &mut TurnState,
        stop: Option<StopReason>,
        usage: Option<crate::domain::Usage>,
    ) -> Result<(), Halt> {
        turn.pending_since = None;
        if turn.pending.is_empty() {
            return Ok(());
        }
        let blocks: Vec<Value> = std::mem::take(&mut turn.pending)
            .into_iter()
            .map(|(kind, text)| match kind {
                "thinking" => json!({"type": "thinking", "thinking": text, "signature": ""}),
                _ => json!({"type": "text", "text": text}),
            })
            .collect();
        self.core
            .write_entry(
                Role::Assistant,
                json_bytes(&Value::Array(blocks)),
                usage,
                stop,
                &[],
            )
            .await
            .map(drop)
    }

    /// Ends the turn: what is gathered is written with the turn's stop
    /// reason and usage, and calls left open end as errors with `why`.
    pub(super) async fn close_turn(
        &mut self,
        turn: &mut TurnState,
        end: Option<&PromptEnd>,
        why: &str,
    ) -> Result<(), Halt> {
        let stop = end.map(|e| stop_reason(&e.stop_reason));
        let usage = end.and_then(|e| e.usage);
        if let Some(u) = &usage {
            self.core.record.usage.add(u);
        }
        self.flush_chunks(turn, stop, usage).await?;
        let open: Vec<String> = turn.open.keys().cloned().collect();
        for id in open {
            self.end_call(turn, &id, Some(why)).await?;
        }
        Ok(())
    }
}

/// `text` cut to `max` characters (marked when cut).
fn cut(text: &str, max: usize) -> String {
    let mut chars = text.chars();
    let head: String = chars.by_ref().take(max).collect();
    if chars.next().is_some() {
        format!("{head}…")
    } else {
        head
    }
}

/// Later fields replace earlier ones; content given replaces content.
fn merge(open: &mut CallFields, update: CallFields) {
    if update.title.is_some() {
        open.title = update.title;
    }
    if update.kind.is_some() {
        open.kind = update.kind;
    }
    if update.status.is_some() {
        open.status = update.status;
    }
    if update.raw_input.is_some() {
        open.raw_input = update.raw_input;
    }
    if update.text.is_some() {
        open.text = update.text;
    }
    if !update.diffs.is_empty() {
        open.diffs = update.diffs;
    }
    if !update.locations.is_empty() {
        open.locations = update.locations;
    }
}

/// A diff as the file change clients show; a relative path is the agent's
/// directory's.
/// The diffs a call reported, as kept: those whose path (made absolute
/// against `cwd`, `.` and `..` taken by name) lies in `workspace`, as
/// reported changes; the paths of the others, which are not kept — an
/// external agent's word that it changed `/etc/hostname` is not a change
/// agentd saw, and is never shown as one.
fn claimed_changes(
    id: &str,
    diffs: &[Diff],
    cwd: &Path,
    workspace: &Path,
) -> (Vec<ToolFileChange>, Vec<PathBuf>) {
    let mut kept = Vec::new();
    let mut outside = Vec::new();
    for d in diffs {
        let path = lexically_absolute(cwd, &d.path);
        if path.starts_with(workspace) {
            kept.push(ToolFileChange {
                tool_use_id: id.to_string(),
                change: file_change(d, path),
                reported: true,
            });
        } else {
            outside.push(path);
        }
    }
    (kept, outside)
}

/// `given` made absolute against `cwd`, with `.` and `..` resolved by name.
fn lexically_absolute(cwd: &Path, given: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in cwd.join(given).components() {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}

fn file_change(diff: &Diff, path: PathBuf) -> FileChange {
    let before = diff
        .old_text
        .as_deref()
        .map(|t| (t.as_bytes(), t.len() as u64));
    FileChange::between(path, before, &diff.new_text)
}

/// ACP's stop reason as the transcript keeps it.
fn stop_reason(acp: &str) -> StopReason {
    match acp {
        "end_turn" => StopReason::EndTurn,
        "max_tokens" => StopReason::MaxTokens,
        "refusal" => StopReason::Refusal,
        other => StopReason::Other(crate::error::quote(other).to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_of_a_kind_are_joined_and_the_answer_is_the_text() {
        let mut t = TurnState::default();
        assert_eq!(t.flush_at(), None);
        t.push("thinking", "hm".into());
        t.push("text", "Hel".into());
        t.push("text", "lo".into());
        t.push("text", String::new());
        assert_eq!(
            t.pending,
            vec![
                ("thinking", "hm".to_string()),
                ("text", "Hello".to_string())
            ]
        );
        assert_eq!(t.answer, "Hello");
        assert!(t.flush_at().is_some());
    }

    #[test]
    fn updates_merge_and_diffs_become_file_changes() {
        let mut open = CallFields {
            id: "t".into(),
            title: Some("Edit".into()),
            ..CallFields::default()
        };
        merge(
            &mut open,
            CallFields {
                id: "t".into(),
                raw_input: Some(json!({"a": 1})),
                text: Some("ok".into()),
                ..CallFields::default()
            },
        );
        assert_eq!(open.title.as_deref(), Some("Edit"));
        assert_eq!(open.raw_input, Some(json!({"a": 1})));
        let diff = |path: &str| Diff {
            path: path.into(),
            old_text: None,
            new_text: "x\n".into(),
        };
        let (kept, outside) = claimed_changes(
            "t",
            &[
                diff("src/a.rs"),
                diff("/victim/file.txt"),
                diff("proj/../../../../etc/hostname"),
                diff("/w/sub/../b.rs"),
            ],
            Path::new("/w"),
            Path::new("/w"),
        );
        assert_eq!(kept.len(), 2);
        assert!(kept.iter().all(|c| c.reported));
        assert_eq!(kept[0].change.path, Path::new("/w/src/a.rs"));
        assert_eq!(kept[1].change.path, Path::new("/w/b.rs"));
        assert_eq!(kept[0].change.before, crate::domain::Before::Absent);
        assert_eq!(
            outside,
            vec![
                PathBuf::from("/victim/file.txt"),
                PathBuf::from("/etc/hostname")
            ]
        );
        assert_eq!(
            stop_reason("max_turn_requests").as_str(),
            "max_turn_requests"
        );
        assert_eq!(stop_reason("end_turn"), StopReason::EndTurn);
    }
}
