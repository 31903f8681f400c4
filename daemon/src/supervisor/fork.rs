//! Forking an agent (DESIGN §6): a new child that starts from everything
//! its parent knows. It gets a copy of the parent's stored prompt (system
//! prompt and tools array bytes), the parent's model, and the parent's
//! messages as stored bytes, then one message of its own; all of it is
//! stored with the fork, so a revival sends the same bytes. Asked for by an
//! agent (`Agent` with `subagent_type: "fork"`) or by a client
//! (`ForkAgent`).

use std::sync::Arc;

use serde_json::json;

use super::Supervisor;
use super::create::{Prepared, describe};
use crate::agent::{fork, turn, worktree_notice};
use crate::config::fork_profile;
use crate::domain::{
    AgentName, AgentRecord, FORK_MAX_TURNS, FORK_TYPE, ForkTools, ForkTurns, Isolation,
    PromptContext, QuerySource, Role, ToolAllowlist, TranscriptEntry, json_bytes, now_ms,
};
use crate::error::AgentdError;
use crate::model::{MessageBytes, ModelSpec, Provider};
use crate::worktree;

/// A fork, as asked for, parsed and checked at the edge that received it.
#[derive(Debug, Clone, Default)]
pub struct ForkRequest {
    pub directive: String,
    pub name: Option<AgentName>,
    /// None: the directive's first line.
    pub description: Option<String>,
    pub fork_turns: ForkTurns,
    /// What it may run of its parent's tools.
    pub tools: ForkTools,
    pub isolation: Isolation,
    /// With worktree isolation: what to branch from (None: the parent
    /// checkout's HEAD).
    pub base: Option<String>,
    /// Nobody follows it in the foreground (always so for an agent's fork).
    pub background: bool,
    /// The parent as it was when this user turn began (DESIGN §23): its
    /// context up to there and, with a worktree, that checkpoint's files.
    /// A client's fork only.
    pub at_turn: Option<u32>,
    /// A cap on what the fork and its descendants spend (DESIGN §24).
    pub budget: Option<crate::domain::Budget>,
}

/// Who asks for a fork.
pub(super) enum Origin<'a> {
    /// A client (`ForkAgent`): the conversation is read from the store.
    Client,
    /// The parent's own `Agent` call, with the conversation it sends.
    Call {
        tool_use_id: &'a str,
        history: &'a [(u64, MessageBytes)],
    },
}

/// What a fork may run: its parent's tools narrowed by `fork_tools` or a
/// profile (a fork never gains a tool its parent could not run).
fn allowed_tools(
    parent: Option<&ToolAllowlist>,
    asked: Option<ToolAllowlist>,
) -> Option<ToolAllowlist> {
    match (parent, asked) {
        (None, asked) => asked,
        (Some(parent), None) => Some(parent.clone()),
        (Some(parent), Some(asked)) => Some(parent.and(&asked)),
    }
}

impl Supervisor {
    /// `ForkAgent`: forks the agent `query` names (by id, prefix or name):
    /// running, idle, ended, or from before a restart.
    pub async fn fork(
        self: &Arc<Self>,
        query: &str,
        req: ForkRequest,
    ) -> Result<AgentRecord, AgentdError> {
        let parent = self.resolve(query)?;
        let prepared = self.prepare_fork(&parent, &req, Origin::Client)?;
        self.store_and_start(prepared, None).await
    }

    /// Validates a fork of `parent` and builds it. Stores nothing but the
    /// reservation of its short id; every refusal comes before that.
    pub(super) fn prepare_fork(
        &self,
        parent: &AgentRecord,
        req: &ForkRequest,
        origin: Origin<'_>,
    ) -> Result<Prepared, AgentdError> {
        self.admit("fork's directive", &req.directive)?;
        if let Some(refusal) = super::external_agents::no_fork(parent) {
            return Err(refusal);
        }
        let directive = req.directive.trim();
        let profile = match &req.tools {
            ForkTools::Profile(name) => {
                Some(fork_profile::load(name, &parent.cwd).map_err(AgentdError::invalid)?)
            }
            _ => None,
        };
        if req.isolation != Isolation::Worktree && !parent.cwd.is_dir() {
            return Err(AgentdError::refused(format!(
                "agent {}'s working directory {} is gone (a worktree removed when it ended with no changes?); fork it with --worktree to give the fork a tree of its own",
                parent.short_id,
                parent.cwd.display()
            )));
        }
        let parent_prompt = self
            .store
            .get_prompt(parent.id)?
            .filter(|p| p.mcp_json.is_empty() || crate::mcp::Setup::parse(&p.mcp_json).is_ok())
            .ok_or_else(|| {
                AgentdError::refused(format!(
                    "agent {} cannot be forked: its stored prompt is gone or cannot be read",
                    parent.short_id
                ))
            })?;
        let loaded;
        let mut tree_files = None;
        let history: &[(u64, MessageBytes)] = match (&origin, req.at_turn) {
            (Origin::Call { history, .. }, None) => history,
            (Origin::Call { .. }, Some(_)) => {
                return Err(AgentdError::invalid(
                    "a fork at a turn is a client's (agentctl fork --at); an agent forks from where it is",
                ));
            }
            (Origin::Client, None) => {
                loaded = self.conversation_of(parent)?;
                &loaded
            }
            (Origin::Client, Some(n)) => {
                let (messages, files) =
                    self.fork_point(parent, n, req.isolation == Isolation::Worktree)?;
                tree_files = files;
                loaded = messages;
                &loaded
            }
        };
        let Some(&(last_seq, _)) = history.last() else {
            return Err(AgentdError::refused(format!(
                "agent {} has no conversation to fork yet",
                parent.short_id
            )));
        };
        let messages: Vec<MessageBytes> = history.iter().map(|(_, m)| m.clone()).collect();
        let kept = fork::inherited(&messages, req.fork_turns);
        let hint = profile.as_ref().and_then(|p| p.hint.as_deref());
        let conversation = fork::forked_conversation(&kept, &fork::directive_text(directive, hint));

        let spec = ModelSpec::parse(&parent.model)?;
        let provider = Provider::from_spec(&spec, &parent.cwd, self.settings.models())?;
        if let Some(name) = &req.name {
            self.ensure_name_free(name.as_str())?;
        }
        let asked = match &req.tools {
            ForkTools::Parent => None,
            ForkTools::Only(list) => Some(list.clone()),
            ForkTools::Profile(_) => profile.as_ref().map(|p| p.tools.clone()),
        };
        let prompt = PromptContext {
            system_json: parent_prompt.system_json,
            tools_json: parent_prompt.tools_json,
            allowed_tools: allowed_tools(parent_prompt.allowed_tools.as_ref(), asked),
            // The parent's servers and tools, as its tools array declares them.
            mcp_json: parent_prompt.mcp_json,
        };

        let (id, short_id) = self.store.issue_agent_id()?;
        let plan = self.plan_tree(req.isolation, &parent.cwd, req.base.as_deref(), &short_id)?;
        let now = now_ms();
        let mut record = AgentRecord::new(id, short_id, now);
        record.worktree = plan.as_ref().map(worktree::Plan::record);
        record.cwd = plan
            .as_ref()
            .map_or_else(|| parent.cwd.clone(), |p| p.cwd.clone());
        inherit(&mut record, parent, req, &origin);
        self.sandbox_admits(&record)?;

        let note = json!([{
            "type": "agentd_note",
            "kind": "fork",
            "parent": parent.id.to_string(),
            "parent_seq": last_seq,
            "fork_turns": req.fork_turns.to_string(),
            "inherited": kept.len(),
            "fork_profile": profile.as_ref().map(|p| p.name.as_str()),
            "allowed_tools": prompt.allowed_tools.as_ref().map(ToolAllowlist::names),
        }]);
        let entries = fork_entries(&note, conversation, &record, now);
        tracing::info!(parent = %parent.id, fork = %id, inherited = kept.len(), "forking");
        Ok(Prepared {
            mcp_pending: None,
            record,
            prompt,
            provider: Some(provider),
            entries,
            fan_out: self.fan_outs.join(parent.id, last_seq, req.fork_turns),
            worktree: plan,
            tree_files,
            budget: req.budget,
            limits: crate::domain::FamilyLimits::default(), // of no type
        })
    }

    /// A stored agent's conversation, as a client's fork inherits it.
    fn conversation_of(
        &self,
        parent: &AgentRecord,
    ) -> Result<Vec<(u64, MessageBytes)>, AgentdError> {
        turn::load_conversation(&self.store, parent)
            .map(|(messages, ..)| messages)
            .map_err(|e| {
                AgentdError::refused(format!("agent {} cannot be forked: {e}", parent.short_id))
            })
    }
}

/// What a fork takes from its parent: model, mode, sandbox and depth; and
/// who it is: its name, description and origin.
fn inherit(record: &mut AgentRecord, parent: &AgentRecord, req: &ForkRequest, origin: &Origin<'_>) {
    record.name = req.name.clone().map(String::from).unwrap_or_default();
    record.description = req
        .description
        .clone()
        .unwrap_or_else(|| describe(req.directive.trim()));
    record.subagent_type = FORK_TYPE.to_string();
    record.query_source = QuerySource::Fork;
    record.background = req.background || matches!(origin, Origin::Call { .. });
    record.parent = Some(parent.id);
    if let Origin::Call { tool_use_id, .. } = origin {
        record.parent_tool_use_id = tool_use_id.to_string();
    }
    record.model = parent.model.clone();
    record.max_turns = FORK_MAX_TURNS;
    record.permission_mode = parent.permission_mode;
    record.depth = parent.depth + 1;
    record.sandbox = parent.sandbox;
    record.network = parent.network;
    record.network_allow = parent.network_allow.clone();
    // Its tools array is its parent's, MCP tools included.
    record.mcp_servers = parent.mcp_servers.clone();
    record.mcp_notes = parent.mcp_notes.clone();
}

/// A fork's transcript: the note of where it came from, the inherited
/// messages byte for byte, and its directive (with the worktree notice
/// after it, so the bytes before stay the siblings' shared prefix).
fn fork_entries(
    note: &serde_json::Value,
    conversation: Vec<MessageBytes>,
    record: &AgentRecord,
    now: i64,
) -> Vec<TranscriptEntry> {
    let mut entries = Vec::with_capacity(conversation.len() + 1);
    entries.push(TranscriptEntry {
        seq: 0,
        role: Role::System,
        content_json: json_bytes(note),
        created_at_ms: now,
        usage: None,
        stop_reason: None,
        cache_point: None,
        compact: None,
        file_changes: Vec::new(),
        rule_decisions: Vec::new(),
    });
    for (seq, m) in (1u64..).zip(conversation) {
        entries.push(TranscriptEntry {
            seq,
            role: m.role,
            content_json: m.content_json.to_vec(),
            created_at_ms: now,
            usage: None,
            stop_reason: None,
            cache_point: m.cache_point.map(|p| p as u32),
            compact: None,
            file_changes: Vec::new(),
            rule_decisions: Vec::new(),
        });
    }
    if let (Some(wt), Some(last)) = (record.worktree.as_ref(), entries.last_mut()) {
        last.content_json =
            worktree_notice::append_to(&last.content_json, &worktree_notice::text(wt, &record.cwd));
    }
    entries
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fork_never_gains_a_tool_its_parent_could_not_run() {
        use crate::domain::ToolName::{self, *};
        let only = |t: &[ToolName]| ToolAllowlist::only(t);
        assert_eq!(allowed_tools(None, None), None);
        assert_eq!(
            allowed_tools(None, Some(only(&[Read]))),
            Some(only(&[Read]))
        );
        assert_eq!(
            allowed_tools(Some(&only(&[Read, Grep])), None),
            Some(only(&[Read, Grep]))
        );
        assert_eq!(
            allowed_tools(Some(&only(&[Read, Grep])), Some(only(&[Grep, Bash]))),
            Some(only(&[Grep]))
        );
        assert_eq!(
            allowed_tools(Some(&only(&[Read])), Some(only(&[]))),
            Some(only(&[]))
        );
        // A parent limited to built-in tools cannot hand its fork an MCP
        // tool.
        let asked = ToolAllowlist::parse(&["Read".into(), "mcp__gh__*".into()]).unwrap();
        let fork = allowed_tools(Some(&only(&[Read])), Some(asked)).unwrap();
        assert!(!fork.has_mcp());
    }
}
