//! Mapping between the daemon's domain types and the v1 wire types. This is
//! the only place that knows both. Enum values in requests are checked
//! here: an unknown number is INVALID_ARGUMENT, never a default.

mod checkpoints;
mod compact;
mod file_change;
pub mod mcp;
pub mod network;
mod plan;
mod requests;
pub mod rules;
mod usage;

pub use checkpoints::{checkpoints, rewind_scope_from_wire};
pub use compact::boundary;
pub use plan::plan_update;
pub use requests::{budget_from_wire, fork_request, new_agent};
pub use usage::{budget, usage, usage_report};

use agentd_shared::proto as pb;

use crate::agent::events::{Lifecycle, LifecycleKind, TaskNotice};
use crate::agent::events::{RetryNotice, StatusSnapshot, ToolEvent};
use crate::agent::permission::{Answer, PermissionAsk};
use crate::domain::{
    AgentRecord, AgentWorktree, Isolation, Outcome, PermissionMode, ReleaseReason,
    ResumeBlockedReason, Role, SandboxMode, Status, StopReason, TranscriptEntry, WorkSummary,
    WorktreeState,
};
use crate::error::AgentdError;
use crate::model::StreamDelta;
use crate::supervisor::WorktreeReport;
use crate::worktree::Merged;

pub fn timestamp(ms: i64) -> prost_types::Timestamp {
    prost_types::Timestamp {
        seconds: ms.div_euclid(1000),
        nanos: (ms.rem_euclid(1000) * 1_000_000) as i32,
    }
}

fn unknown(field: &str, value: i32) -> AgentdError {
    AgentdError::invalid(format!("{field} {value} is not a known value"))
}

// ------------------------------------------------------------ requests

/// None: the request names no mode (the default applies).
pub fn permission_mode_from_wire(m: i32) -> Result<Option<PermissionMode>, AgentdError> {
    match pb::PermissionMode::try_from(m).map_err(|_| unknown("permission_mode", m))? {
        pb::PermissionMode::Unspecified => Ok(None),
        pb::PermissionMode::Default => Ok(Some(PermissionMode::Default)),
        pb::PermissionMode::AcceptEdits => Ok(Some(PermissionMode::AcceptEdits)),
        pb::PermissionMode::Plan => Ok(Some(PermissionMode::Plan)),
        pb::PermissionMode::Bypass => Ok(Some(PermissionMode::Bypass)),
    }
}

pub fn isolation_from_wire(i: i32) -> Result<Isolation, AgentdError> {
    match pb::Isolation::try_from(i).map_err(|_| unknown("isolation", i))? {
        pb::Isolation::Unspecified => Ok(Isolation::None),
        pb::Isolation::Worktree => Ok(Isolation::Worktree),
    }
}

/// None: the default (config, or the parent's).
pub fn sandbox_from_wire(i: i32) -> Result<Option<SandboxMode>, AgentdError> {
    Ok(
        match pb::SandboxMode::try_from(i).map_err(|_| unknown("sandbox", i))? {
            pb::SandboxMode::Unspecified => None,
            pb::SandboxMode::WorkspaceWrite => Some(SandboxMode::WorkspaceWrite),
            pb::SandboxMode::ReadOnly => Some(SandboxMode::ReadOnly),
            pb::SandboxMode::Off => Some(SandboxMode::Off),
        },
    )
}

pub fn sandbox(m: SandboxMode) -> pb::SandboxMode {
    match m {
        SandboxMode::WorkspaceWrite => pb::SandboxMode::WorkspaceWrite,
        SandboxMode::ReadOnly => pb::SandboxMode::ReadOnly,
        SandboxMode::Off => pb::SandboxMode::Off,
    }
}

pub fn answer_from_wire(a: &pb::PermissionAnswer) -> Result<Answer, AgentdError> {
    use pb::permission_answer::Decision;
    match Decision::try_from(a.decision).map_err(|_| unknown("decision", a.decision))? {
        Decision::AllowOnce => Ok(Answer::AllowOnce),
        Decision::AllowAlways => Ok(Answer::AllowAlways),
        Decision::Deny => Ok(Answer::Deny(a.reason.clone())),
        Decision::AllowEveryAgent => Ok(Answer::AllowEveryAgent),
        Decision::Unspecified => Err(AgentdError::invalid(
            "a permission answer needs a decision (allow once, allow always or deny)",
        )),
    }
}

// ------------------------------------------------------------ answers

pub fn status(s: Status) -> pb::AgentStatus {
    match s {
        Status::Pending => pb::AgentStatus::Pending,
        Status::Running => pb::AgentStatus::Running,
        Status::Waiting => pb::AgentStatus::Waiting,
        Status::Paused => pb::AgentStatus::Paused,
        Status::Completed => pb::AgentStatus::Completed,
        Status::Failed => pb::AgentStatus::Failed,
        Status::Cancelled => pb::AgentStatus::Cancelled,
        Status::Interrupted => pb::AgentStatus::Interrupted,
    }
}

pub(super) fn permission_mode(m: PermissionMode) -> pb::PermissionMode {
    match m {
        PermissionMode::Default => pb::PermissionMode::Default,
        PermissionMode::AcceptEdits => pb::PermissionMode::AcceptEdits,
        PermissionMode::Plan => pb::PermissionMode::Plan,
        PermissionMode::Bypass => pb::PermissionMode::Bypass,
    }
}

fn resume_blocked_reason(r: ResumeBlockedReason) -> pb::ResumeBlockedReason {
    match r {
        ResumeBlockedReason::TranscriptMissing => pb::ResumeBlockedReason::TranscriptMissing,
        ResumeBlockedReason::WorktreeMissing => pb::ResumeBlockedReason::WorktreeMissing,
        ResumeBlockedReason::CwdMissing => pb::ResumeBlockedReason::CwdMissing,
        ResumeBlockedReason::ModelUnavailable => pb::ResumeBlockedReason::ModelUnavailable,
        ResumeBlockedReason::ProfileInvalid => pb::ResumeBlockedReason::ProfileInvalid,
        ResumeBlockedReason::ForkContextMissing => pb::ResumeBlockedReason::ForkContextMissing,
        ResumeBlockedReason::AgentTypeUnknown => pb::ResumeBlockedReason::AgentTypeUnknown,
        ResumeBlockedReason::ExternalAgentCannotResume => {
            pb::ResumeBlockedReason::ExternalAgentCannotResume
        }
        ResumeBlockedReason::BudgetExhausted => pb::ResumeBlockedReason::BudgetExhausted,
    }
}

fn stop_reason(s: &StopReason) -> pb::StopReason {
    match s {
        StopReason::EndTurn => pb::StopReason::EndTurn,
        StopReason::ToolUse => pb::StopReason::ToolUse,
        StopReason::MaxTokens => pb::StopReason::MaxTokens,
        StopReason::StopSequence => pb::StopReason::StopSequence,
        StopReason::PauseTurn => pb::StopReason::PauseTurn,
        StopReason::Refusal => pb::StopReason::Refusal,
        StopReason::ContextWindowExceeded => pb::StopReason::ContextWindowExceeded,
        StopReason::Other(_) => pb::StopReason::Other,
    }
}

pub fn release_reason(r: ReleaseReason) -> pb::ReleaseReason {
    match r {
        ReleaseReason::Request => pb::ReleaseReason::Request,
        ReleaseReason::Auto => pb::ReleaseReason::Auto,
    }
}

/// The wire form of an agent (taking the record: its strings move, which
/// matters when a thousand are listed).
pub fn agent(r: &AgentRecord, waiting_for: Option<String>) -> pb::Agent {
    let (resume_blocked_reason, resume_blocked_detail) = match &r.resume_blocked {
        Some(b) => (resume_blocked_reason(b.reason), b.detail.clone()),
        None => (pb::ResumeBlockedReason::Unspecified, String::new()),
    };
    pb::Agent {
        id: r.id.to_string(),
        short_id: r.short_id.to_string(),
        name: r.name.clone(),
        description: r.description.clone(),
        subagent_type: r.subagent_type.clone(),
        status: status(r.status) as i32,
        background: r.background,
        parent_id: r.parent.map(|p| p.to_string()).unwrap_or_default(),
        model: r.model.clone(),
        cwd: r.cwd.to_string_lossy().into_owned(),
        created_at: Some(timestamp(r.created_at_ms)),
        updated_at: Some(timestamp(r.updated_at_ms)),
        turns: r.turns,
        usage: Some(usage(&r.usage)),
        can_message: r.can_message(),
        result: r.result().to_string(),
        error: r.error().to_string(),
        permission_mode: permission_mode(r.permission_mode) as i32,
        max_turns: r.max_turns,
        transcript_len: r.transcript_len,
        tool_uses: r.tool_uses,
        worktree_path: r
            .worktree
            .as_ref()
            .map(|w| w.path.display().to_string())
            .unwrap_or_default(),
        worktree_branch: r
            .worktree
            .as_ref()
            .map(|w| w.branch.clone())
            .unwrap_or_default(),
        worktree: r.worktree.as_ref().map(agent_worktree),
        sandbox: sandbox(r.sandbox) as i32,
        no_network: r.effective_network() == crate::domain::NetworkMode::None,
        network: network::network(r.effective_network()) as i32,
        network_allow: r.network_allow.iter().map(ToString::to_string).collect(),
        waiting_for: waiting_for.unwrap_or_default(),
        resume_blocked_reason: resume_blocked_reason as i32,
        resume_blocked_detail,
        instructions: compact::instruction_files(&r.instructions),
        instruction_notes: r.instructions.notes.clone(),
        instructions_skipped: r.instructions.skipped,
        compactions: r.compactions,
        plan: plan::plan_items(&r.plan),
        mcp_servers: r.mcp_servers.iter().map(mcp::agent_server).collect(),
        mcp_notes: r.mcp_notes.clone(),
        parent_tool_use_id: r.parent_tool_use_id.clone(),
        // Filled in beside the record (`wire_cache::Extras`).
        budget: None,
        executor: r
            .external
            .as_ref()
            .map(|e| e.agent.to_string())
            .unwrap_or_default(),
        external_session_id: r
            .external
            .as_ref()
            .map(|e| e.session_id.clone())
            .unwrap_or_default(),
    }
}

fn work(w: &WorkSummary) -> pb::WorkSummary {
    pb::WorkSummary {
        changed: w.changed,
        untracked: w.untracked,
        ahead: w.ahead,
    }
}

pub fn agent_worktree(w: &AgentWorktree) -> pb::AgentWorktree {
    pb::AgentWorktree {
        path: w.path.display().to_string(),
        branch: w.branch.clone(),
        base: w.base.clone(),
        state: match w.state {
            WorktreeState::Active => pb::WorktreeState::Active,
            WorktreeState::Kept => pb::WorktreeState::Kept,
            WorktreeState::Removed => pb::WorktreeState::Removed,
        } as i32,
        checkout: w.checkout.display().to_string(),
        base_commit: w.base_commit.clone(),
        owned: w.owned,
        work: Some(work(&w.work)),
        notice: w.notice.clone().unwrap_or_default(),
    }
}

pub fn worktree_report(r: &WorktreeReport) -> pb::Worktree {
    let inspection = r.inspection.as_ref();
    let held = inspection.map(|i| i.work).unwrap_or_default();
    let lock_reason = inspection.and_then(|i| i.locked.clone());
    pb::Worktree {
        path: r.found.path.display().to_string(),
        branch: r.found.branch.clone(),
        agent_id: r
            .agent
            .as_ref()
            .map(|a| a.id.to_string())
            .unwrap_or_default(),
        repo: r.found.checkout.display().to_string(),
        locked: lock_reason.is_some(),
        dirty: held.changed + held.untracked > 0,
        agent_short_id: r
            .agent
            .as_ref()
            .map(|a| a.short_id.to_string())
            .unwrap_or_default(),
        lock_reason: lock_reason.unwrap_or_default(),
        work: Some(work(&held)),
        orphan: r.agent.is_none(),
        base: r.base(),
        agent_status: r.agent.as_ref().map_or(0, |a| status(a.status) as i32),
        missing: !r.found.exists,
        paths: inspection.map(|i| i.paths.clone()).unwrap_or_default(),
        note: r.note.clone().unwrap_or_default(),
    }
}

/// A client's working directory as sent (empty: none): absolute, or
/// INVALID_ARGUMENT.
pub fn client_dir(cwd: &str) -> Result<Option<std::path::PathBuf>, tonic::Status> {
    if cwd.is_empty() {
        return Ok(None);
    }
    let path = std::path::PathBuf::from(cwd);
    if !path.is_absolute() {
        return Err(tonic::Status::invalid_argument(format!(
            "cwd '{}' must be an absolute path",
            crate::error::quote(cwd)
        )));
    }
    Ok(Some(path))
}

pub fn merged(m: Merged, checkout: &std::path::Path) -> pb::MergeAgentResponse {
    let (result, branch, commit) = match m {
        Merged::UpToDate => (pb::MergeResult::UpToDate, String::new(), String::new()),
        Merged::FastForward { branch, commit } => (pb::MergeResult::FastForward, branch, commit),
        Merged::Commit {
            branch,
            commit,
            squashed,
        } => (
            if squashed {
                pb::MergeResult::SquashCommit
            } else {
                pb::MergeResult::MergeCommit
            },
            branch,
            commit,
        ),
    };
    pb::MergeAgentResponse {
        result: result as i32,
        branch,
        commit,
        checkout: checkout.display().to_string(),
    }
}

pub fn entry(e: &TranscriptEntry) -> pb::TranscriptEntry {
    pb::TranscriptEntry {
        seq: e.seq,
        role: match e.role {
            Role::User => pb::Role::User,
            Role::Assistant => pb::Role::Assistant,
            Role::System => pb::Role::System,
        } as i32,
        content_json: e.content_json.clone(),
        created_at: Some(timestamp(e.created_at_ms)),
        usage: e.usage.as_ref().map(usage),
        stop_reason: e
            .stop_reason
            .as_ref()
            .map_or(pb::StopReason::Unspecified, stop_reason) as i32,
        compact_boundary: e.compact.as_ref().map(compact::boundary),
        file_changes: e
            .file_changes
            .iter()
            .map(file_change::file_change)
            .collect(),
        rule_decisions: e.rule_decisions.iter().map(rule_decision).collect(),
    }
}

fn rule_decision(d: &crate::domain::RuleDecision) -> pb::RuleDecision {
    use crate::domain::RuleVerdict;
    use pb::rule_decision::Verdict;
    pb::RuleDecision {
        tool_use_id: d.tool_use_id.clone(),
        verdict: match d.verdict {
            RuleVerdict::Allowed => Verdict::Allowed,
            RuleVerdict::Asked => Verdict::Asked,
            RuleVerdict::Denied => Verdict::Denied,
        } as i32,
        rule: d.rule.clone(),
        source: d.source.clone(),
    }
}

pub fn delta(d: &StreamDelta) -> pb::ContentDelta {
    use pb::content_delta::Delta;
    let (index, delta) = match d {
        StreamDelta::Text { index, text } => (*index, Delta::Text(text.clone())),
        StreamDelta::Thinking { index, thinking } => (*index, Delta::Thinking(thinking.clone())),
        StreamDelta::ToolUseStart { index, name } => (*index, Delta::ToolUseStart(name.clone())),
        StreamDelta::InputJson { index, json } => (*index, Delta::InputJson(json.clone())),
    };
    pb::ContentDelta {
        index,
        delta: Some(delta),
    }
}

pub fn tool(t: &ToolEvent) -> pb::ToolActivity {
    pb::ToolActivity {
        tool_use_id: t.tool_use_id.clone(),
        name: t.name.clone(),
        phase: if t.finished {
            pb::tool_activity::Phase::Finished
        } else {
            pb::tool_activity::Phase::Started
        } as i32,
        summary: t.summary.clone(),
        is_error: t.is_error,
    }
}

fn task_notification(n: &TaskNotice) -> pb::TaskNotification {
    pb::TaskNotification {
        task_id: n.task_id.to_string(),
        status: status(n.status) as i32,
        description: n.description.clone(),
        result: n.result.clone(),
        worktree: n.worktree.clone().unwrap_or_default(),
        total_tokens: n.total_tokens,
        tool_uses: n.tool_uses,
        duration_ms: n.duration_ms,
    }
}

pub fn lifecycle(e: &Lifecycle) -> pb::WatchEvent {
    use pb::watch_event::Event;
    let mut task = None;
    let event = match &e.kind {
        LifecycleKind::Created(r) => Event::Created(agent(r, None)),
        LifecycleKind::Status(s) => Event::Status(status_change(s)),
        LifecycleKind::Notification(n) => {
            task = Some(task_notification(n));
            Event::Notification(n.text.clone())
        }
        LifecycleKind::Permission(ask) => Event::PermissionRequest(permission(ask, false)),
        LifecycleKind::Plan(p) => Event::Plan(plan_update(p)),
    };
    pb::WatchEvent {
        agent_id: e.agent.to_string(),
        agent_short_id: e.short_id.to_string(),
        at: Some(timestamp(e.at_ms)),
        event: Some(event),
        task_notification: task,
    }
}

pub fn permission(ask: &PermissionAsk, resolved: bool) -> pb::PermissionRequest {
    pb::PermissionRequest {
        request_id: ask.request_id.clone(),
        agent_id: ask.agent.to_string(),
        tool_name: ask.tool.to_string(),
        input_json: ask.input_json.clone(),
        summary: ask.summary.clone(),
        resolved,
        agent_short_id: ask.agent_short.to_string(),
        tool_use_id: ask.tool_use_id.clone(),
        remember_rules: ask.remember.clone(),
    }
}

pub fn retry(r: &RetryNotice) -> pb::ResponseRetry {
    pb::ResponseRetry {
        attempt: r.attempt,
        delay_ms: r.delay_ms,
        reason: r.reason.clone(),
    }
}

pub fn status_change(s: &StatusSnapshot) -> pb::StatusChange {
    pb::StatusChange {
        status: status(s.status) as i32,
        result: Outcome::result(s.outcome.as_ref()).to_string(),
        error: Outcome::error(s.outcome.as_ref()).to_string(),
        turns: s.turns,
        waiting_for: s.waiting_for.clone().unwrap_or_default(),
    }
}

pub fn config_entry(e: crate::config::entries::Entry) -> pb::ConfigEntry {
    use crate::config::entries::Source;
    let (source, env_var) = match e.source {
        Source::Default => (pb::ConfigSource::Default, String::new()),
        Source::File => (pb::ConfigSource::File, String::new()),
        Source::Environment(var) => (pb::ConfigSource::Environment, var.to_string()),
    };
    pb::ConfigEntry {
        key: e.key,
        value: e.value,
        source: source as i32,
        env_var,
        reloadable: e.reloadable,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_split_milliseconds_exactly() {
        let t = timestamp(1_700_000_000_123);
        assert_eq!((t.seconds, t.nanos), (1_700_000_000, 123_000_000));
        let t = timestamp(-1);
        assert_eq!((t.seconds, t.nanos), (-1, 999_000_000));
    }

    #[test]
    fn unknown_enum_numbers_are_refused_not_defaulted() {
        assert!(matches!(
            permission_mode_from_wire(99),
            Err(AgentdError::Invalid(_))
        ));
        assert!(matches!(
            permission_mode_from_wire(-1),
            Err(AgentdError::Invalid(_))
        ));
        assert_eq!(permission_mode_from_wire(0).unwrap(), None);
        assert_eq!(
            permission_mode_from_wire(3).unwrap(),
            Some(PermissionMode::Plan)
        );
        assert!(isolation_from_wire(7).is_err());
        let answer = |decision| pb::PermissionAnswer {
            request_id: "r".into(),
            decision,
            reason: String::new(),
            remember: false,
        };
        assert!(answer_from_wire(&answer(42)).is_err());
        assert!(answer_from_wire(&answer(0)).is_err());
        assert_eq!(answer_from_wire(&answer(1)).unwrap(), Answer::AllowOnce);
    }
}
