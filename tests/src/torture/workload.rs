//! The torture run's clients: they create agents of every kind, send
//! messages, pause agents, attach and record what they are shown, and
//! attach without ever reading. Every choice comes from the seeded
//! generator; what happens concurrently inside the daemon does not.

use std::path::Path;
use std::time::Duration;

use agentd_shared::proto as pb;
use rand::Rng;
use rand::rngs::StdRng;
use tokio::task::JoinHandle;
use tokio_stream::wrappers::ReceiverStream;

use super::ledger::{Paused, Sent, SharedLedger, Shown};
use super::model::tag;
use crate::{ApiClient, attach_start};

/// The model every agent of the run uses (the mock, as Anthropic).
pub const MODEL: &str = "anthropic:claude-torture";

/// Kinds of top-level agents.
#[derive(Clone, Copy, Debug)]
enum Kind {
    /// Bash steps only.
    Worker,
    /// Starts background subagents, then a Bash step.
    Parent,
    /// A Bash step, then a fan-out of forks.
    Forker,
    /// Bash steps in a worktree of its own (its work must be kept).
    Tree,
    /// A Bash step, then a long answer streamed at full speed.
    Chatty,
    /// Bash steps with the context outgrowing the window between them: a
    /// compaction (DESIGN §17) a kill may land inside.
    Compacting,
}

impl Kind {
    const ALL: [Kind; 6] = [
        Kind::Worker,
        Kind::Parent,
        Kind::Forker,
        Kind::Tree,
        Kind::Chatty,
        Kind::Compacting,
    ];

    /// Its bit in `Ledger::kinds_made`.
    fn bit(self) -> u8 {
        1 << self as u8
    }
}

/// One cycle's clients (between two kills).
pub struct Cycle {
    pub client: ApiClient,
    pub ledger: SharedLedger,
    pub socket: std::path::PathBuf,
    pub project: std::path::PathBuf,
    /// The merge lane's repository (`merge_lane`).
    pub merge_repo: std::path::PathBuf,
    /// Attached clients (recording, or never reading): aborted at the kill.
    pub tasks: Vec<JoinHandle<()>>,
    /// Counts for the report.
    pub created: u64,
    pub sends: u64,
    pub pauses: u64,
    pub attaches: u64,
    pub stalled_attaches: u64,
    /// Agents refused for want of disk space.
    pub disk_refusals: u64,
    /// Requests refused that the workload expected to succeed.
    pub refusals: Vec<String>,
    /// Merges asked for, and merges answered as done.
    pub merges: u64,
    pub merged: u64,
    /// Rewinds asked for, and answered as done.
    pub rewinds: u64,
    pub rewound: u64,
    /// The data directory's disk fills in this run: a turn whose
    /// checkpoint could not be written has none, and its rewind is
    /// refused saying so.
    pub disk_fills: bool,
}

impl Cycle {
    pub fn new(
        client: ApiClient,
        ledger: SharedLedger,
        socket: &Path,
        project: &Path,
        merge_repo: &Path,
    ) -> Cycle {
        Cycle {
            client,
            ledger,
            socket: socket.to_path_buf(),
            project: project.to_path_buf(),
            merge_repo: merge_repo.to_path_buf(),
            tasks: Vec::new(),
            created: 0,
            sends: 0,
            pauses: 0,
            attaches: 0,
            stalled_attaches: 0,
            disk_refusals: 0,
            refusals: Vec::new(),
            merges: 0,
            merged: 0,
            rewinds: 0,
            rewound: 0,
            disk_fills: false,
        }
    }

    /// One random action. `agents` is the latest listing; `may_create`
    /// bounds the number of live agents.
    pub async fn act(&mut self, rng: &mut StdRng, agents: &[pb::Agent], may_create: bool) {
        let roll = rng.random_range(0..100);
        // The merge lane's agents are the lane's alone: a message would
        // run one again after its work was merged.
        let lane_ids = self.ledger.lock().lane_ids.clone();
        let others: Vec<&pb::Agent> = agents
            .iter()
            .filter(|a| !lane_ids.contains(&a.id))
            .collect();
        let pick = |rng: &mut StdRng| {
            (!others.is_empty()).then(|| others[rng.random_range(0..others.len())].clone())
        };
        match roll {
            0..30 if may_create => self.create(rng).await,
            30..50 => {
                if let Some(a) = pick(rng) {
                    self.send(rng, &a).await;
                }
            }
            50..58 => {
                // A running agent: most agents have ended by the time they
                // are picked, and a pause must land to be held to.
                let running: Vec<&pb::Agent> = others
                    .iter()
                    .copied()
                    .filter(|a| a.status == pb::AgentStatus::Running as i32)
                    .collect();
                let chosen = (!running.is_empty())
                    .then(|| running[rng.random_range(0..running.len())].clone());
                if let Some(a) = chosen {
                    let paused = self
                        .client
                        .pause_agent(pb::PauseAgentRequest { id: a.id })
                        .await;
                    match paused {
                        Ok(answer) => {
                            self.pauses += 1;
                            let agent = answer.into_inner();
                            if agent.status == pb::AgentStatus::Paused as i32 {
                                let mut ledger = self.ledger.lock();
                                let sent_before = ledger.sent.len();
                                ledger.paused.entry(agent.id).or_default().push(Paused {
                                    at: agent.transcript_len,
                                    sent_before,
                                });
                            }
                        }
                        // It ended meanwhile, or the daemon is going down,
                        // or it stopped on a full disk that keeps its new
                        // state off the disk (not acknowledged, so not held
                        // to).
                        Err(s)
                            if matches!(
                                s.code(),
                                tonic::Code::ResourceExhausted
                                    | tonic::Code::FailedPrecondition
                                    | tonic::Code::Unavailable
                                    | tonic::Code::Unknown
                                    | tonic::Code::Cancelled
                            ) => {}
                        Err(s) => self.refusals.push(format!(
                            "PauseAgent: {:?} {}",
                            s.code(),
                            s.message()
                        )),
                    }
                }
            }
            58..85 => {
                if let Some(a) = pick(rng) {
                    let from = if rng.random_bool(0.5) {
                        0
                    } else {
                        a.transcript_len.saturating_sub(2)
                    };
                    self.attach(&a.id, from);
                }
            }
            85..90 => {
                // Mostly on an agent with long answers, whose output fills
                // the stream's flow-control window and the socket.
                let chatty = self.ledger.lock().chatty.clone();
                let id = if !chatty.is_empty() && rng.random_bool(0.7) {
                    Some(chatty[rng.random_range(0..chatty.len())].clone())
                } else {
                    pick(rng).map(|a| a.id)
                };
                if let Some(id) = id {
                    self.attach_and_never_read(&id).await;
                }
            }
            90..94 => self.merge_lane(agents).await,
            94..97 => self.rewind_lane(agents).await,
            _ => {
                // Somebody reading a transcript is shown it too.
                if let Some(a) = pick(rng) {
                    self.read_transcript(&a.id).await;
                }
            }
        }
    }

    /// The merge lane, one agent at a time in a repository of its own: an
    /// agent in a worktree makes a change; once it has ended, the person
    /// commits it with 300 files more and merges it — a merge
    /// the next kill may land in. After every restart that repository must
    /// be clean (`merge_repo_clean`): whole or undone, never half.
    async fn merge_lane(&mut self, agents: &[pb::Agent]) {
        let lane = self.ledger.lock().lane.clone();
        let Some(lane) = lane else {
            let n = {
                let mut ledger = self.ledger.lock();
                ledger.lane_attempts += 1;
                ledger.lane_attempts - 1
            };
            let key = format!("m{n}");
            let request = pb::CreateAgentRequest {
                prompt: format!("Change the repository. {}", tag(&key, "G1")),
                model: MODEL.into(),
                name: key,
                cwd: self.merge_repo.display().to_string(),
                background: true,
                permission_mode: pb::PermissionMode::Bypass as i32,
                isolation: pb::Isolation::Worktree as i32,
                ..Default::default()
            };
            if let Ok(agent) = self.client.create_agent(request).await {
                let id = agent.into_inner().id;
                let mut ledger = self.ledger.lock();
                ledger.created.push(id.clone());
                ledger.lane_ids.push(id.clone());
                ledger.lane = Some(id);
            }
            return;
        };
        let Some(agent) = agents.iter().find(|a| a.id == lane) else {
            return;
        };
        if agent.status != pb::AgentStatus::Completed as i32 || agent.worktree_path.is_empty() {
            return;
        }
        let tree = Path::new(&agent.worktree_path);
        if !tree.is_dir() {
            // Removed clean (nothing to merge): the next agent.
            self.ledger.lock().lane = None;
            return;
        }
        // The agent's change and 300 files of the person's, committed once
        // (a tree made after an earlier lane's merge already holds that
        // lane's files: these are named by this agent).
        let bulk = tree.join(format!("bulk-{lane}"));
        if !bulk.is_dir() {
            let _ = std::fs::create_dir_all(&bulk);
            for i in 0..300 {
                let _ = std::fs::write(bulk.join(format!("{i}.txt")), format!("{lane} {i}\n"));
            }
        }
        let _ = crate::gitrepo::git_out(tree, &["add", "-A"]);
        let _ = crate::gitrepo::git_out(
            tree,
            &["commit", "-qm", "the person commits the agent's work"],
        );
        self.merges += 1;
        match self
            .client
            .merge_agent(pb::MergeAgentRequest {
                id: lane,
                squash: false,
            })
            .await
        {
            Ok(_) => {
                self.merged += 1;
                self.ledger.lock().lane = None;
            }
            // The kill landed, or the disk is full (the merge's journal
            // cannot be written, so the checkout is not touched): the next
            // cycle merges again (up to date if the restart finished it).
            Err(s)
                if matches!(
                    s.code(),
                    tonic::Code::Unavailable
                        | tonic::Code::Unknown
                        | tonic::Code::Cancelled
                        | tonic::Code::ResourceExhausted
                ) => {}
            Err(s) => {
                self.refusals
                    .push(format!("MergeAgent: {:?} {}", s.code(), s.message()));
                self.ledger.lock().lane = None;
            }
        }
    }

    /// The rewind lane, one agent at a time in a directory of its own: an
    /// agent appends to its side log in two Bash steps; once it has ended,
    /// it is rewound to the beginning of its first turn (its files only) —
    /// a rewind the next kill may land in. A rewind asked for is finished
    /// by the restart if the kill cut it short: its directory then holds
    /// no side log (`rewound_dirs_clean`).
    async fn rewind_lane(&mut self, agents: &[pb::Agent]) {
        let lane = self.ledger.lock().rewind_lane.clone();
        let Some(lane) = lane else {
            let n = {
                let mut ledger = self.ledger.lock();
                ledger.rewind_attempts += 1;
                ledger.rewind_attempts - 1
            };
            let key = format!("w{n}");
            let dir = self.merge_repo.with_file_name(format!("rewind-{n}"));
            if std::fs::create_dir_all(&dir).is_err() {
                return;
            }
            let request = pb::CreateAgentRequest {
                prompt: format!("Record two lines. {}", tag(&key, "B2")),
                model: MODEL.into(),
                name: key,
                cwd: dir.display().to_string(),
                background: true,
                permission_mode: pb::PermissionMode::Bypass as i32,
                ..Default::default()
            };
            if let Ok(agent) = self.client.create_agent(request).await {
                let id = agent.into_inner().id;
                let mut ledger = self.ledger.lock();
                ledger.created.push(id.clone());
                ledger.lane_ids.push(id.clone());
                ledger.rewind_lane = Some(id);
            }
            return;
        };
        let Some(agent) = agents.iter().find(|a| a.id == lane) else {
            return;
        };
        if agent.status != pb::AgentStatus::Completed as i32 {
            return;
        }
        // Asked for: from here its side log may be gone, whatever the
        // answer (a kill leaves the restart to finish it).
        self.ledger
            .lock()
            .rewound
            .push((lane.clone(), std::path::PathBuf::from(&agent.cwd)));
        self.rewinds += 1;
        let lane_id = lane.clone();
        match self
            .client
            .rewind_agent(pb::RewindAgentRequest {
                id: lane,
                to_turn: 1,
                scope: pb::RewindScope::Code as i32,
                force: true,
            })
            .await
        {
            Ok(_) => {
                self.rewound += 1;
                self.ledger.lock().rewind_lane = None;
            }
            Err(s)
                if matches!(
                    s.code(),
                    tonic::Code::Unavailable
                        | tonic::Code::Unknown
                        | tonic::Code::Cancelled
                        | tonic::Code::ResourceExhausted
                ) => {}
            // The disk was full when its first turn began: no checkpoint
            // was written (the daemon said so, and logged it), so nothing
            // is rewound.
            Err(s)
                if self.disk_fills
                    && s.code() == tonic::Code::FailedPrecondition
                    && s.message().contains("has no checkpoint of its files") =>
            {
                let mut ledger = self.ledger.lock();
                ledger.rewound.retain(|(id, _)| id != &lane_id);
                ledger.rewind_lane = None;
            }
            Err(s) => {
                self.refusals
                    .push(format!("RewindAgent: {:?} {}", s.code(), s.message()));
                self.ledger.lock().rewind_lane = None;
            }
        }
    }

    async fn create(&mut self, rng: &mut StdRng) {
        let (n, missing) = {
            let mut ledger = self.ledger.lock();
            ledger.attempts += 1;
            let missing = Kind::ALL
                .iter()
                .position(|k| ledger.kinds_made & k.bit() == 0);
            (ledger.attempts - 1, missing)
        };
        // Until one of each kind has been created, the next is a kind not
        // made yet, so even a short run (or one whose first creations a
        // kill cut short) has every kind; then at random.
        let kind = match missing {
            Some(i) => Kind::ALL[i],
            None => match rng.random_range(0..10) {
                0..2 => Kind::Worker,
                2..4 => Kind::Parent,
                4..6 => Kind::Forker,
                6..8 => Kind::Tree,
                8 => Kind::Chatty,
                _ => Kind::Compacting,
            },
        };
        // Names must not be all hex digits.
        let key = format!("t{n}");
        // Now and then a step that leaves processes behind, or reads a
        // FIFO (hostile tools: none may outlive its agent, none may hang).
        let hostile = match rng.random_range(0..3) {
            0 => "V1",
            1 => "P1",
            _ => "",
        };
        // First, so the agent is still running (and its leftovers with it)
        // when a kill comes.
        let plan = match kind {
            Kind::Worker => format!("{hostile}B{}", rng.random_range(2..6)),
            // Half of the parents also start a read-only child that tries
            // to get its unconfined sibling to act for it.
            Kind::Parent if rng.random_bool(0.5) => format!("S{}R1B1", rng.random_range(1..4)),
            Kind::Parent => format!("S{}B1", rng.random_range(1..4)),
            // Half of the fan-outs are of a compacted parent.
            Kind::Forker if rng.random_bool(0.5) => format!("B1C1F{}", rng.random_range(2..4)),
            Kind::Forker => format!("B1F{}", rng.random_range(2..4)),
            Kind::Tree => format!("{hostile}B{}", rng.random_range(1..4)),
            Kind::Chatty => "B1L1".to_string(),
            Kind::Compacting => format!("B{}C1B{}", rng.random_range(1..3), rng.random_range(1..4)),
        };
        let request = pb::CreateAgentRequest {
            prompt: format!("Work through the plan. {}", tag(&key, &plan)),
            model: MODEL.into(),
            name: key.clone(),
            cwd: self.project.display().to_string(),
            background: true,
            permission_mode: pb::PermissionMode::Bypass as i32,
            isolation: if matches!(kind, Kind::Tree) {
                pb::Isolation::Worktree as i32
            } else {
                pb::Isolation::Unspecified as i32
            },
            ..Default::default()
        };
        self.created += 1;
        match self.client.create_agent(request).await {
            Ok(agent) => {
                let id = agent.into_inner().id;
                let mut ledger = self.ledger.lock();
                ledger.kinds_made |= kind.bit();
                if matches!(kind, Kind::Chatty) {
                    ledger.chatty.push(id.clone());
                }
                ledger.created.push(id);
            }
            // The daemon may be going down or the disk full; anything else
            // is reported.
            Err(s)
                if matches!(
                    s.code(),
                    tonic::Code::Unavailable | tonic::Code::Unknown | tonic::Code::Cancelled
                ) => {}
            Err(s) if s.code() == tonic::Code::ResourceExhausted => {
                self.disk_refusals += 1;
                let why: String = s.message().chars().take(120).collect();
                self.ledger.lock().refused_keys.push((key, why));
            }
            Err(s) => {
                self.refusals
                    .push(format!("CreateAgent {key}: {:?} {}", s.code(), s.message()))
            }
        }
    }

    async fn send(&mut self, rng: &mut StdRng, agent: &pb::Agent) {
        let nonce = format!("nonce-{}", rng.random::<u64>());
        self.sends += 1;
        let result = self
            .client
            .send_message(pb::SendMessageRequest {
                id: agent.id.clone(),
                message: format!("{nonce}: how is it going?"),
                ..Default::default()
            })
            .await;
        self.ledger.lock().sent.push(Sent {
            agent: agent.id.clone(),
            nonce,
            refused: result.err().map(|s| s.code()),
        });
    }

    async fn read_transcript(&mut self, id: &str) {
        if let Ok(page) = self
            .client
            .get_transcript(pb::GetTranscriptRequest {
                id: id.to_string(),
                from_seq: 0,
                limit: 0,
            })
            .await
        {
            for e in page.into_inner().entries {
                self.ledger.show(
                    id,
                    e.seq,
                    Shown {
                        role: e.role,
                        content: e.content_json,
                    },
                    false,
                );
            }
        }
    }

    /// A client that records every entry it is shown until the kill.
    fn attach(&mut self, id: &str, from_seq: u64) {
        self.attaches += 1;
        let mut client = self.client.clone();
        let ledger = self.ledger.clone();
        let id = id.to_string();
        self.tasks.push(tokio::spawn(async move {
            let (tx, rx) = tokio::sync::mpsc::channel(4);
            if tx.send(attach_start(&id, from_seq)).await.is_err() {
                return;
            }
            let Ok(response) = client.attach(ReceiverStream::new(rx)).await else {
                return;
            };
            let mut stream = response.into_inner();
            while let Ok(Some(event)) = stream.message().await {
                if let Some(pb::attach_event::Event::Entry(e)) = event.event {
                    ledger.show(
                        &id,
                        e.seq,
                        Shown {
                            role: e.role,
                            content: e.content_json,
                        },
                        true,
                    );
                }
            }
            drop(tx);
        }));
    }

    /// A client on a connection of its own that attaches and never reads:
    /// the daemon must go on serving everyone else.
    async fn attach_and_never_read(&mut self, id: &str) {
        let Ok(mut client) = agentd_shared::client::agent_client(&self.socket).await else {
            return;
        };
        self.stalled_attaches += 1;
        let id = id.to_string();
        self.tasks.push(tokio::spawn(async move {
            let (tx, rx) = tokio::sync::mpsc::channel(4);
            if tx.send(attach_start(&id, 0)).await.is_err() {
                return;
            }
            let response = client.attach(ReceiverStream::new(rx)).await;
            // Hold the stream unread until the task is aborted.
            tokio::time::sleep(Duration::from_secs(3600)).await;
            drop((response, tx));
        }));
    }

    /// Ends the attached clients (the daemon is gone or going).
    pub fn abort(&mut self) {
        for t in self.tasks.drain(..) {
            t.abort();
        }
    }
}
