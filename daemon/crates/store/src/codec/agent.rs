//! The agent record on disk (`v1/agents`): its fields, its worktree and
//! instruction files, and the numbers of its status and permission mode.

use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::PathBuf;

use prost::Message;

use super::external_run::{StoredExternal, external_of, stored_external};
use super::mcp::{StoredMcpServer, mcp_of, stored_mcp};
use super::plan::{StoredPlanItem, plan_of, stored_plan};
use super::{Corrupt, StoredUsage, stored_usage, usage_of};
use crate::domain::{
    AgentId, AgentRecord, AgentWorktree, InstructionFile, InstructionsLoaded, Outcome,
    PermissionMode, QuerySource, ResumeBlocked, ResumeBlockedReason, ShortId, Status, ToolRef,
    WorkSummary, WorktreeState,
};
use crate::domain::{HostPattern, NetworkMode, SandboxMode};

#[derive(Clone, PartialEq, prost::Message)]
struct StoredAgent {
    #[prost(bytes = "vec", tag = "1")]
    id: Vec<u8>,
    #[prost(string, tag = "2")]
    name: String,
    #[prost(string, tag = "3")]
    description: String,
    #[prost(string, tag = "4")]
    subagent_type: String,
    /// 1 pending … 8 interrupted (see `status_number`).
    #[prost(int32, tag = "5")]
    status: i32,
    #[prost(bool, tag = "6")]
    background: bool,
    #[prost(bytes = "vec", tag = "7")]
    parent_id: Vec<u8>,
    #[prost(string, tag = "8")]
    model: String,
    #[prost(string, tag = "9")]
    cwd: String,
    #[prost(int64, tag = "10")]
    created_at_ms: i64,
    #[prost(int64, tag = "11")]
    updated_at_ms: i64,
    #[prost(uint32, tag = "12")]
    turns: u32,
    #[prost(message, optional, tag = "13")]
    usage: Option<StoredUsage>,
    /// A `ResumeBlockedReason` name, empty when resumable.
    #[prost(string, tag = "14")]
    resume_blocked_reason: String,
    #[prost(string, tag = "15")]
    result: String,
    #[prost(string, tag = "16")]
    error: String,
    /// 0 (written by agentd 0.1 for bypass) and 4 bypass, 1 default,
    /// 2 accept-edits, 3 plan.
    #[prost(int32, tag = "17")]
    permission_mode: i32,
    #[prost(uint32, tag = "18")]
    max_turns: u32,
    // Tag 19 is retired: the transcript length is read from the transcript.
    #[prost(uint32, tag = "20")]
    tool_uses: u32,
    // Tags 21 and 22 (worktree path and branch as strings) are retired:
    // agentd 0.1 never wrote them.
    #[prost(uint32, tag = "23")]
    depth: u32,
    #[prost(int64, tag = "24")]
    started_at_ms: i64,
    #[prost(string, repeated, tag = "25")]
    always_allowed: Vec<String>,
    /// Since schema 2. Stores of schema 1 get one when upgraded.
    #[prost(string, tag = "26")]
    short_id: String,
    #[prost(string, tag = "27")]
    parent_tool_use_id: String,
    #[prost(string, tag = "28")]
    resume_blocked_detail: String,
    /// Since schema 2 (the upgrade counts each transcript).
    #[prost(uint64, tag = "29")]
    transcript_len: u64,
    /// 1 client, 2 subagent, 3 fork; 0 (schema 1): client or subagent, by
    /// whether there is a parent.
    #[prost(int32, tag = "30")]
    query_source: i32,
    #[prost(message, optional, tag = "31")]
    worktree: Option<StoredWorktree>,
    /// 0 (written before sandboxes) and 1 workspace-write, 2 read-only,
    /// 3 off.
    #[prost(int32, tag = "32")]
    sandbox: i32,
    #[prost(bool, tag = "33")]
    no_network: bool,
    /// The agent's plan (`codec::plan`); empty in records from before plans.
    #[prost(message, repeated, tag = "34")]
    plan: Vec<StoredPlanItem>,
    #[prost(message, repeated, tag = "35")]
    instructions: Vec<StoredInstructionFile>,
    #[prost(uint32, tag = "36")]
    compactions: u32,
    #[prost(string, repeated, tag = "37")]
    instruction_notes: Vec<String>,
    #[prost(bool, tag = "38")]
    instructions_skipped: bool,
    /// Its MCP servers (`codec::mcp`); empty in records from before them.
    #[prost(message, repeated, tag = "39")]
    mcp_servers: Vec<StoredMcpServer>,
    #[prost(string, repeated, tag = "40")]
    mcp_notes: Vec<String>,
    /// Set for an agent another coding agent runs over ACP (`codec::external`).
    #[prost(message, optional, tag = "41")]
    external: Option<StoredExternal>,
    /// 0: from before network modes (then `no_network` says none, else
    /// full, as such an agent had); 1 proxy, 2 full, 3 none.
    #[prost(int32, tag = "42")]
    network: i32,
    #[prost(string, repeated, tag = "43")]
    network_allow: Vec<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct StoredInstructionFile {
    #[prost(bytes = "vec", tag = "1")]
    path: Vec<u8>,
    #[prost(uint64, tag = "2")]
    bytes: u64,
    #[prost(bool, tag = "3")]
    cut: bool,
}

/// Paths are kept as their bytes: a path that is not UTF-8 must still name
/// the same directory when read back.
#[derive(Clone, PartialEq, prost::Message)]
struct StoredWorktree {
    #[prost(bytes = "vec", tag = "1")]
    path: Vec<u8>,
    #[prost(string, tag = "2")]
    branch: String,
    #[prost(bytes = "vec", tag = "3")]
    checkout: Vec<u8>,
    #[prost(string, tag = "4")]
    base: String,
    #[prost(string, tag = "5")]
    base_commit: String,
    #[prost(bool, tag = "6")]
    owned: bool,
    /// 1 active, 2 kept, 3 removed.
    #[prost(int32, tag = "7")]
    state: i32,
    #[prost(uint32, tag = "8")]
    changed: u32,
    #[prost(uint32, tag = "9")]
    untracked: u32,
    #[prost(uint32, tag = "10")]
    ahead: u32,
    /// Empty: none.
    #[prost(string, tag = "11")]
    notice: String,
}

fn stored_worktree(w: &AgentWorktree) -> StoredWorktree {
    StoredWorktree {
        path: w.path.as_os_str().as_bytes().to_vec(),
        branch: w.branch.clone(),
        checkout: w.checkout.as_os_str().as_bytes().to_vec(),
        base: w.base.clone(),
        base_commit: w.base_commit.clone(),
        owned: w.owned,
        state: match w.state {
            WorktreeState::Active => 1,
            WorktreeState::Kept => 2,
            WorktreeState::Removed => 3,
        },
        changed: w.work.changed,
        untracked: w.work.untracked,
        ahead: w.work.ahead,
        notice: w.notice.clone().unwrap_or_default(),
    }
}

fn worktree_of(s: StoredWorktree) -> Result<AgentWorktree, Corrupt> {
    Ok(AgentWorktree {
        path: PathBuf::from(std::ffi::OsString::from_vec(s.path)),
        branch: s.branch,
        checkout: PathBuf::from(std::ffi::OsString::from_vec(s.checkout)),
        base: s.base,
        base_commit: s.base_commit,
        owned: s.owned,
        state: match s.state {
            1 => WorktreeState::Active,
            2 => WorktreeState::Kept,
            3 => WorktreeState::Removed,
            _ => return Err(Corrupt::Field("worktree state")),
        },
        work: WorkSummary {
            changed: s.changed,
            untracked: s.untracked,
            ahead: s.ahead,
        },
        notice: (!s.notice.is_empty()).then_some(s.notice),
    })
}

/// Only the status of a record: decoding skips every other field without
/// allocating, for counting agents by status.
#[derive(Clone, Copy, PartialEq, prost::Message)]
struct StoredStatus {
    #[prost(int32, tag = "5")]
    status: i32,
}

/// The status of a stored record.
pub fn decode_status(bytes: &[u8]) -> Result<Status, Corrupt> {
    let s = StoredStatus::decode(bytes)?;
    status_of(s.status).ok_or(Corrupt::Field("status"))
}

fn status_number(s: Status) -> i32 {
    match s {
        Status::Pending => 1,
        Status::Running => 2,
        Status::Waiting => 3,
        Status::Paused => 4,
        Status::Completed => 5,
        Status::Failed => 6,
        Status::Cancelled => 7,
        Status::Interrupted => 8,
    }
}

fn status_of(n: i32) -> Option<Status> {
    Status::ALL.into_iter().find(|s| status_number(*s) == n)
}

fn mode_number(m: PermissionMode) -> i32 {
    match m {
        PermissionMode::Default => 1,
        PermissionMode::AcceptEdits => 2,
        PermissionMode::Plan => 3,
        PermissionMode::Bypass => 4,
    }
}

fn mode_of(n: i32) -> Option<PermissionMode> {
    match n {
        // agentd 0.1 stored "unspecified" for agents that ran in bypass.
        0 | 4 => Some(PermissionMode::Bypass),
        1 => Some(PermissionMode::Default),
        2 => Some(PermissionMode::AcceptEdits),
        3 => Some(PermissionMode::Plan),
        _ => None,
    }
}

/// Known tool names; names this agentd does not know are dropped, which
/// allows less, never more.
pub fn encode_agent(r: &AgentRecord) -> Vec<u8> {
    StoredAgent {
        id: r.id.as_bytes().to_vec(),
        name: r.name.clone(),
        description: r.description.clone(),
        subagent_type: r.subagent_type.clone(),
        status: status_number(r.status),
        background: r.background,
        parent_id: r.parent.map(|p| p.as_bytes().to_vec()).unwrap_or_default(),
        model: r.model.clone(),
        cwd: r.cwd.display().to_string(),
        created_at_ms: r.created_at_ms,
        updated_at_ms: r.updated_at_ms,
        turns: r.turns,
        usage: Some(stored_usage(&r.usage)),
        resume_blocked_reason: r
            .resume_blocked
            .as_ref()
            .map(|b| b.reason.as_str().to_string())
            .unwrap_or_default(),
        resume_blocked_detail: r
            .resume_blocked
            .as_ref()
            .map(|b| b.detail.clone())
            .unwrap_or_default(),
        result: r.result().to_string(),
        error: r.error().to_string(),
        permission_mode: mode_number(r.permission_mode),
        max_turns: r.max_turns,
        tool_uses: r.tool_uses,
        worktree: r.worktree.as_ref().map(stored_worktree),
        sandbox: match r.sandbox {
            SandboxMode::WorkspaceWrite => 1,
            SandboxMode::ReadOnly => 2,
            SandboxMode::Off => 3,
        },
        // Kept for a daemon that reads only this (it then confines as
        // before: none, or the network).
        no_network: r.network == NetworkMode::None,
        network: match r.network {
            NetworkMode::Proxy => 1,
            NetworkMode::Full => 2,
            NetworkMode::None => 3,
        },
        network_allow: r.network_allow.iter().map(ToString::to_string).collect(),
        instructions: r
            .instructions
            .files
            .iter()
            .map(|f| StoredInstructionFile {
                path: f.path.as_os_str().as_bytes().to_vec(),
                bytes: f.bytes,
                cut: f.cut,
            })
            .collect(),
        instruction_notes: r.instructions.notes.clone(),
        instructions_skipped: r.instructions.skipped,
        compactions: r.compactions,
        depth: r.depth,
        started_at_ms: r.started_at_ms,
        always_allowed: r
            .always_allowed
            .iter()
            .map(|t| t.as_str().to_string())
            .collect(),
        short_id: r.short_id.as_str().to_string(),
        parent_tool_use_id: r.parent_tool_use_id.clone(),
        transcript_len: r.transcript_len,
        query_source: match r.query_source {
            QuerySource::Client => 1,
            QuerySource::Subagent => 2,
            QuerySource::Fork => 3,
        },
        plan: stored_plan(&r.plan),
        mcp_servers: stored_mcp(&r.mcp_servers),
        mcp_notes: r.mcp_notes.clone(),
        external: r.external.as_ref().map(stored_external),
    }
    .encode_to_vec()
}

/// Decodes a record. `short_id` may be missing only in a schema-1 store,
/// whose upgrade fills it in (`migrate`); a record read otherwise without
/// one is corrupt.
pub fn decode_agent(bytes: &[u8]) -> Result<AgentRecord, Corrupt> {
    let s = StoredAgent::decode(bytes)?;
    let id = AgentId::from_slice(&s.id).ok_or(Corrupt::Field("id"))?;
    let parent = if s.parent_id.is_empty() {
        None
    } else {
        Some(AgentId::from_slice(&s.parent_id).ok_or(Corrupt::Field("parent id"))?)
    };
    let short_id = if s.short_id.is_empty() {
        ShortId::default()
    } else {
        ShortId::from_stored(&s.short_id).ok_or(Corrupt::Field("short id"))?
    };
    let resume_blocked = if s.resume_blocked_reason.is_empty() {
        None
    } else {
        Some(ResumeBlocked {
            // A reason from a newer agentd still blocks: it reads as the
            // closest thing this one knows, with the name kept as detail.
            reason: ResumeBlockedReason::parse(&s.resume_blocked_reason)
                .unwrap_or(ResumeBlockedReason::TranscriptMissing),
            detail: if s.resume_blocked_detail.is_empty() {
                s.resume_blocked_reason.clone()
            } else {
                s.resume_blocked_detail
            },
        })
    };
    Ok(AgentRecord {
        id,
        short_id,
        name: s.name,
        description: s.description,
        subagent_type: s.subagent_type,
        status: status_of(s.status).ok_or(Corrupt::Field("status"))?,
        background: s.background,
        parent_tool_use_id: s.parent_tool_use_id,
        model: s.model,
        cwd: PathBuf::from(s.cwd),
        created_at_ms: s.created_at_ms,
        updated_at_ms: s.updated_at_ms,
        started_at_ms: s.started_at_ms,
        turns: s.turns,
        usage: usage_of(s.usage),
        resume_blocked,
        outcome: outcome_of(s.result, s.error),
        permission_mode: mode_of(s.permission_mode).ok_or(Corrupt::Field("permission mode"))?,
        max_turns: s.max_turns,
        tool_uses: s.tool_uses,
        worktree: s.worktree.map(worktree_of).transpose()?,
        // A record from before sandboxes gets the default, which confines.
        sandbox: match s.sandbox {
            0 | 1 => SandboxMode::WorkspaceWrite,
            2 => SandboxMode::ReadOnly,
            3 => SandboxMode::Off,
            _ => return Err(Corrupt::Field("sandbox")),
        },
        network: match (s.network, s.no_network) {
            (0, true) | (3, _) => NetworkMode::None,
            (0, false) | (2, _) => NetworkMode::Full,
            (1, _) => NetworkMode::Proxy,
            _ => return Err(Corrupt::Field("network")),
        },
        network_allow: s
            .network_allow
            .iter()
            .map(|p| HostPattern::parse(p))
            .collect::<Result<_, _>>()
            .map_err(|_| Corrupt::Field("network allow list"))?,
        instructions: InstructionsLoaded {
            files: s
                .instructions
                .into_iter()
                .map(|f| InstructionFile {
                    path: PathBuf::from(std::ffi::OsString::from_vec(f.path)),
                    bytes: f.bytes,
                    cut: f.cut,
                })
                .collect(),
            notes: s.instruction_notes,
            skipped: s.instructions_skipped,
        },
        compactions: s.compactions,
        depth: s.depth,
        always_allowed: s
            .always_allowed
            .iter()
            .filter_map(|n| ToolRef::parse(n))
            .collect(),
        transcript_len: s.transcript_len,
        plan: plan_of(s.plan)?,
        mcp_servers: mcp_of(s.mcp_servers)?,
        mcp_notes: s.mcp_notes,
        external: s.external.map(external_of).transpose()?,
        query_source: match (s.query_source, &parent) {
            (0, None) | (1, _) => QuerySource::Client,
            (0, Some(_)) | (2, _) => QuerySource::Subagent,
            (3, _) => QuerySource::Fork,
            _ => return Err(Corrupt::Field("query source")),
        },
        parent,
    })
}

/// A stored run's end: an error wins, as only a failure after a completion
/// leaves both (records from before `Outcome` kept the earlier answer).
fn outcome_of(result: String, error: String) -> Option<Outcome> {
    if !error.is_empty() {
        Some(Outcome::Failed(error))
    } else if !result.is_empty() {
        Some(Outcome::Completed(result))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::super::*;
    use super::*;
    use crate::domain::*;
    use crate::domain::{CompactBoundary, CompactTrigger, Role, StopReason, TranscriptEntry};
    use crate::domain::{PlanItem, PlanStatus, ToolName};

    fn sample() -> AgentRecord {
        let id = AgentId::random();
        let mut r = AgentRecord::new(id, id.short_prefix(8), 1_700_000_000_000);
        r.name = "builder".into();
        r.parent = Some(AgentId::random());
        r.status = Status::Waiting;
        r.permission_mode = PermissionMode::Plan;
        r.always_allowed = vec![ToolName::Bash.into()];
        r.resume_blocked = Some(ResumeBlocked {
            reason: ResumeBlockedReason::CwdMissing,
            detail: "its working directory /x is gone".into(),
        });
        r.usage.output_tokens = 7;
        r.transcript_len = 12;
        r.query_source = QuerySource::Fork;
        r.plan = vec![
            PlanItem {
                content: "Read the code".into(),
                status: PlanStatus::Completed,
                active_form: "Reading the code".into(),
            },
            PlanItem {
                content: "Fix the bug".into(),
                status: PlanStatus::InProgress,
                active_form: "Fixing the bug".into(),
            },
            PlanItem {
                content: "Run the tests".into(),
                status: PlanStatus::Pending,
                active_form: "Running the tests".into(),
            },
        ];
        r.worktree = Some(AgentWorktree {
            // Not UTF-8: kept byte for byte.
            path: PathBuf::from(std::ffi::OsString::from_vec(
                b"/r/.agentd/worktrees/\xff1".to_vec(),
            )),
            branch: "agentd/ab12cd34".into(),
            checkout: PathBuf::from("/r"),
            base: "refs/heads/main".into(),
            base_commit: "0123456789abcdef0123456789abcdef01234567".into(),
            owned: true,
            state: WorktreeState::Kept,
            work: WorkSummary {
                changed: 1,
                untracked: 2,
                ahead: 3,
            },
            notice: Some("restored".into()),
        });
        r.instructions = InstructionsLoaded {
            files: vec![InstructionFile {
                path: PathBuf::from(std::ffi::OsString::from_vec(b"/r/\xffAGENTS.md".to_vec())),
                bytes: 40_960,
                cut: true,
            }],
            notes: vec!["/r/CLAUDE.md left out: it is not UTF-8 text".into()],
            skipped: false,
        };
        r.compactions = 2;
        r.mcp_notes = vec![".mcp.json server \"x\" (stdio) was not started".into()];
        r.external = Some(crate::domain::ExternalRun {
            agent: crate::domain::ExternalAgentName::parse("claude-code").unwrap(),
            session_id: "sess-1".into(),
            sent_through: 5,
            turn_open: true,
            reopenable: true,
            cost: Some(crate::domain::ReportedCost {
                total_micros: 1_250_000,
                last_micros: 250_000,
            }),
            context: Some(crate::domain::ContextFill {
                used: 53_000,
                size: 200_000,
            }),
        });
        r
    }

    #[test]
    fn records_round_trip() {
        let r = sample();
        assert_eq!(decode_agent(&encode_agent(&r)).unwrap(), r);
    }

    #[test]
    fn unknown_numbers_are_corrupt_not_defaults() {
        let mut s = StoredAgent::decode(encode_agent(&sample()).as_slice()).unwrap();
        s.status = 99;
        assert!(matches!(
            decode_agent(&s.encode_to_vec()),
            Err(Corrupt::Field("status"))
        ));
        let mut w = s.clone();
        w.status = 2;
        if let Some(t) = w.worktree.as_mut() {
            t.state = 9;
        }
        assert!(matches!(
            decode_agent(&w.encode_to_vec()),
            Err(Corrupt::Field("worktree state"))
        ));
        s.status = 2;
        s.permission_mode = 42;
        assert!(matches!(
            decode_agent(&s.encode_to_vec()),
            Err(Corrupt::Field("permission mode"))
        ));
        assert!(decode_agent(&[0xff, 0xff, 0xff]).is_err());
    }

    #[test]
    fn an_unreadable_external_agent_name_is_corrupt_and_none_is_not_external() {
        let r = sample();
        let mut s = StoredAgent::decode(encode_agent(&r).as_slice()).unwrap();
        let mut bad = s.clone();
        if let Some(e) = bad.external.as_mut() {
            e.agent = "Not A Name".into();
        }
        assert!(matches!(
            decode_agent(&bad.encode_to_vec()),
            Err(Corrupt::Field("external agent"))
        ));
        s.external = None;
        assert_eq!(decode_agent(&s.encode_to_vec()).unwrap().external, None);
    }

    #[test]
    fn an_unknown_plan_status_number_is_corrupt() {
        for n in [0, 4, -1] {
            let mut s = StoredAgent::decode(encode_agent(&sample()).as_slice()).unwrap();
            s.plan[1].set_status(n);
            assert!(
                matches!(
                    decode_agent(&s.encode_to_vec()),
                    Err(Corrupt::Field("plan status"))
                ),
                "status number {n}"
            );
        }
        // A record from before plans has none.
        let mut s = StoredAgent::decode(encode_agent(&sample()).as_slice()).unwrap();
        s.plan.clear();
        assert!(decode_agent(&s.encode_to_vec()).unwrap().plan.is_empty());
    }

    #[test]
    fn version_one_bypass_reads_as_bypass_and_unknown_tools_allow_less() {
        let mut s = StoredAgent::decode(encode_agent(&sample()).as_slice()).unwrap();
        s.permission_mode = 0;
        s.always_allowed = vec!["Bash".into(), "Teleport".into(), "mcp__gh__list".into()];
        let r = decode_agent(&s.encode_to_vec()).unwrap();
        assert_eq!(r.permission_mode, PermissionMode::Bypass);
        assert_eq!(
            r.always_allowed,
            vec![
                ToolRef::Builtin(ToolName::Bash),
                ToolRef::parse("mcp__gh__list").unwrap()
            ]
        );
    }

    #[test]
    fn entries_prompts_and_inbox_items_round_trip() {
        let e = TranscriptEntry {
            seq: 3,
            role: Role::Assistant,
            content_json: b"[]".to_vec(),
            created_at_ms: 5,
            usage: Some(Usage {
                input_tokens: 1,
                ..Default::default()
            }),
            stop_reason: Some(StopReason::ToolUse),
            cache_point: Some(2),
            compact: None,
            file_changes: Vec::new(),
            rule_decisions: Vec::new(),
        };
        assert_eq!(decode_entry(&encode_entry(&e)).unwrap(), e);
        let boundary = TranscriptEntry {
            role: Role::System,
            usage: None,
            stop_reason: None,
            cache_point: None,
            compact: Some(CompactBoundary {
                trigger: CompactTrigger::Overflow,
                summary: "did a, b remains".into(),
                tokens_before: 190_000,
                tokens_after: 3_000,
                covers_through_seq: 2,
            }),
            ..e.clone()
        };
        assert_eq!(decode_entry(&encode_entry(&boundary)).unwrap(), boundary);
        let mut stored = StoredEntry::decode(encode_entry(&boundary).as_slice()).unwrap();
        if let Some(c) = stored.compact.as_mut() {
            c.trigger = 7;
        }
        assert!(matches!(
            decode_entry(&stored.encode_to_vec()),
            Err(Corrupt::Field("compaction trigger"))
        ));
        let p = PromptContext {
            system_json: b"[1]".to_vec(),
            tools_json: b"[2]".to_vec(),
            allowed_tools: Some(ToolAllowlist::lenient(["Read", "Grep", "mcp__gh__*"])),
            mcp_json: Vec::new(),
        };
        assert_eq!(decode_prompt(&encode_prompt(&p)).unwrap(), p);
        let none_allowed = PromptContext {
            allowed_tools: Some(ToolAllowlist::default()),
            ..p.clone()
        };
        assert_eq!(
            decode_prompt(&encode_prompt(&none_allowed)).unwrap(),
            none_allowed,
            "an empty allowlist must not read back as 'every tool'"
        );
        let i = InboxItem {
            kind: InboxKind::Notification,
            text: "done".into(),
            from: Some(AgentId::random()),
            created_at_ms: 9,
        };
        assert_eq!(decode_inbox_item(&encode_inbox_item(&i)).unwrap(), i);
    }
}
