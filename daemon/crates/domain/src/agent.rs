//! An agent's registry record and the closed sets of values it holds.

use super::{AgentWorktree, ExternalRun, InstructionsLoaded, McpServerSummary, SandboxMode};
use std::fmt;
use std::path::PathBuf;

use super::{AgentId, HostPattern, NetworkMode, PlanItem, QuerySource, ShortId, ToolRef};

/// An agent's lifecycle state (DESIGN §3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Status {
    Pending,
    Running,
    Waiting,
    Paused,
    Completed,
    Failed,
    Cancelled,
    Interrupted,
}

impl Status {
    pub const ALL: [Status; 8] = [
        Status::Pending,
        Status::Running,
        Status::Waiting,
        Status::Paused,
        Status::Completed,
        Status::Failed,
        Status::Cancelled,
        Status::Interrupted,
    ];

    /// Live agents have (or should have) a turn loop running.
    pub fn is_live(self) -> bool {
        matches!(self, Status::Pending | Status::Running | Status::Waiting)
    }

    /// Terminal agents will not run again without being continued.
    pub fn is_terminal(self) -> bool {
        matches!(self, Status::Completed | Status::Failed | Status::Cancelled)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pending => "pending",
            Status::Running => "running",
            Status::Waiting => "waiting",
            Status::Paused => "paused",
            Status::Completed => "completed",
            Status::Failed => "failed",
            Status::Cancelled => "cancelled",
            Status::Interrupted => "interrupted",
        }
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Permission modes (DESIGN §8).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PermissionMode {
    /// Bash, Write and Edit ask first.
    Default,
    /// Only Bash asks.
    AcceptEdits,
    /// Read-only: Bash, Write and Edit are refused.
    Plan,
    /// Nothing asks.
    Bypass,
}

impl PermissionMode {
    /// The one of two modes that lets less run unasked: plan, then
    /// default, then accept-edits, then bypass.
    pub fn stricter(self, other: PermissionMode) -> PermissionMode {
        let rank = |m: PermissionMode| match m {
            PermissionMode::Plan => 3,
            PermissionMode::Default => 2,
            PermissionMode::AcceptEdits => 1,
            PermissionMode::Bypass => 0,
        };
        if rank(self) >= rank(other) {
            self
        } else {
            other
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            PermissionMode::Default => "default",
            PermissionMode::AcceptEdits => "accept-edits",
            PermissionMode::Plan => "plan",
            PermissionMode::Bypass => "bypass",
        }
    }

    /// The front-matter spelling (`permissionMode: acceptEdits`) and ours.
    pub fn parse(text: &str) -> Option<PermissionMode> {
        match text {
            "default" => Some(PermissionMode::Default),
            "acceptEdits" | "accept-edits" | "accept_edits" => Some(PermissionMode::AcceptEdits),
            "plan" => Some(PermissionMode::Plan),
            "bypassPermissions" | "bypass" => Some(PermissionMode::Bypass),
            _ => None,
        }
    }
}

/// Token usage as the provider reports it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cache_read_input_tokens: u64,
    pub cache_creation_input_tokens: u64,
}

impl Usage {
    pub fn add(&mut self, other: &Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cache_read_input_tokens += other.cache_read_input_tokens;
        self.cache_creation_input_tokens += other.cache_creation_input_tokens;
    }

    pub fn total(&self) -> u64 {
        self.input_tokens
            + self.output_tokens
            + self.cache_read_input_tokens
            + self.cache_creation_input_tokens
    }
}

/// Why an agent cannot be resumed (DESIGN §5). The names are stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResumeBlockedReason {
    TranscriptMissing,
    WorktreeMissing,
    CwdMissing,
    ModelUnavailable,
    ProfileInvalid,
    ForkContextMissing,
    AgentTypeUnknown,
    /// An external agent whose session cannot be reopened (it offers
    /// neither `session/load` nor `session/resume`), or whose entry is
    /// gone from config.toml.
    ExternalAgentCannotResume,
    /// Its family's budget is spent (DESIGN §24): it sends no more model
    /// requests until the budget is raised, which clears this.
    BudgetExhausted,
}

impl ResumeBlockedReason {
    pub fn as_str(self) -> &'static str {
        match self {
            ResumeBlockedReason::TranscriptMissing => "transcript_missing",
            ResumeBlockedReason::WorktreeMissing => "worktree_missing",
            ResumeBlockedReason::CwdMissing => "cwd_missing",
            ResumeBlockedReason::ModelUnavailable => "model_unavailable",
            ResumeBlockedReason::ProfileInvalid => "profile_invalid",
            ResumeBlockedReason::ForkContextMissing => "fork_context_missing",
            ResumeBlockedReason::AgentTypeUnknown => "agent_type_unknown",
            ResumeBlockedReason::ExternalAgentCannotResume => "external_agent_cannot_resume",
            ResumeBlockedReason::BudgetExhausted => "budget_exhausted",
        }
    }

    pub fn parse(text: &str) -> Option<ResumeBlockedReason> {
        [
            ResumeBlockedReason::TranscriptMissing,
            ResumeBlockedReason::WorktreeMissing,
            ResumeBlockedReason::CwdMissing,
            ResumeBlockedReason::ModelUnavailable,
            ResumeBlockedReason::ProfileInvalid,
            ResumeBlockedReason::ForkContextMissing,
            ResumeBlockedReason::AgentTypeUnknown,
            ResumeBlockedReason::ExternalAgentCannotResume,
            ResumeBlockedReason::BudgetExhausted,
        ]
        .into_iter()
        .find(|r| r.as_str() == text)
    }
}

/// A reason with the details a person needs to act on it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResumeBlocked {
    pub reason: ResumeBlockedReason,
    pub detail: String,
}

/// Where an agent works (DESIGN §9).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Isolation {
    /// In the working directory it was given.
    #[default]
    None,
    /// In a new git worktree of its own.
    Worktree,
}

/// Why a foreground waiter was released (DESIGN §4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReleaseReason {
    /// `agentctl bg`, Ctrl-B, the `Background` RPC.
    Request,
    /// The auto-background timer.
    Auto,
}

impl ReleaseReason {
    pub fn as_str(self) -> &'static str {
        match self {
            ReleaseReason::Request => "request",
            ReleaseReason::Auto => "auto",
        }
    }
}

/// An agent's registry record. Written whenever its state changes.
#[derive(Clone, Debug, PartialEq)]
pub struct AgentRecord {
    pub id: AgentId,
    /// Unique among every agent this store has issued (see `domain::id`).
    pub short_id: ShortId,
    /// Empty when the agent has none.
    pub name: String,
    pub description: String,
    pub subagent_type: String,
    pub status: Status,
    /// Nobody waits in the foreground for this run of the agent.
    pub background: bool,
    /// None for agents a client started.
    pub parent: Option<AgentId>,
    /// Who runs its queries: a client's agent, a subagent, or a fork (the
    /// recursion guard's first layer).
    pub query_source: QuerySource,
    /// The `Agent` tool call of the parent that started this agent.
    pub parent_tool_use_id: String,
    /// `<scheme>:<name>` as given (see `model::ModelSpec`).
    pub model: String,
    pub cwd: PathBuf,
    /// Unix milliseconds.
    pub created_at_ms: i64,
    pub updated_at_ms: i64,
    /// When this run of the agent started: for notification durations.
    pub started_at_ms: i64,
    /// Completed model turns (assistant messages persisted).
    pub turns: u32,
    pub usage: Usage,
    pub resume_blocked: Option<ResumeBlocked>,
    /// How its latest run ended, when it ended with words: the answer of
    /// a completed run, or why a failed one failed.
    pub outcome: Option<Outcome>,
    pub permission_mode: PermissionMode,
    pub max_turns: u32,
    pub tool_uses: u32,
    /// The git worktree it works in (its own, or a pinned one).
    pub worktree: Option<AgentWorktree>,
    /// How its tools are confined (`plan` mode makes it read-only).
    pub sandbox: SandboxMode,
    /// How its tools reach the network (as chosen; `effective_network`
    /// is what holds).
    pub network: NetworkMode,
    /// Hosts its proxy allows besides the daemon's list (its run's
    /// `--allow-host`, its agent type's, an external agent's API hosts).
    pub network_allow: Vec<HostPattern>,
    /// 0 for agents a client started; a child is its parent's depth + 1.
    pub depth: u32,
    /// Tools the user allowed "always" for this agent (an MCP tool by
    /// its wire name).
    pub always_allowed: Vec<ToolRef>,
    /// Entries in the transcript. Written with them, in the same
    /// transaction, by the transcript's only writer (the store keeps it no
    /// lower than the entries it is written with); `list` reads it here
    /// instead of searching each transcript for its end.
    pub transcript_len: u64,
    /// The instruction files its system prompt holds (frozen at creation;
    /// a fork has its parent's).
    pub instructions: InstructionsLoaded,
    /// Times its context was compacted (DESIGN §17).
    pub compactions: u32,
    /// Its MCP servers as listed at creation (DESIGN §18; a fork has its
    /// parent's).
    pub mcp_servers: Vec<McpServerSummary>,
    /// What it was not given of its MCP servers and why: a repository's
    /// server not approved, a `.mcp.json` that could not be read (a fork
    /// has its parent's).
    pub mcp_notes: Vec<String>,
    /// Its plan, as its latest successful `TodoWrite` call gave it (empty:
    /// none). Written by its turn loop only, durably before the call's
    /// result (`agent::plan`).
    pub plan: Vec<PlanItem>,
    /// Set when another coding agent runs it over ACP (DESIGN §19).
    pub external: Option<ExternalRun>,
}

/// How an agent's run ended, in its own words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The final text answer.
    Completed(String),
    /// Why it failed, in words a person can act on.
    Failed(String),
}

impl Outcome {
    /// The answer of a completed run ("" otherwise).
    pub fn result(outcome: Option<&Outcome>) -> &str {
        match outcome {
            Some(Outcome::Completed(text)) => text,
            _ => "",
        }
    }

    /// Why a run failed ("" otherwise).
    pub fn error(outcome: Option<&Outcome>) -> &str {
        match outcome {
            Some(Outcome::Failed(why)) => why,
            _ => "",
        }
    }
}

impl AgentRecord {
    /// The final answer of its latest run, if it completed ("" otherwise).
    pub fn result(&self) -> &str {
        Outcome::result(self.outcome.as_ref())
    }

    /// Why its latest run failed, if it did ("" otherwise).
    pub fn error(&self) -> &str {
        Outcome::error(self.outcome.as_ref())
    }

    /// A new record with every optional field empty.
    pub fn new(id: AgentId, short_id: ShortId, now_ms: i64) -> AgentRecord {
        AgentRecord {
            id,
            short_id,
            name: String::new(),
            description: String::new(),
            subagent_type: String::new(),
            status: Status::Pending,
            background: false,
            parent: None,
            query_source: QuerySource::Client,
            parent_tool_use_id: String::new(),
            model: String::new(),
            cwd: PathBuf::new(),
            created_at_ms: now_ms,
            updated_at_ms: now_ms,
            started_at_ms: now_ms,
            turns: 0,
            usage: Usage::default(),
            resume_blocked: None,
            outcome: None,
            permission_mode: PermissionMode::Bypass,
            max_turns: 0,
            tool_uses: 0,
            worktree: None,
            sandbox: SandboxMode::default(),
            network: NetworkMode::default(),
            network_allow: Vec::new(),
            depth: 0,
            always_allowed: Vec::new(),
            transcript_len: 0,
            instructions: InstructionsLoaded::default(),
            compactions: 0,
            mcp_servers: Vec::new(),
            mcp_notes: Vec::new(),
            plan: Vec::new(),
            external: None,
        }
    }

    /// The confinement its tools run under: `plan` mode is read-only
    /// whatever the sandbox says.
    pub fn effective_sandbox(&self) -> SandboxMode {
        if self.permission_mode == PermissionMode::Plan {
            self.sandbox.stricter(SandboxMode::ReadOnly)
        } else {
            self.sandbox
        }
    }

    /// How its tools reach the network: unconfined tools reach it
    /// directly, whatever was chosen.
    pub fn effective_network(&self) -> NetworkMode {
        if self.effective_sandbox() == SandboxMode::Off {
            NetworkMode::Full
        } else {
            self.network
        }
    }

    /// DESIGN §3: messages can reach running, waiting, paused, completed and
    /// interrupted agents that carry no resume-blocked reason.
    pub fn can_message(&self) -> bool {
        matches!(
            self.status,
            Status::Running
                | Status::Waiting
                | Status::Paused
                | Status::Completed
                | Status::Interrupted
        ) && self.resume_blocked.is_none()
    }

    /// Whether its parent gets a task notification when it ends in the
    /// background: yes when the parent asked for it (an `Agent` call); not
    /// for a fork a client asked for, whose parent never asked and would be
    /// woken (and billed) to read an answer to nothing.
    pub fn reports_to_parent(&self) -> bool {
        self.parent.is_some()
            && !(self.query_source == QuerySource::Fork && self.parent_tool_use_id.is_empty())
    }
}
