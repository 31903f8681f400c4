//! Transcript entries on disk, compaction boundaries included.

use prost::Message;

use super::{Corrupt, StoredUsage, stored_usage, usage_of};
use crate::domain::{
    Before, CompactBoundary, CompactTrigger, FileChange, FileText, Role, RuleDecision, RuleVerdict,
    StopReason, ToolFileChange, TranscriptEntry,
};

#[derive(Clone, PartialEq, prost::Message)]
pub(super) struct StoredEntry {
    #[prost(uint64, tag = "1")]
    seq: u64,
    /// 1 user, 2 assistant, 3 system.
    #[prost(int32, tag = "2")]
    role: i32,
    #[prost(bytes = "vec", tag = "3")]
    content_json: Vec<u8>,
    #[prost(int64, tag = "4")]
    created_at_ms: i64,
    #[prost(message, optional, tag = "5")]
    usage: Option<StoredUsage>,
    /// The Anthropic spelling; empty when none.
    #[prost(string, tag = "6")]
    stop_reason: String,
    #[prost(uint32, optional, tag = "7")]
    cache_point: Option<u32>,
    #[prost(message, optional, tag = "8")]
    pub(super) compact: Option<StoredCompact>,
    /// Entries written before file changes were recorded have none.
    #[prost(message, repeated, tag = "9")]
    file_changes: Vec<StoredFileChange>,
    /// Entries written before rule decisions were recorded have none.
    #[prost(message, repeated, tag = "10")]
    rule_decisions: Vec<StoredRuleDecision>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct StoredRuleDecision {
    #[prost(string, tag = "1")]
    tool_use_id: String,
    /// 1 allowed, 2 asked, 3 denied.
    #[prost(int32, tag = "2")]
    verdict: i32,
    #[prost(string, tag = "3")]
    rule: String,
    #[prost(string, tag = "4")]
    source: String,
}

#[derive(Clone, PartialEq, prost::Message)]
struct StoredFileChange {
    #[prost(string, tag = "1")]
    tool_use_id: String,
    #[prost(string, tag = "2")]
    path: String,
    /// 1 absent, 2 binary, 3 text.
    #[prost(int32, tag = "3")]
    before_kind: i32,
    #[prost(message, optional, tag = "4")]
    before: Option<StoredFileText>,
    #[prost(message, optional, tag = "5")]
    after: Option<StoredFileText>,
    #[prost(uint64, tag = "6")]
    first_line: u64,
    /// An external agent's claim (`ToolFileChange::reported`); entries
    /// written before claims were marked have none and were agentd's.
    #[prost(bool, tag = "7")]
    reported: bool,
}

#[derive(Clone, PartialEq, prost::Message)]
struct StoredFileText {
    #[prost(string, tag = "1")]
    text: String,
    #[prost(uint64, tag = "2")]
    size: u64,
    #[prost(bool, tag = "3")]
    cut: bool,
}

#[derive(Clone, PartialEq, prost::Message)]
pub(super) struct StoredCompact {
    /// 1 auto, 2 manual, 3 overflow.
    #[prost(int32, tag = "1")]
    pub(super) trigger: i32,
    #[prost(string, tag = "2")]
    summary: String,
    #[prost(uint64, tag = "3")]
    tokens_before: u64,
    #[prost(uint64, tag = "4")]
    tokens_after: u64,
    #[prost(uint64, tag = "5")]
    covers_through_seq: u64,
}

fn role_number(r: Role) -> i32 {
    match r {
        Role::User => 1,
        Role::Assistant => 2,
        Role::System => 3,
    }
}

pub fn encode_entry(e: &TranscriptEntry) -> Vec<u8> {
    StoredEntry {
        seq: e.seq,
        role: role_number(e.role),
        content_json: e.content_json.clone(),
        created_at_ms: e.created_at_ms,
        usage: e.usage.as_ref().map(stored_usage),
        stop_reason: e
            .stop_reason
            .as_ref()
            .map(|s| s.as_str().to_string())
            .unwrap_or_default(),
        cache_point: e.cache_point,
        compact: e.compact.as_ref().map(|c| StoredCompact {
            trigger: match c.trigger {
                CompactTrigger::Auto => 1,
                CompactTrigger::Manual => 2,
                CompactTrigger::Overflow => 3,
            },
            summary: c.summary.clone(),
            tokens_before: c.tokens_before,
            tokens_after: c.tokens_after,
            covers_through_seq: c.covers_through_seq,
        }),
        file_changes: e.file_changes.iter().map(stored_change).collect(),
        rule_decisions: e
            .rule_decisions
            .iter()
            .map(|d| StoredRuleDecision {
                tool_use_id: d.tool_use_id.clone(),
                verdict: match d.verdict {
                    RuleVerdict::Allowed => 1,
                    RuleVerdict::Asked => 2,
                    RuleVerdict::Denied => 3,
                },
                rule: d.rule.clone(),
                source: d.source.clone(),
            })
            .collect(),
    }
    .encode_to_vec()
}

fn decision_of(d: StoredRuleDecision) -> Result<RuleDecision, Corrupt> {
    let verdict = match d.verdict {
        1 => RuleVerdict::Allowed,
        2 => RuleVerdict::Asked,
        3 => RuleVerdict::Denied,
        _ => return Err(Corrupt::Field("rule decision")),
    };
    Ok(RuleDecision {
        tool_use_id: d.tool_use_id,
        verdict,
        rule: d.rule,
        source: d.source,
    })
}

fn stored_text(t: &FileText) -> StoredFileText {
    StoredFileText {
        text: t.text.clone(),
        size: t.size,
        cut: t.cut,
    }
}

fn stored_change(c: &ToolFileChange) -> StoredFileChange {
    let (before_kind, before) = match &c.change.before {
        Before::Absent => (1, None),
        Before::Binary { size } => (
            2,
            Some(StoredFileText {
                size: *size,
                ..Default::default()
            }),
        ),
        Before::Text(t) => (3, Some(stored_text(t))),
    };
    StoredFileChange {
        tool_use_id: c.tool_use_id.clone(),
        path: c.change.path.to_string_lossy().into_owned(),
        before_kind,
        before,
        after: Some(stored_text(&c.change.after)),
        first_line: c.change.first_line,
        reported: c.reported,
    }
}

fn text_of(t: StoredFileText) -> FileText {
    FileText {
        text: t.text,
        size: t.size,
        cut: t.cut,
    }
}

fn change_of(c: StoredFileChange) -> Result<ToolFileChange, Corrupt> {
    let before = match (c.before_kind, c.before) {
        (1, _) => Before::Absent,
        (2, b) => Before::Binary {
            size: b.map_or(0, |b| b.size),
        },
        (3, Some(b)) => Before::Text(text_of(b)),
        _ => return Err(Corrupt::Field("file change")),
    };
    Ok(ToolFileChange {
        reported: c.reported,
        tool_use_id: c.tool_use_id,
        change: FileChange {
            path: c.path.into(),
            before,
            after: text_of(c.after.ok_or(Corrupt::Field("file change"))?),
            first_line: c.first_line,
        },
    })
}

pub fn decode_entry(bytes: &[u8]) -> Result<TranscriptEntry, Corrupt> {
    let s = StoredEntry::decode(bytes)?;
    let role = match s.role {
        1 => Role::User,
        2 => Role::Assistant,
        3 => Role::System,
        _ => return Err(Corrupt::Field("role")),
    };
    Ok(TranscriptEntry {
        seq: s.seq,
        role,
        content_json: s.content_json,
        created_at_ms: s.created_at_ms,
        usage: s.usage.map(|u| usage_of(Some(u))),
        stop_reason: (!s.stop_reason.is_empty()).then(|| StopReason::parse(&s.stop_reason)),
        cache_point: s.cache_point,
        compact: s.compact.map(compact_of).transpose()?,
        file_changes: s
            .file_changes
            .into_iter()
            .map(change_of)
            .collect::<Result<_, _>>()?,
        rule_decisions: s
            .rule_decisions
            .into_iter()
            .map(decision_of)
            .collect::<Result<_, _>>()?,
    })
}

fn compact_of(c: StoredCompact) -> Result<CompactBoundary, Corrupt> {
    Ok(CompactBoundary {
        trigger: match c.trigger {
            1 => CompactTrigger::Auto,
            2 => CompactTrigger::Manual,
            3 => CompactTrigger::Overflow,
            _ => return Err(Corrupt::Field("compaction trigger")),
        },
        summary: c.summary,
        tokens_before: c.tokens_before,
        tokens_after: c.tokens_after,
        covers_through_seq: c.covers_through_seq,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn tool_results(changes: Vec<ToolFileChange>) -> TranscriptEntry {
        TranscriptEntry {
            seq: 4,
            role: Role::User,
            content_json: br#"[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]"#.to_vec(),
            created_at_ms: 9,
            usage: None,
            stop_reason: None,
            cache_point: None,
            compact: None,
            file_changes: changes,
            rule_decisions: Vec::new(),
        }
    }

    #[test]
    fn rule_decisions_round_trip_and_an_unknown_verdict_is_corrupt() {
        let decision = |id: &str, verdict, source: &str| RuleDecision {
            tool_use_id: id.into(),
            verdict,
            rule: "Bash(rm:*)".into(),
            source: source.into(),
        };
        let mut e = tool_results(Vec::new());
        e.rule_decisions = vec![
            decision("t1", RuleVerdict::Denied, "~/.claude/settings.json"),
            decision("t2", RuleVerdict::Allowed, "config.toml"),
            decision("t3", RuleVerdict::Asked, ""),
        ];
        assert_eq!(decode_entry(&encode_entry(&e)).unwrap(), e);
        let mut odd = StoredEntry::decode(encode_entry(&e).as_slice()).unwrap();
        odd.rule_decisions[1].verdict = 0;
        assert!(matches!(
            decode_entry(&odd.encode_to_vec()),
            Err(Corrupt::Field("rule decision"))
        ));
        // Older entries (no field 10) have none.
        let mut old = StoredEntry::decode(encode_entry(&e).as_slice()).unwrap();
        old.rule_decisions.clear();
        assert!(
            decode_entry(&old.encode_to_vec())
                .unwrap()
                .rule_decisions
                .is_empty()
        );
    }

    #[test]
    fn file_changes_round_trip_and_older_entries_have_none() {
        let text = |t: &str, cut| FileText {
            text: t.into(),
            size: 100,
            cut,
        };
        let change = |id: &str, before| ToolFileChange {
            reported: false,
            tool_use_id: id.into(),
            change: FileChange {
                path: "/w/a.txt".into(),
                before,
                after: text("after\n", true),
                first_line: 7,
            },
        };
        let e = tool_results(vec![
            change("t1", Before::Text(text("before\n", false))),
            change("t2", Before::Absent),
            change("t3", Before::Binary { size: 12 }),
        ]);
        assert_eq!(decode_entry(&encode_entry(&e)).unwrap(), e);
        // An entry stored before changes were recorded (no field 9).
        let mut old = StoredEntry::decode(encode_entry(&e).as_slice()).unwrap();
        old.file_changes.clear();
        assert_eq!(
            decode_entry(&old.encode_to_vec()).unwrap(),
            tool_results(Vec::new())
        );
        // A change of a kind this daemon does not know is corrupt, not guessed.
        let mut odd = StoredEntry::decode(encode_entry(&e).as_slice()).unwrap();
        odd.file_changes[0].before_kind = 9;
        assert!(matches!(
            decode_entry(&odd.encode_to_vec()),
            Err(Corrupt::Field("file change"))
        ));
    }
}
