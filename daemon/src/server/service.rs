//! The v1 `AgentService`: decodes requests, calls the supervisor, encodes
//! answers. No agent logic lives here.

use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;

use agentd_shared::proto as pb;
use agentd_shared::proto::agent_service_server::AgentService;
use futures::Stream;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status, Streaming};

use super::wire_cache::{self, Extras, WireCache};
use super::{attach, convert};
use crate::domain::{self, AgentRecord};
use crate::error::AgentdError;
use crate::supervisor::Supervisor;

/// Transcript page size when the client names none, and the most it may ask.
const DEFAULT_PAGE: u32 = 500;
const MAX_PAGE: u32 = 5000;

pub struct AgentApi {
    sup: Arc<Supervisor>,
    listed: WireCache,
}

impl AgentApi {
    pub fn new(sup: Arc<Supervisor>) -> Self {
        AgentApi {
            sup,
            listed: WireCache::default(),
        }
    }

    fn wire(&self, record: &AgentRecord) -> pb::Agent {
        wire_cache::agent(record, &self.extras(record))
    }

    /// What goes into `record`'s wire form besides the record.
    fn extras(&self, record: &AgentRecord) -> Extras {
        let id = record.id;
        let waiting_for = match record.status {
            // A running agent may wait for a request slot (DESIGN §24).
            domain::Status::Waiting | domain::Status::Running => self.sup.waiting_for(id),
            domain::Status::Interrupted if self.sup.resume_deferred_for_disk(id) => {
                Some("disk space: it resumes on its own once space is freed".to_string())
            }
            _ => None,
        };
        Extras {
            waiting_for,
            budget: self.sup.budget_view(id),
        }
    }
}

fn path_strings(paths: &[std::path::PathBuf]) -> Vec<String> {
    paths.iter().map(|p| p.display().to_string()).collect()
}

type BoxStream<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send>>;

#[tonic::async_trait]
impl AgentService for AgentApi {
    async fn get_status(
        &self,
        _req: Request<pb::GetStatusRequest>,
    ) -> Result<Response<pb::DaemonStatus>, Status> {
        let counts = self.sup.counts()?;
        let info = self.sup.info();
        let store = self.sup.store();
        Ok(Response::new(pb::DaemonStatus {
            corrupt_records: store.corrupt_count(),
            landlock_abi: crate::sandbox::kernel_abi(),
            containment: crate::sandbox::pid_namespace::support()
                .map(|m| m.describe().to_string())
                .unwrap_or_default(),
            containment_unavailable: crate::sandbox::pid_namespace::support()
                .err()
                .unwrap_or_default(),
            default_sandbox: convert::sandbox(self.sup.default_sandbox()) as i32,
            read_denied: path_strings(&self.sup.read_denials().paths),
            read_allowed: path_strings(&self.sup.read_denials().allowed),
            disk_full: store.is_full(),
            version: agentd_shared::VERSION.to_string(),
            socket: info.socket.display().to_string(),
            data_dir: info.data_dir.display().to_string(),
            uptime_secs: self.sup.uptime().as_secs(),
            pid: std::process::id(),
            socket_activated: info.socket_activated,
            config_path: info.config_path.display().to_string(),
            agents_total: counts.values().sum(),
            agents: counts
                .into_iter()
                .map(|(s, count)| pb::StatusCount {
                    status: convert::status(s) as i32,
                    count,
                })
                .collect(),
        }))
    }

    async fn create_agent(
        &self,
        req: Request<pb::CreateAgentRequest>,
    ) -> Result<Response<pb::Agent>, Status> {
        let new = convert::new_agent(req.into_inner())?;
        let record = self.sup.create(new).await?;
        Ok(Response::new(self.wire(&record)))
    }

    async fn fork_agent(
        &self,
        req: Request<pb::ForkAgentRequest>,
    ) -> Result<Response<pb::Agent>, Status> {
        let (parent, fork) = convert::fork_request(req.into_inner())?;
        let record = self.sup.fork(&parent, fork).await?;
        Ok(Response::new(self.wire(&record)))
    }

    async fn list_agents(
        &self,
        req: Request<pb::ListAgentsRequest>,
    ) -> Result<Response<pb::ListAgentsResponse>, Status> {
        let r = req.into_inner();
        let parent = if r.parent_id.is_empty() {
            None
        } else {
            Some(self.sup.resolve(&r.parent_id)?.id)
        };
        let records = self.sup.list(r.all, parent)?;
        let encoded = self.listed.encode(
            &records,
            |rec| self.extras(rec),
            wire_cache::agent,
            r.all && parent.is_none(),
        );
        Ok(Response::new(pb::ListAgentsResponse::from_encoded(encoded)))
    }

    async fn get_agent(
        &self,
        req: Request<pb::GetAgentRequest>,
    ) -> Result<Response<pb::Agent>, Status> {
        let record = self.sup.resolve(&req.into_inner().id)?;
        Ok(Response::new(self.wire(&record)))
    }

    async fn wait_agent(
        &self,
        req: Request<pb::WaitAgentRequest>,
    ) -> Result<Response<pb::Agent>, Status> {
        let record = self.sup.wait(&req.into_inner().id).await?;
        Ok(Response::new(self.wire(&record)))
    }

    async fn send_message(
        &self,
        req: Request<pb::SendMessageRequest>,
    ) -> Result<Response<pb::SendMessageResponse>, Status> {
        let r = req.into_inner();
        if let Some(budget) = convert::budget_from_wire(r.budget_usd, r.budget_tokens)? {
            self.sup.set_budget(&r.id, Some(budget)).await?;
        }
        let (record, revived) = self.sup.send(&r.id, &r.message, None).await?;
        Ok(Response::new(pb::SendMessageResponse {
            agent: Some(self.wire(&record)),
            revived,
        }))
    }

    type AttachStream = BoxStream<pb::AttachEvent>;

    async fn attach(
        &self,
        req: Request<Streaming<pb::AttachRequest>>,
    ) -> Result<Response<Self::AttachStream>, Status> {
        let mut inbound = req.into_inner();
        let start = attach::read_start(&mut inbound).await?;
        // Resolve before answering so an unknown id is the call's status.
        let id = self.sup.resolve(&start.id)?.id;
        let from = attach::StartAt {
            from_seq: start.from_seq,
            as_seen: start.as_seen,
        };
        // Small on purpose: backpressure reaches the attach task early, and
        // it coalesces deltas instead of queueing them one by one.
        let (tx, rx) = tokio::sync::mpsc::channel(16);
        tokio::spawn(attach::serve(self.sup.clone(), id, from, inbound, tx));
        Ok(Response::new(Box::pin(ReceiverStream::new(rx))))
    }

    async fn background(
        &self,
        req: Request<pb::BackgroundRequest>,
    ) -> Result<Response<pb::Agent>, Status> {
        let (record, _) = self.sup.background(&req.into_inner().id).await?;
        Ok(Response::new(self.wire(&record)))
    }

    async fn pause_agent(
        &self,
        req: Request<pb::PauseAgentRequest>,
    ) -> Result<Response<pb::Agent>, Status> {
        let record = self.sup.pause(&req.into_inner().id).await?;
        Ok(Response::new(self.wire(&record)))
    }

    async fn interrupt_agent(
        &self,
        req: Request<pb::InterruptAgentRequest>,
    ) -> Result<Response<pb::Agent>, Status> {
        let record = self.sup.interrupt(&req.into_inner().id).await?;
        Ok(Response::new(self.wire(&record)))
    }

    async fn update_agent(
        &self,
        req: Request<pb::UpdateAgentRequest>,
    ) -> Result<Response<pb::Agent>, Status> {
        let r = req.into_inner();
        let mode = convert::permission_mode_from_wire(r.permission_mode)?;
        let model = Some(r.model.trim().to_string()).filter(|m| !m.is_empty());
        let record = self.sup.update(&r.id, mode, model).await?;
        Ok(Response::new(self.wire(&record)))
    }

    async fn set_budget(
        &self,
        req: Request<pb::SetBudgetRequest>,
    ) -> Result<Response<pb::Agent>, Status> {
        let r = req.into_inner();
        let budget = convert::budget_from_wire(r.budget_usd, r.budget_tokens)?;
        let record = self.sup.set_budget(&r.id, budget).await?;
        Ok(Response::new(self.wire(&record)))
    }

    async fn cancel_agent(
        &self,
        req: Request<pb::CancelAgentRequest>,
    ) -> Result<Response<pb::Agent>, Status> {
        let record = self.sup.cancel(&req.into_inner().id).await?;
        Ok(Response::new(self.wire(&record)))
    }

    async fn remove_agent(
        &self,
        req: Request<pb::RemoveAgentRequest>,
    ) -> Result<Response<pb::RemoveAgentResponse>, Status> {
        let r = req.into_inner();
        let cwd = convert::client_dir(&r.cwd)?;
        let (id, tree) = self
            .sup
            .remove(&r.id, r.force, r.discard_worktree, cwd.as_deref())
            .await?;
        Ok(Response::new(pb::RemoveAgentResponse {
            id: id.to_string(),
            worktree_removed: tree.as_ref().is_some_and(|t| t.removed),
            worktree: tree.map(|t| convert::worktree_report(&t.report)),
        }))
    }

    async fn compact_agent(
        &self,
        req: Request<pb::CompactAgentRequest>,
    ) -> Result<Response<pb::CompactAgentResponse>, Status> {
        let r = req.into_inner();
        let instructions = (!r.instructions.trim().is_empty()).then_some(r.instructions);
        let (record, boundary) = self.sup.compact(&r.id, instructions).await?;
        Ok(Response::new(pb::CompactAgentResponse {
            agent: Some(self.wire(&record)),
            boundary: Some(convert::boundary(&boundary)),
        }))
    }

    async fn get_transcript(
        &self,
        req: Request<pb::GetTranscriptRequest>,
    ) -> Result<Response<pb::GetTranscriptResponse>, Status> {
        let r = req.into_inner();
        let record = self.sup.resolve(&r.id)?;
        let limit = match r.limit {
            0 => DEFAULT_PAGE,
            n => n.min(MAX_PAGE),
        };
        let id = record.id;
        let store = self.sup.store();
        let entries = store
            .transcript(id, r.from_seq, limit as usize)
            .map_err(AgentdError::from)?;
        // The store's records count only what is on disk.
        let len = record.transcript_len;
        // Past the end: the next page starts at the real end.
        let next_seq = entries.last().map_or(r.from_seq.min(len), |e| e.seq + 1);
        Ok(Response::new(pb::GetTranscriptResponse {
            end: next_seq >= len,
            next_seq,
            entries: entries.iter().map(convert::entry).collect(),
        }))
    }

    type WatchStream = BoxStream<pb::WatchEvent>;

    async fn watch(
        &self,
        _req: Request<pb::WatchRequest>,
    ) -> Result<Response<Self::WatchStream>, Status> {
        let events = self.sup.watch();
        let shutdown = self.sup.shutdown_token();
        Ok(Response::new(Box::pin(super::watch::stream(
            events, shutdown,
        ))))
    }

    async fn list_worktrees(
        &self,
        req: Request<pb::ListWorktreesRequest>,
    ) -> Result<Response<pb::ListWorktreesResponse>, Status> {
        let cwd = convert::client_dir(&req.into_inner().cwd)?;
        let reports = self.sup.worktrees(cwd.as_deref()).await?;
        Ok(Response::new(pb::ListWorktreesResponse {
            worktrees: reports.iter().map(convert::worktree_report).collect(),
        }))
    }

    async fn prune_worktrees(
        &self,
        req: Request<pb::PruneWorktreesRequest>,
    ) -> Result<Response<pb::PruneWorktreesResponse>, Status> {
        let r = req.into_inner();
        let cwd = convert::client_dir(&r.cwd)?;
        let (removed, kept) = self.sup.prune_worktrees(r.dry_run, cwd.as_deref()).await?;
        Ok(Response::new(pb::PruneWorktreesResponse {
            removed: removed.iter().map(convert::worktree_report).collect(),
            kept: kept.iter().map(convert::worktree_report).collect(),
        }))
    }

    async fn diff_agent(
        &self,
        req: Request<pb::DiffAgentRequest>,
    ) -> Result<Response<pb::DiffAgentResponse>, Status> {
        let r = req.into_inner();
        let (diff, wt, notice) = self.sup.diff_agent(&r.id, r.stat).await?;
        Ok(Response::new(pb::DiffAgentResponse {
            diff,
            worktree: Some(convert::agent_worktree(&wt)),
            notice: notice.unwrap_or_default(),
        }))
    }

    async fn merge_agent(
        &self,
        req: Request<pb::MergeAgentRequest>,
    ) -> Result<Response<pb::MergeAgentResponse>, Status> {
        let r = req.into_inner();
        let (merged, checkout) = self.sup.merge_agent(&r.id, r.squash).await?;
        Ok(Response::new(convert::merged(merged, &checkout)))
    }

    async fn list_checkpoints(
        &self,
        req: Request<pb::ListCheckpointsRequest>,
    ) -> Result<Response<pb::ListCheckpointsResponse>, Status> {
        let r = req.into_inner();
        let (_, turns) = self.sup.list_checkpoints(&r.id, r.stat).await?;
        Ok(Response::new(convert::checkpoints(&turns)))
    }

    async fn rewind_agent(
        &self,
        req: Request<pb::RewindAgentRequest>,
    ) -> Result<Response<pb::RewindAgentResponse>, Status> {
        let r = req.into_inner();
        let scope = convert::rewind_scope_from_wire(r.scope)?;
        let (record, rewound) = self
            .sup
            .rewind_agent(&r.id, r.to_turn, scope, r.force)
            .await?;
        Ok(Response::new(pb::RewindAgentResponse {
            agent: Some(self.wire(&record)),
            written: rewound.restored.written,
            removed: rewound.restored.removed,
            conversation: rewound.conversation,
        }))
    }

    async fn get_usage(
        &self,
        req: Request<pb::GetUsageRequest>,
    ) -> Result<Response<pb::UsageReport>, Status> {
        let r = req.into_inner();
        if r.family && r.id.trim().is_empty() {
            return Err(AgentdError::invalid(
                "family needs an agent: the usage of every agent is asked for with no id",
            )
            .into());
        }
        let report = self.sup.usage(&r.id, r.family)?;
        Ok(Response::new(convert::usage_report(report, |id| {
            self.sup.budget_view(id).as_ref().map(convert::budget)
        })))
    }

    async fn list_mcp_servers(
        &self,
        req: Request<pb::ListMcpServersRequest>,
    ) -> Result<Response<pb::ListMcpServersResponse>, Status> {
        let r = req.into_inner();
        let agent_type = convert::mcp::agent_type(&r.agent_type)?;
        let cwd = std::path::PathBuf::from(r.cwd);
        let listing = self.sup.mcp_report(&cwd, agent_type).await?;
        Ok(Response::new(pb::ListMcpServersResponse {
            servers: listing
                .servers
                .iter()
                .map(convert::mcp::server_report)
                .collect(),
            repository: listing
                .repository
                .map(|r| r.display().to_string())
                .unwrap_or_default(),
            notes: listing.notes,
        }))
    }

    async fn approve_mcp_servers(
        &self,
        req: Request<pb::ApproveMcpServersRequest>,
    ) -> Result<Response<pb::ApproveMcpServersResponse>, Status> {
        let r = req.into_inner();
        let which = convert::mcp::selection(&r.names, r.all)?;
        let cwd = std::path::PathBuf::from(r.cwd);
        let agent_type = convert::mcp::agent_type(&r.agent_type)?;
        let (root, approved) = self.sup.approve_mcp(&cwd, &which, agent_type).await?;
        Ok(Response::new(pb::ApproveMcpServersResponse {
            repository: root.display().to_string(),
            servers: approved.iter().map(convert::mcp::approved_server).collect(),
        }))
    }

    async fn revoke_mcp_servers(
        &self,
        req: Request<pb::RevokeMcpServersRequest>,
    ) -> Result<Response<pb::RevokeMcpServersResponse>, Status> {
        let r = req.into_inner();
        let which = convert::mcp::selection(&r.names, r.all)?;
        let cwd = std::path::PathBuf::from(r.cwd);
        let agent_type = convert::mcp::agent_type(&r.agent_type)?;
        let (root, names) = self.sup.revoke_mcp(&cwd, &which, agent_type).await?;
        Ok(Response::new(pb::RevokeMcpServersResponse {
            repository: root.display().to_string(),
            names,
        }))
    }

    async fn list_connections(
        &self,
        req: Request<pb::ListConnectionsRequest>,
    ) -> Result<Response<pb::ListConnectionsResponse>, Status> {
        let found = self.sup.connections(&req.into_inner().id)?;
        let short = found.record.short_id.as_str();
        Ok(Response::new(pb::ListConnectionsResponse {
            connections: found
                .connections
                .iter()
                .map(|(c, open)| convert::network::connection(c, short, *open))
                .collect(),
            allowed_always: found
                .allowed_always
                .iter()
                .map(ToString::to_string)
                .collect(),
        }))
    }

    async fn list_rules(
        &self,
        req: Request<pb::ListRulesRequest>,
    ) -> Result<Response<pb::ListRulesResponse>, Status> {
        let cwd = std::path::PathBuf::from(req.into_inner().cwd);
        if !cwd.is_absolute() || !cwd.is_dir() {
            return Err(Status::invalid_argument(
                "cwd must be an absolute path of a directory",
            ));
        }
        let rules = self
            .sup
            .rules_at(&cwd)
            .map_err(crate::error::AgentdError::refused)?;
        Ok(Response::new(convert::rules::listing(&rules)))
    }

    async fn approve_rules(
        &self,
        req: Request<pb::ApproveRulesRequest>,
    ) -> Result<Response<pb::ApproveRulesResponse>, Status> {
        let r = req.into_inner();
        let which = convert::rules::selection(&r.rules, r.all)?;
        let (root, approved) = self.sup.approve_rules(Path::new(&r.cwd), &which).await?;
        Ok(Response::new(pb::ApproveRulesResponse {
            repository: root.display().to_string(),
            rules: approved.iter().map(convert::rules::approved).collect(),
        }))
    }

    async fn revoke_rules(
        &self,
        req: Request<pb::RevokeRulesRequest>,
    ) -> Result<Response<pb::RevokeRulesResponse>, Status> {
        let r = req.into_inner();
        let which = convert::rules::selection(&r.rules, r.all)?;
        let (root, gone) = self.sup.revoke_rules(Path::new(&r.cwd), &which).await?;
        Ok(Response::new(pb::RevokeRulesResponse {
            repository: root.display().to_string(),
            rules: gone.into_iter().map(convert::rules::revoked).collect(),
        }))
    }

    async fn get_network_policy(
        &self,
        _req: Request<pb::GetNetworkPolicyRequest>,
    ) -> Result<Response<pb::NetworkPolicy>, Status> {
        let p = self.sup.network_policy()?;
        Ok(Response::new(pb::NetworkPolicy {
            default_mode: convert::network::network(p.default_mode) as i32,
            built_in: convert::network::allow_entries(p.built_in.iter().map(|(h, w)| (h, *w))),
            config: convert::network::allow_entries(p.config.iter().map(|h| (h, "config.toml"))),
            every_agent: convert::network::allow_entries(
                p.every_agent
                    .iter()
                    .map(|h| (h, "answered: allow for every agent")),
            ),
        }))
    }

    async fn restart_mcp_server(
        &self,
        req: Request<pb::RestartMcpServerRequest>,
    ) -> Result<Response<pb::RestartMcpServerResponse>, Status> {
        let ended = self.sup.restart_mcp(&req.into_inner().name).await?;
        Ok(Response::new(pb::RestartMcpServerResponse { ended }))
    }

    async fn get_config(
        &self,
        _req: Request<pb::GetConfigRequest>,
    ) -> Result<Response<pb::ConfigReport>, Status> {
        let path = &self.sup.info().config_path;
        Ok(Response::new(pb::ConfigReport {
            path: path.display().to_string(),
            file_exists: path.is_file(),
            entries: crate::config::entries::entries(&self.sup.config())
                .into_iter()
                .map(convert::config_entry)
                .collect(),
        }))
    }

    async fn reload_config(
        &self,
        _req: Request<pb::ReloadConfigRequest>,
    ) -> Result<Response<pb::ReloadConfigResponse>, Status> {
        let path = self.sup.info().config_path.clone();
        let report = self.sup.reload_config(&path).map_err(AgentdError::from)?;
        tracing::info!(applied = ?report.applied, needs_restart = ?report.needs_restart, "configuration reloaded");
        Ok(Response::new(pb::ReloadConfigResponse {
            applied: report.applied,
            needs_restart: report.needs_restart,
        }))
    }
}
