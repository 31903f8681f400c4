//! How agents and transcripts look on the terminal and as JSON.

use std::io::Write;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use agentd_shared::proto as pb;
use serde::Serialize;
use serde_json::Value;
use serde_json::value::RawValue;

/// Prints `value` as one line of JSON, in one write. Exact, and safe on a
/// terminal: what JSON leaves raw that a terminal acts on (C1, bidi
/// overrides) is written escaped ([`agentd_shared::visible::json`]).
pub fn print_json<T: Serialize + ?Sized>(value: &T) {
    let text = serde_json::to_string(value).unwrap_or_default();
    write_json_line(&text);
}

/// Writes `json` text and a newline to stdout, made terminal-safe.
pub fn write_json_line(json: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(agentd_shared::visible::json(json).as_bytes());
    let _ = out.write_all(b"\n");
    let _ = out.flush();
}

/// The stored spelling of a resume-blocked reason; None when not blocked.
pub fn resume_blocked_name(reason: i32) -> Option<&'static str> {
    use pb::ResumeBlockedReason as R;
    match R::try_from(reason).unwrap_or_default() {
        R::Unspecified => None,
        R::TranscriptMissing => Some("transcript_missing"),
        R::WorktreeMissing => Some("worktree_missing"),
        R::CwdMissing => Some("cwd_missing"),
        R::ModelUnavailable => Some("model_unavailable"),
        R::ProfileInvalid => Some("profile_invalid"),
        R::ForkContextMissing => Some("fork_context_missing"),
        R::AgentTypeUnknown => Some("agent_type_unknown"),
        R::ExternalAgentCannotResume => Some("external_agent_cannot_resume"),
        R::BudgetExhausted => Some("budget_exhausted"),
    }
}

/// The Anthropic spelling of a stop reason.
pub fn stop_reason_name(reason: i32) -> Option<&'static str> {
    use pb::StopReason as S;
    match S::try_from(reason).unwrap_or_default() {
        S::Unspecified => None,
        S::EndTurn => Some("end_turn"),
        S::ToolUse => Some("tool_use"),
        S::MaxTokens => Some("max_tokens"),
        S::StopSequence => Some("stop_sequence"),
        S::PauseTurn => Some("pause_turn"),
        S::Refusal => Some("refusal"),
        S::ContextWindowExceeded => Some("model_context_window_exceeded"),
        S::Other => Some("other"),
    }
}

pub fn release_reason_name(reason: i32) -> &'static str {
    match pb::ReleaseReason::try_from(reason).unwrap_or_default() {
        pb::ReleaseReason::Unspecified => "unknown",
        pb::ReleaseReason::Request => "request",
        pb::ReleaseReason::Auto => "auto",
    }
}

pub fn permission_mode_name(mode: i32) -> &'static str {
    match pb::PermissionMode::try_from(mode).unwrap_or_default() {
        pb::PermissionMode::Unspecified => "default",
        pb::PermissionMode::Default => "default",
        pb::PermissionMode::AcceptEdits => "accept-edits",
        pb::PermissionMode::Plan => "plan",
        pb::PermissionMode::Bypass => "bypass",
    }
}

pub fn system_time(ts: Option<&prost_types::Timestamp>) -> SystemTime {
    match ts {
        Some(t) if t.seconds >= 0 => {
            UNIX_EPOCH + Duration::new(t.seconds as u64, t.nanos.max(0) as u32)
        }
        _ => UNIX_EPOCH,
    }
}

pub fn rfc3339(ts: Option<&prost_types::Timestamp>) -> String {
    humantime::format_rfc3339_millis(system_time(ts)).to_string()
}

fn non_empty(s: &str) -> Option<&str> {
    if s.is_empty() { None } else { Some(s) }
}

/// Token usage as printed in JSON.
#[derive(Debug, Serialize)]
pub struct UsageJson {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cache_read_input_tokens: u64,
    pub cache_creation_input_tokens: u64,
}

impl UsageJson {
    pub fn of(u: Option<&pb::Usage>) -> Self {
        let u = u.copied().unwrap_or_default();
        UsageJson {
            input_tokens: u.input_tokens,
            output_tokens: u.output_tokens,
            cache_read_input_tokens: u.cache_read_input_tokens,
            cache_creation_input_tokens: u.cache_creation_input_tokens,
        }
    }
}

/// The JSON of an agent, as `list --json` and `show --json` print it.
/// Absent optional values are `null`. Serialized straight from the wire
/// type: building `Value` maps for a thousand agents was most of `list`'s time.
#[derive(Debug, Serialize)]
pub struct AgentJson<'a> {
    pub id: &'a str,
    pub short_id: &'a str,
    pub name: Option<&'a str>,
    pub description: &'a str,
    pub subagent_type: Option<&'a str>,
    pub status: &'static str,
    pub background: bool,
    pub parent_id: Option<&'a str>,
    pub model: &'a str,
    pub cwd: &'a str,
    pub created_at: String,
    pub updated_at: String,
    pub turns: u32,
    pub tool_uses: u32,
    pub max_turns: u32,
    pub permission_mode: &'static str,
    pub usage: UsageJson,
    pub can_message: bool,
    pub resume_blocked_reason: Option<&'static str>,
    pub resume_blocked_detail: Option<&'a str>,
    pub result: Option<&'a str>,
    pub error: Option<&'a str>,
    /// What a `waiting` agent waits for.
    pub waiting_for: Option<&'a str>,
    pub transcript_len: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub worktree: Option<super::worktree::AgentWorktreeJson<'a>>,
    pub sandbox: &'static str,
    pub no_network: bool,
    /// "proxy", "full" or "none".
    pub network: &'static str,
    /// The agent's plan; empty without one.
    pub plan: Vec<super::plan::PlanItemJson<'a>>,
    /// Its own budget and its family's spend; absent without one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub budget: Option<BudgetJson<'a>>,
}

/// `Agent.budget` as JSON: 0 is no cap of the kind.
#[derive(Debug, Serialize)]
pub struct BudgetJson<'a> {
    pub usd: f64,
    pub tokens: u64,
    pub spent_usd: f64,
    pub spent_tokens: u64,
    #[serde(skip_serializing_if = "str::is_empty")]
    pub unmeasured: &'a str,
}

impl<'a> BudgetJson<'a> {
    pub fn of(b: &'a pb::AgentBudget) -> Self {
        BudgetJson {
            usd: b.usd,
            tokens: b.tokens,
            spent_usd: b.spent_usd,
            spent_tokens: b.spent_tokens,
            unmeasured: &b.unmeasured,
        }
    }
}

impl<'a> AgentJson<'a> {
    pub fn of(a: &'a pb::Agent) -> Self {
        AgentJson {
            id: &a.id,
            short_id: &a.short_id,
            name: non_empty(&a.name),
            description: &a.description,
            subagent_type: non_empty(&a.subagent_type),
            status: super::status::name(a.status),
            background: a.background,
            parent_id: non_empty(&a.parent_id),
            model: &a.model,
            cwd: &a.cwd,
            created_at: rfc3339(a.created_at.as_ref()),
            updated_at: rfc3339(a.updated_at.as_ref()),
            turns: a.turns,
            tool_uses: a.tool_uses,
            max_turns: a.max_turns,
            permission_mode: permission_mode_name(a.permission_mode),
            usage: UsageJson::of(a.usage.as_ref()),
            can_message: a.can_message,
            resume_blocked_reason: resume_blocked_name(a.resume_blocked_reason),
            resume_blocked_detail: non_empty(&a.resume_blocked_detail),
            result: non_empty(&a.result),
            error: non_empty(&a.error),
            waiting_for: non_empty(&a.waiting_for),
            transcript_len: a.transcript_len,
            worktree: a
                .worktree
                .as_ref()
                .map(super::worktree::AgentWorktreeJson::of),
            sandbox: match pb::SandboxMode::try_from(a.sandbox).unwrap_or_default() {
                pb::SandboxMode::WorkspaceWrite => "workspace-write",
                pb::SandboxMode::ReadOnly => "read-only",
                pb::SandboxMode::Off => "off",
                pb::SandboxMode::Unspecified => "unknown",
            },
            no_network: a.no_network,
            network: super::network::mode_name(a.network),
            plan: super::plan::PlanItemJson::all(&a.plan),
            budget: a.budget.as_ref().map(BudgetJson::of),
        }
    }
}

pub fn role_name(role: i32) -> &'static str {
    match pb::Role::try_from(role).unwrap_or_default() {
        pb::Role::Unspecified => "unknown",
        pb::Role::User => "user",
        pb::Role::Assistant => "assistant",
        pb::Role::System => "system",
    }
}

/// Content blocks of an entry; bytes that are not JSON are shown as a string
/// rather than dropped.
pub fn content(e: &pb::TranscriptEntry) -> Value {
    serde_json::from_slice(&e.content_json)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&e.content_json).into_owned()))
}

/// The JSON of a transcript entry, as `log --json` prints it. The content
/// is embedded as stored (it is JSON already), not re-encoded.
#[derive(Debug, Serialize)]
pub struct EntryJson<'a> {
    pub seq: u64,
    pub role: &'static str,
    pub content: Box<RawValue>,
    pub created_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<UsageJson>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<&'static str>,
    /// Set on a compaction boundary.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub compact_boundary: Option<CompactBoundaryJson>,
    /// What the file tool calls among the results changed.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub file_changes: Vec<super::change::FileChangeJson<'a>>,
    /// What permission rules decided of the calls among the results.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rule_decisions: Vec<super::rule_decision::RuleDecisionJson<'a>>,
}

#[derive(Debug, Serialize)]
pub struct CompactBoundaryJson {
    pub trigger: &'static str,
    pub summary: String,
    pub tokens_before: u64,
    pub tokens_after: u64,
    pub covers_through_seq: u64,
}

impl CompactBoundaryJson {
    pub fn of(b: &pb::CompactBoundary) -> Self {
        CompactBoundaryJson {
            trigger: compact_trigger_name(b.trigger),
            summary: b.summary.clone(),
            tokens_before: b.tokens_before,
            tokens_after: b.tokens_after,
            covers_through_seq: b.covers_through_seq,
        }
    }
}

pub fn compact_trigger_name(trigger: i32) -> &'static str {
    match pb::CompactTrigger::try_from(trigger).unwrap_or_default() {
        pb::CompactTrigger::Unspecified => "unknown",
        pb::CompactTrigger::Auto => "auto",
        pb::CompactTrigger::Manual => "manual",
        pb::CompactTrigger::Overflow => "overflow",
    }
}

impl<'a> EntryJson<'a> {
    pub fn of(e: &'a pb::TranscriptEntry) -> Self {
        let content = std::str::from_utf8(&e.content_json)
            .ok()
            .and_then(|s| RawValue::from_string(s.to_string()).ok())
            .or_else(|| serde_json::value::to_raw_value(&content(e)).ok())
            .unwrap_or_else(|| RawValue::from_string("null".into()).unwrap_or_default());
        let assistant = e.role == pb::Role::Assistant as i32 || e.compact_boundary.is_some();
        EntryJson {
            seq: e.seq,
            role: role_name(e.role),
            content,
            created_at: rfc3339(e.created_at.as_ref()),
            usage: assistant.then(|| UsageJson::of(e.usage.as_ref())),
            stop_reason: stop_reason_name(e.stop_reason),
            compact_boundary: e.compact_boundary.as_ref().map(CompactBoundaryJson::of),
            file_changes: e
                .file_changes
                .iter()
                .map(super::change::FileChangeJson::of)
                .collect(),
            rule_decisions: e
                .rule_decisions
                .iter()
                .map(super::rule_decision::RuleDecisionJson::of)
                .collect(),
        }
    }
}

/// "42s", "5m", "3h", "2d".
pub fn age(since: SystemTime, now: SystemTime) -> String {
    let secs = now.duration_since(since).unwrap_or_default().as_secs();
    match secs {
        0..60 => format!("{secs}s"),
        60..3600 => format!("{}m", secs / 60),
        3600..86400 => format!("{}h", secs / 3600),
        _ => format!("{}d", secs / 86400),
    }
}

/// Cuts `s` to `max` characters, marking the cut.
pub fn clip(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// A table cell of anyone's text (a name, a description, a model): made
/// visible in one line, then cut to `max` characters, marking the cut.
pub fn cell(s: &str, max: usize) -> String {
    clip(&agentd_shared::visible::line(s), max)
}

/// Prints rows as left-aligned columns; the last column is not padded.
pub fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let width = super::color::visible_width;
    let mut widths: Vec<usize> = header.iter().map(|h| width(h)).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(width(cell));
        }
    }
    let mut out = String::new();
    let mut line = |cells: Vec<&str>| {
        let last = cells.len().saturating_sub(1);
        for (i, cell) in cells.iter().enumerate() {
            if i == last {
                out.push_str(cell);
            } else {
                out.push_str(cell);
                out.push_str(&" ".repeat(widths[i] - width(cell) + 2));
            }
        }
        out.push('\n');
    };
    line(header.to_vec());
    for row in rows {
        line(row.iter().map(String::as_str).collect());
    }
    out
}

/// An agent's budget against its family's spend: "$0.0123 of $0.50 spent
/// (and 1200 of 5000 tokens)", or why the spend cannot be measured.
pub fn budget_line(b: &pb::AgentBudget) -> String {
    let mut parts = Vec::new();
    if b.usd > 0.0 {
        parts.push(format!("${:.4} of ${:.2} spent", b.spent_usd, b.usd));
    }
    if b.tokens > 0 {
        parts.push(format!("{} of {} tokens", b.spent_tokens, b.tokens));
    }
    let mut line = format!("budget: {}", parts.join(", "));
    if !b.unmeasured.is_empty() {
        line.push_str(&format!(
            " — not measured: {}",
            agentd_shared::visible::line(&b.unmeasured)
        ));
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_pick_the_largest_unit() {
        let now = UNIX_EPOCH + Duration::from_secs(1_000_000);
        let ago = |s| now - Duration::from_secs(s);
        assert_eq!(age(ago(5), now), "5s");
        assert_eq!(age(ago(125), now), "2m");
        assert_eq!(age(ago(7200), now), "2h");
        assert_eq!(age(ago(3 * 86400), now), "3d");
    }

    #[test]
    fn tables_align_columns() {
        let t = table(&["ID", "NAME"], &[vec!["abc".into(), "x".into()]]);
        assert_eq!(t, "ID   NAME\nabc  x\n");
    }

    #[test]
    fn agent_json_uses_null_for_absent_fields() {
        let a = pb::Agent {
            id: "i".into(),
            status: pb::AgentStatus::Completed as i32,
            ..Default::default()
        };
        let v = serde_json::to_value(AgentJson::of(&a)).unwrap();
        assert_eq!(v["status"], "completed");
        assert!(v["parent_id"].is_null());
        assert_eq!(v["usage"]["cache_read_input_tokens"], 0);
        assert_eq!(v["created_at"], "1970-01-01T00:00:00.000Z");
    }

    #[test]
    fn a_budget_line_says_spend_against_each_cap() {
        let b = pb::AgentBudget {
            usd: 0.5,
            tokens: 0,
            spent_usd: 0.0123,
            spent_tokens: 99,
            unmeasured: String::new(),
        };
        assert_eq!(budget_line(&b), "budget: $0.0123 of $0.50 spent");
        let b = pb::AgentBudget {
            tokens: 5000,
            unmeasured: "no price for x\u{1b}".into(),
            ..b
        };
        let line = budget_line(&b);
        assert!(
            line.contains("99 of 5000 tokens") && !line.contains('\u{1b}'),
            "{line}"
        );
    }
}
