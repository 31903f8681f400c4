//! MCP servers shared between running agents (DESIGN §18).
//!
//! Running agents that would each run the same server in the same way share
//! one: the same definition (command, arguments, environment, URL, sandbox
//! choice, timeouts), the same working directory, the same confinement
//! (sandbox mode, network, writable workspace) and the same tool
//! environment. Those would be the same process under the same rules; what
//! differs between agents — each one's private temp dir and PID namespace —
//! a shared server has its own of instead of any agent's, so nothing of one
//! agent's reaches another's through it. Forks fanned out from one parent,
//! and subagents working beside it, thus cost one server, not one each.
//!
//! A server is started when the first of them needs it and ends when the
//! last run holding it ends (the pool only keeps weak references). A
//! definition with `shared = false` (a server that keeps state per client,
//! such as a browser) gets a slot of each run's own, in that run's namespace
//! and sandbox, as before sharing.
//!
//! A slot restarts its server after a crash, at the next call of any of its
//! agents, after a pause that grows with each failed start.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};
use tokio_util::sync::CancellationToken;

use super::live::{Live, start};
use super::{ServerDef, Session};
use crate::tools::{AgentProcesses, ToolContext};
use agentd_shared::sync::Unpoisoned as _;

/// The longest pause before a failed server is started again.
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// The servers running agents share, by what makes them the same.
#[derive(Default)]
pub struct McpPool {
    shared: Mutex<HashMap<ShareKey, Weak<SharedServer>>>,
}

/// What must be equal for two agents' servers to be one.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct ShareKey {
    /// The whole definition, as stored.
    def: String,
    cwd: PathBuf,
    /// Sandbox mode, no network, writable workspace; None: no sandbox.
    confinement: Option<(&'static str, &'static str, PathBuf)>,
    /// The tool environment (provider keys withheld…): a reload makes a
    /// new one, and servers started under the old one are not reused.
    env: usize,
}

impl ShareKey {
    fn of(def: &ServerDef, ctx: &ToolContext) -> ShareKey {
        ShareKey {
            def: def.to_json(),
            cwd: ctx.cwd.clone(),
            confinement: ctx
                .sandbox
                .as_ref()
                .map(|p| (p.mode.as_str(), p.network.as_str(), p.workspace.clone())),
            env: Arc::as_ptr(&ctx.env) as usize,
        }
    }

    /// The name of the shared server's own temp dir: never an agent's
    /// (those are hex short ids).
    fn tmp_name(&self) -> String {
        let digest = Sha256::digest(format!("{self:?}").as_bytes());
        let hex: String = digest[..6].iter().map(|b| format!("{b:02x}")).collect();
        format!("mcp-{hex}")
    }
}

impl McpPool {
    /// The slot `def`'s server runs in for the agent of `ctx`: the shared
    /// one (made now if no running agent holds it), or, for a definition
    /// that is not shared, a new one of the run's own.
    pub fn slot(&self, def: &ServerDef, ctx: &ToolContext) -> Arc<SharedServer> {
        if !def.shared {
            return Arc::new(SharedServer::new(None));
        }
        let key = ShareKey::of(def, ctx);
        let mut shared = self.shared.locked();
        shared.retain(|_, slot| slot.strong_count() > 0);
        if let Some(slot) = shared.get(&key).and_then(Weak::upgrade) {
            return slot;
        }
        let slot = Arc::new(SharedServer::new(Some(Own::for_key(&key, ctx))));
        shared.insert(key, Arc::downgrade(&slot));
        slot
    }

    /// Shared slots held by running agents.
    pub fn shared_slots(&self) -> usize {
        let shared = self.shared.locked();
        shared.values().filter(|s| s.strong_count() > 0).count()
    }
}

/// What a shared server runs with instead of an agent's.
struct Own {
    /// The agent's context, with the server's own temp dir, namespace and
    /// cancellation.
    ctx: ToolContext,
    /// Its temp dir's name, removed when the slot ends.
    tmp_name: String,
}

impl Own {
    fn for_key(key: &ShareKey, agent: &ToolContext) -> Own {
        let tmp_name = key.tmp_name();
        let sandbox = agent.sandbox.clone().map(|mut policy| {
            // A temp dir that cannot be made private is never granted.
            policy.tmpdir = crate::sandbox::tmpdir(&crate::sandbox::tmp_root(), &tmp_name)
                .unwrap_or_else(|_| agent.cwd.join(".agentd-no-tmpdir"));
            policy
        });
        Own {
            ctx: ToolContext {
                cwd: agent.cwd.clone(),
                cancel: CancellationToken::new(),
                spool: None,
                env: agent.env.clone(),
                worktree_of: None,
                sandbox,
                processes: Arc::new(AgentProcesses::default()),
            },
            tmp_name,
        }
    }
}

/// Failed starts of one server in a row, and when the last was.
struct Failures {
    count: u32,
    at: Instant,
    why: String,
}

/// Where one server runs: its live session, if any, and its failed starts.
pub struct SharedServer {
    /// A shared slot's own context; None: it runs in its agent's.
    own: Option<Own>,
    live: tokio::sync::Mutex<Option<Live>>,
    failures: Mutex<Option<Failures>>,
}

impl SharedServer {
    fn new(own: Option<Own>) -> SharedServer {
        SharedServer {
            own,
            live: tokio::sync::Mutex::default(),
            failures: Mutex::default(),
        }
    }

    fn failures(&self) -> std::sync::MutexGuard<'_, Option<Failures>> {
        self.failures.locked()
    }

    /// The live session of `def`'s server, started now (in the slot's own
    /// context, else in `agent`'s) if there is none or it died.
    pub async fn session(
        &self,
        def: &ServerDef,
        agent: &ToolContext,
    ) -> Result<Arc<Session>, String> {
        let mut live = self.live.lock().await;
        if let Some(l) = live.as_ref() {
            if !l.session.is_closed() {
                return Ok(l.session.clone());
            }
            tracing::info!(server = %def.name, "MCP server gone; starting it again");
            *live = None;
        }
        if let Some(wait) = self.backoff(def) {
            return Err(wait);
        }
        let ctx = self.own.as_ref().map_or(agent, |o| &o.ctx);
        match start(def, ctx).await {
            Ok(started) => {
                *self.failures() = None;
                let session = started.session.clone();
                *live = Some(started);
                Ok(session)
            }
            Err(why) => {
                let mut failures = self.failures();
                let f = failures.get_or_insert(Failures {
                    count: 0,
                    at: Instant::now(),
                    why: String::new(),
                });
                f.count += 1;
                f.at = Instant::now();
                f.why.clone_from(&why);
                Err(why)
            }
        }
    }

    /// Forgets a session that closed (its server died during a call): the
    /// next call starts it again.
    pub async fn forget_if_closed(&self) {
        let mut live = self.live.lock().await;
        if live.as_ref().is_some_and(|l| l.session.is_closed()) {
            *live = None;
        }
    }

    /// Ends the session (killing a stdio server) and forgets failed
    /// starts. Whether one was live.
    pub async fn restart(&self) -> bool {
        *self.failures() = None;
        let ended = self.live.lock().await.take();
        match ended {
            Some(live) => {
                live.end().await;
                true
            }
            None => false,
        }
    }

    /// Why the server is not started again yet, if its last starts failed
    /// and the pause after them (1 s, doubling, at most 30 s) is not over.
    fn backoff(&self, def: &ServerDef) -> Option<String> {
        let failures = self.failures();
        let f = failures.as_ref()?;
        let pause = Duration::from_secs(1 << f.count.saturating_sub(1).min(5)).min(MAX_BACKOFF);
        let left = pause.checked_sub(f.at.elapsed())?;
        Some(format!(
            "MCP server {} failed to start {} time(s) in a row ({}); it is tried again in {} s",
            def.name,
            f.count,
            f.why,
            left.as_secs().max(1)
        ))
    }
}

impl Drop for SharedServer {
    /// No run holds it any more: its server ends in the background
    /// (`Live::end`), then a shared slot's temp dir goes.
    fn drop(&mut self) {
        let tmp = self.own.as_ref().map(|o| o.tmp_name.clone());
        let Some(live) = self.live.get_mut().take() else {
            if let Some(name) = tmp {
                crate::sandbox::remove_tmpdir(&name);
            }
            return;
        };
        let end = async move {
            live.end().await;
            if let Some(name) = tmp {
                crate::sandbox::remove_tmpdir(&name);
            }
        };
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(end);
            }
            // No runtime to end it in: killed now, as it is dropped.
            Err(_) => drop(end),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {

    use super::*;
    use crate::domain::SandboxMode;

    use crate::sandbox::Policy;

    fn ctx(cwd: &str, env: &Arc<crate::tools::ToolEnv>, policy: Option<Policy>) -> ToolContext {
        let mut ctx = ToolContext::new(PathBuf::from(cwd), CancellationToken::new());
        ctx.env = env.clone();
        ctx.sandbox = policy;
        ctx
    }

    fn policy(mode: SandboxMode, no_network: bool, tmp: &str) -> Option<Policy> {
        Some(Policy {
            mode,
            network: if no_network {
                crate::domain::NetworkMode::None
            } else {
                crate::domain::NetworkMode::Full
            },
            workspace: PathBuf::from("/w"),
            tmpdir: PathBuf::from(tmp),
            also_writable: Vec::new(),
        })
    }

    #[test]
    fn only_servers_run_alike_share_a_slot_and_only_while_held() {
        let pool = McpPool::default();
        let env = Arc::default();
        let write = |tmp| ctx("/w", &env, policy(SandboxMode::WorkspaceWrite, false, tmp));
        // Two agents: their own temp dirs differ, which does not matter.
        let a = pool.slot(&ServerDef::stdio_for_test("fx", "srv"), &write("/t/a"));
        let b = pool.slot(&ServerDef::stdio_for_test("fx", "srv"), &write("/t/b"));
        assert!(Arc::ptr_eq(&a, &b));
        assert_eq!(pool.shared_slots(), 1);
        // The shared server's temp dir is its own, never an agent's.
        let own = &a.own.as_ref().unwrap();
        assert!(own.tmp_name.starts_with("mcp-"), "{}", own.tmp_name);
        let tmp = &own.ctx.sandbox.as_ref().unwrap().tmpdir;
        assert!(!tmp.starts_with("/t"), "{}", tmp.display());

        let apart = [
            pool.slot(&ServerDef::stdio_for_test("fx", "other"), &write("/t/a")),
            pool.slot(
                &ServerDef::stdio_for_test("fx", "srv"),
                &ctx(
                    "/elsewhere",
                    &env,
                    policy(SandboxMode::WorkspaceWrite, false, "/t/a"),
                ),
            ),
            pool.slot(
                &ServerDef::stdio_for_test("fx", "srv"),
                &ctx(
                    "/w",
                    &env,
                    policy(SandboxMode::WorkspaceWrite, true, "/t/a"),
                ),
            ),
            pool.slot(
                &ServerDef::stdio_for_test("fx", "srv"),
                &ctx("/w", &env, policy(SandboxMode::ReadOnly, false, "/t/a")),
            ),
            pool.slot(
                &ServerDef::stdio_for_test("fx", "srv"),
                &ctx("/w", &env, None),
            ),
            pool.slot(
                &ServerDef::stdio_for_test("fx", "srv"),
                &ctx(
                    "/w",
                    &Arc::default(),
                    policy(SandboxMode::WorkspaceWrite, false, "/t/a"),
                ),
            ),
        ];
        for slot in &apart {
            assert!(!Arc::ptr_eq(&a, slot));
        }
        let mut solo = ServerDef::stdio_for_test("fx", "srv");
        solo.shared = false;
        let own = pool.slot(&solo, &write("/t/a"));
        assert!(!Arc::ptr_eq(&a, &own) && own.own.is_none());

        // Once no run holds it, it is gone (its temp dir too), and the
        // next agent gets a new one.
        let tmp = tmp.clone();
        assert!(tmp.is_dir(), "{}", tmp.display());
        drop((a, b, apart));
        assert_eq!(pool.shared_slots(), 0);
        assert!(!tmp.exists(), "{}", tmp.display());
        let again = pool.slot(&ServerDef::stdio_for_test("fx", "srv"), &write("/t/c"));
        assert_eq!(pool.shared_slots(), 1);
        assert!(again.live.try_lock().unwrap().is_none());
        drop(again);
    }
}
