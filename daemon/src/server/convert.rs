//! Mapping between the daemon's domain types and the v1 wire types. This is
//! the only place that knows both.

use agentd_shared::proto as pb;

use crate::model::StreamDelta;
use crate::store::{self, AgentRecord, PermissionMode, Role, Status, TranscriptEntry};
use crate::supervisor::hub::{RetryNotice, StatusSnapshot, ToolEvent};

pub fn timestamp(ms: i64) -> prost_types::Timestamp {
    prost_types::Timestamp {
        seconds: ms.div_euclid(1000),
        nanos: (ms.rem_euclid(1000) * 1_000_000) as i32,
    }
}

pub fn status(s: Status) -> pb::AgentStatus {
    match s {
        Status::Unspecified => pb::AgentStatus::Unspecified,
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

pub fn permission_mode_from_wire(m: i32) -> PermissionMode {
    match pb::PermissionMode::try_from(m).unwrap_or_default() {
        pb::PermissionMode::Unspecified => PermissionMode::Unspecified,
        pb::PermissionMode::Default => PermissionMode::Default,
        pb::PermissionMode::AcceptEdits => PermissionMode::AcceptEdits,
        pb::PermissionMode::Plan => PermissionMode::Plan,
        pb::PermissionMode::Bypass => PermissionMode::Bypass,
    }
}

fn permission_mode(m: PermissionMode) -> pb::PermissionMode {
    match m {
        PermissionMode::Unspecified => pb::PermissionMode::Unspecified,
        PermissionMode::Default => pb::PermissionMode::Default,
        PermissionMode::AcceptEdits => pb::PermissionMode::AcceptEdits,
        PermissionMode::Plan => pb::PermissionMode::Plan,
        PermissionMode::Bypass => pb::PermissionMode::Bypass,
    }
}

pub fn usage(u: &store::Usage) -> pb::Usage {
    pb::Usage {
        input_tokens: u.input_tokens,
        output_tokens: u.output_tokens,
        cache_read_input_tokens: u.cache_read_input_tokens,
        cache_creation_input_tokens: u.cache_creation_input_tokens,
    }
}

fn uuid_string(bytes: &[u8]) -> String {
    uuid::Uuid::from_slice(bytes)
        .map(|u| u.to_string())
        .unwrap_or_default()
}

/// The wire form of an agent; `transcript_len` is filled in by callers that
/// read it (it costs a lookup per agent).
pub fn agent(r: &AgentRecord, transcript_len: u64) -> pb::Agent {
    let id = r.uuid().to_string();
    pb::Agent {
        short_id: agentd_shared::ids::short_id(&id).to_string(),
        id,
        name: r.name.clone(),
        description: r.description.clone(),
        subagent_type: r.subagent_type.clone(),
        status: status(r.status()) as i32,
        background: r.background,
        parent_id: if r.parent_id.is_empty() {
            String::new()
        } else {
            uuid_string(&r.parent_id)
        },
        model: r.model.clone(),
        cwd: r.cwd.clone(),
        created_at: Some(timestamp(r.created_at_ms)),
        updated_at: Some(timestamp(r.updated_at_ms)),
        turns: r.turns,
        usage: Some(usage(&r.usage.unwrap_or_default())),
        can_message: r.can_message(),
        resume_blocked_reason: r.resume_blocked_reason.clone(),
        result: r.result.clone(),
        error: r.error.clone(),
        permission_mode: permission_mode(
            PermissionMode::try_from(r.permission_mode).unwrap_or_default(),
        ) as i32,
        max_turns: r.max_turns,
        transcript_len,
        tool_uses: r.tool_uses,
        worktree_path: r.worktree_path.clone(),
        worktree_branch: r.worktree_branch.clone(),
        waiting_for: String::new(),
    }
}

pub fn entry(e: &TranscriptEntry) -> pb::TranscriptEntry {
    pb::TranscriptEntry {
        seq: e.seq,
        role: match e.role() {
            Role::Unspecified => pb::Role::Unspecified,
            Role::User => pb::Role::User,
            Role::Assistant => pb::Role::Assistant,
            Role::System => pb::Role::System,
        } as i32,
        content_json: e.content_json.clone(),
        created_at: Some(timestamp(e.created_at_ms)),
        usage: e.usage.as_ref().map(usage),
        stop_reason: e.stop_reason.clone(),
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

pub fn lifecycle(e: &crate::supervisor::hub::Lifecycle) -> pb::WatchEvent {
    use crate::supervisor::hub::LifecycleKind;
    use pb::watch_event::Event;
    pb::WatchEvent {
        agent_id: e.agent.to_string(),
        at: Some(timestamp(e.at_ms)),
        event: Some(match &e.kind {
            LifecycleKind::Created(r) => Event::Created(agent(r, 0)),
            LifecycleKind::Status(s) => Event::Status(status_change(s)),
            LifecycleKind::Notification(text) => Event::Notification(text.clone()),
            LifecycleKind::Permission(ask) => Event::PermissionRequest(permission(ask, false)),
        }),
    }
}

pub fn permission(
    ask: &crate::supervisor::hub::PermissionAsk,
    resolved: bool,
) -> pb::PermissionRequest {
    pb::PermissionRequest {
        request_id: ask.request_id.clone(),
        agent_id: ask.agent.to_string(),
        tool_name: ask.tool.clone(),
        input_json: ask.input_json.clone(),
        summary: ask.summary.clone(),
        resolved,
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
        result: s.result.clone(),
        error: s.error.clone(),
        turns: s.turns,
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
}
