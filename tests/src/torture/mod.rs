//! The SIGKILL torture run: a mixed, seeded workload against the
//! real daemon and the mock model, the daemon killed with SIGKILL at seeded
//! moments and started again, the invariants checked after every restart
//! and at the end. `bench torture` runs it long; `tests/torture.rs` short.
//!
//! The workload: agents with Bash side effects (each appends a unique line
//! to a file), agents starting background subagents, fork fan-outs,
//! agents in worktrees of their own, messages, pauses, clients that attach
//! and record every entry they are shown, clients that attach and never
//! read. With `faults`, the model server also answers at random with 529,
//! 500, 429, resets, cut streams, error events and stalls; with
//! `disk_full` (root: a small tmpfs), the data directory fills up in the
//! middle of the run and is freed again.
//!
//! Invariants (each failure is a violation, reported, never a panic):
//! the store opens; every entry a client was shown is there byte for byte;
//! no tool call, tool result, message or notification appears twice;
//! sequence numbers are contiguous; after a restart every interrupted
//! agent resumes or carries a `resume_blocked_reason`; at the end every
//! agent settles (none is left `running` with nothing running) with every
//! call answered and its answers exactly its plan's, in order; no agent
//! fails; every ended background child's end reached its parent, no
//! notification twice and none more than the child's ends of turn; no
//! agent whose creation was refused exists; every acknowledged message
//! was delivered once; no
//! Bash side effect ran twice and every one reported as run is on disk; no
//! worktree holding work was removed; no process a tool started (however
//! it hid: `setsid`, `env -i`, a double fork, another name) outlives a
//! killed daemon or, at the end, its agent's run; a Read of a FIFO never
//! hangs an agent; a merge the kill cut short is whole or undone after the
//! restart (the merge lane's repository is clean).

mod check;
mod ledger;
pub mod model;
mod workload;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use agentd_shared::proto as pb;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::disk::SmallDisk;
use crate::mock::MockServer;
use crate::{ApiClient, Env, gitrepo};
use check::{Transcript, ended, settled, transcript};
use ledger::SharedLedger;
use workload::Cycle;

/// How long any request of the workload may take before the daemon counts
/// as hung.
const ANSWER: Duration = Duration::from_secs(10);

/// How a run goes.
#[derive(Clone, Debug)]
pub struct Options {
    pub seed: u64,
    pub kills: usize,
    /// Model faults at random (this share of requests).
    pub fault_rate: f64,
    /// Fill the data directory's disk in the middle of the run (root).
    pub disk_full: bool,
    /// Live top-level agents the workload keeps at most.
    pub max_live: usize,
    /// Print one line per kill.
    pub verbose: bool,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            seed: 0x7047_0e5e,
            kills: 20,
            fault_rate: 0.0,
            disk_full: false,
            max_live: 8,
            verbose: false,
        }
    }
}

/// What a run did and found.
#[derive(Debug, Default)]
pub struct Report {
    pub seed: u64,
    pub kills: usize,
    pub agents: usize,
    pub children: usize,
    pub forks: usize,
    pub worktrees: usize,
    pub entries: u64,
    pub tool_calls: u64,
    pub bash_run: usize,
    pub notifications: usize,
    pub sends_acknowledged: usize,
    pub pauses: u64,
    /// Pauses answered with the agent paused: each must hold.
    pub pauses_held: usize,
    pub attaches: u64,
    pub stalled_attaches: u64,
    pub entries_shown: u64,
    pub model_requests: usize,
    pub disk_full_waits: usize,
    pub disk_full_refusals: u64,
    /// Cycles in which the disk filled up.
    pub disk_events: u64,
    /// ListAgents answered while the disk was full.
    pub full_disk_answers: u64,
    /// Daemons started on a full disk.
    pub full_disk_starts: u64,
    /// Of those, refused to start (saying to free space).
    pub full_disk_refused_starts: u64,
    /// Transcript reads refused on a full disk right after such a start
    /// (sled refusing a read that needs it to write); checked again later.
    pub full_disk_reads: u64,
    /// Daemons killed before they were ready (recovering).
    pub early_kills: u64,
    /// Entries attached clients were shown (the rest were read).
    pub entries_shown_attached: u64,
    /// Merges asked for, answered as done, and cut short by a kill (then
    /// finished or undone by the next start).
    pub merges: u64,
    pub merged: u64,
    pub merges_cut_short: usize,
    /// Rewinds asked for and answered as done (DESIGN §23).
    pub rewinds: u64,
    pub rewound: u64,
    /// Directories a rewind was asked for.
    pub rewound_dirs: usize,
    /// Processes tools left behind that a kill found still running (all
    /// must die with the daemon: a violation each if not).
    pub survivors_at_kills: usize,
    /// The most such processes seen running at once during the run.
    pub survivors_seen: usize,
    /// Where the run's files were kept (after a violation).
    pub kept: Option<PathBuf>,
    pub faults_injected: usize,
    /// Compaction boundaries in the final transcripts, and summary
    /// requests the model got (more: kills or faults cut some short).
    pub compactions: usize,
    pub summary_requests: usize,
    /// Compactions the agents' plans asked for (an agent cancelled or
    /// failed by the workload may not have reached its own).
    pub compactions_asked: usize,
    /// Messages from a read-only agent to a less confined sibling that the
    /// daemon refused (a kill may cut such a call short instead).
    pub confined_messages_refused: usize,
    pub elapsed: Duration,
    pub violations: Vec<String>,
    /// Requests refused that should not have been (printed; a disk-full
    /// refusal is expected, anything else is looked into).
    pub refusals: Vec<String>,
}

impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "seed {:#x}: {} kills ({} before ready) in {:.0} s; {} agents ({} subagents, {} forks, {} in worktrees)",
            self.seed,
            self.kills,
            self.early_kills,
            self.elapsed.as_secs_f64(),
            self.agents,
            self.children,
            self.forks,
            self.worktrees
        )?;
        writeln!(
            f,
            "  {} entries, {} tool calls, {} Bash side effects on disk, {} notifications, {} messages acknowledged, {} pauses ({} acknowledged paused, each checked to hold)",
            self.entries,
            self.tool_calls,
            self.bash_run,
            self.notifications,
            self.sends_acknowledged,
            self.pauses,
            self.pauses_held
        )?;
        writeln!(
            f,
            "  {} attached clients shown {} entries ({} to readers), {} attached clients that never read, {} model requests ({} answered with a fault)",
            self.attaches,
            self.entries_shown_attached,
            self.entries_shown,
            self.stalled_attaches,
            self.model_requests,
            self.faults_injected,
        )?;
        writeln!(
            f,
            "  {} compactions of the {} the plans asked for, from {} summary requests (the rest cut short by a kill or a fault, then redone); {} messages from read-only agents to less confined ones refused, none delivered",
            self.compactions,
            self.compactions_asked,
            self.summary_requests,
            self.confined_messages_refused
        )?;
        writeln!(
            f,
            "  full disk {} times: {} agents waited for space at once, {} refused for it, {} listings answered on it, {} daemons started on it ({} refused, saying to free space; {} transcript reads refused on it)",
            self.disk_events,
            self.disk_full_waits,
            self.disk_full_refusals,
            self.full_disk_answers,
            self.full_disk_starts,
            self.full_disk_refused_starts,
            self.full_disk_reads
        )?;
        writeln!(
            f,
            "  merges: {} asked, {} done, {} cut short by a kill (finished or undone at the restart); processes tools left behind: up to {} at once, {} running at kills (all died with the daemon)",
            self.merges,
            self.merged,
            self.merges_cut_short,
            self.survivors_seen,
            self.survivors_at_kills
        )?;
        writeln!(
            f,
            "  git: merge-lane agents commit under the sandbox (fsck clean after every start); rewinds: {} asked, {} answered done, {} agents rewound (journals finished at every start)",
            self.rewinds, self.rewound, self.rewound_dirs
        )?;
        if !self.refusals.is_empty() {
            writeln!(
                f,
                "  {} refusals, first: {}",
                self.refusals.len(),
                self.refusals[0]
            )?;
        }
        if let Some(kept) = &self.kept {
            writeln!(f, "  the run's files are kept in {}", kept.display())?;
        }
        write!(f, "  violations: {}", self.violations.len())?;
        for v in self.violations.iter().take(20) {
            write!(f, "\n    {v}")?;
        }
        Ok(())
    }
}

/// The daemon's config for a cycle: `min_free_mb` MiB kept free on the
/// data directory's disk (0: only a real ENOSPC stops writes).
fn config(min_free_mb: u64) -> String {
    format!(
        "max_running_agents = 64\nauto_background_secs = 0\nstream_idle_timeout_secs = 1\nstore_min_free_mb = {min_free_mb}\n[retry]\nmax_attempts = 8\ninitial_backoff_ms = 10\nmax_backoff_ms = 200\n"
    )
}

/// Share of cycles (with `disk_full`) in which the disk fills up.
const DISK_EVENTS: f64 = 0.1;

/// Runs the workload with `opts.kills` SIGKILLs and checks it.
pub fn run(opts: &Options) -> Report {
    let started = Instant::now();
    let mut report = Report {
        seed: opts.seed,
        ..Report::default()
    };
    let env = Env::new();
    let disk = if opts.disk_full {
        SmallDisk::mount(&env.root.path().join("small"), 256)
    } else {
        None
    };
    if let Some(disk) = &disk {
        env.set_daemon_env(
            "AGENTD_DATA_DIR",
            &disk.path.join("data").display().to_string(),
        );
    }
    // The read-only type of the `R` steps' children, committed with the
    // project so the checkout stays clean.
    let types = env.project().join(".agentd/agents");
    let _ = std::fs::create_dir_all(&types);
    let _ = std::fs::write(
        types.join(format!("{}.md", model::READER_TYPE)),
        model::READER_TYPE_FILE,
    );
    gitrepo::init_repo(&env.project());
    let merge_repo = env.root.path().join("merge-repo");
    gitrepo::init_repo(&merge_repo);
    // Unique to this run: runs side by side do not see each other's.
    let survivor = format!("agentd-torture-survivor-{}", uuid::Uuid::new_v4().simple());
    let mock = MockServer::start();
    let faults = Arc::new(model::Faults::new(opts.seed, opts.fault_rate));
    let faults_on = Arc::new(AtomicBool::new(opts.fault_rate > 0.0));
    {
        let (faults, on) = (faults.clone(), faults_on.clone());
        let survivor = survivor.clone();
        mock.respond_with(move |r| {
            let reply = model::answer(r, &survivor)?;
            Some(if on.load(Ordering::Relaxed) {
                faults.maybe(reply)
            } else {
                reply
            })
        });
    }
    env.use_mock(&mock.url());
    env.write_config(&config(8));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let ledger = SharedLedger::default();
    let mut rng = StdRng::seed_from_u64(opts.seed);
    // A full disk kept through a kill: the next daemon starts on it.
    let mut carried: Option<PathBuf> = None;

    for kill in 0..opts.kills {
        // How full the disk gets in this cycle: up to the daemon's own
        // threshold, or (threshold 0) until sled itself gets ENOSPC.
        // (At least one per run: halfway, if chance brought none.)
        let due = kill == opts.kills / 2 && report.disk_events == 0;
        let fill = match &disk {
            Some(_) if carried.is_none() && (rng.random_bool(DISK_EVENTS) || due) => {
                report.disk_events += 1;
                let enospc = rng.random_bool(0.5);
                env.write_config(&config(if enospc { 0 } else { 8 }));
                Some(if enospc { 0 } else { 2 << 20 })
            }
            _ => None,
        };
        // Now and then a kill before the daemon is ready: while it
        // recovers, resumes agents and sweeps worktrees.
        if rng.random_bool(0.1) {
            let early = Duration::from_millis(rng.random_range(0..150));
            if let Ok(mut child) = env
                .agentd_command()
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
            {
                std::thread::sleep(early);
                let _ = child.kill();
                let _ = child.wait();
                report.early_kills += 1;
            }
        }
        let mut started = env.try_start_daemon();
        if started.is_err()
            && carried.is_some()
            && env
                .daemon_log_text()
                .contains("its disk is full; free some space")
        {
            // It may refuse to start on a full disk (opening writes), with
            // a message saying what to do; doing it must be enough.
            report.full_disk_refused_starts += 1;
            if let Some(ballast) = carried.take() {
                let _ = std::fs::remove_file(ballast);
            }
            started = env.try_start_daemon();
        }
        let daemon = match started {
            Ok(d) => {
                // Recovery has run: a merge the last kill cut short is
                // whole or undone.
                if let Some(dirty) = merge_repo_dirty(&merge_repo) {
                    report.violations.push(format!(
                        "restart {kill}: the merged checkout is not clean: {dirty}"
                    ));
                }
                report.violations.extend(git_kept(
                    &merge_repo,
                    &env.data_dir(),
                    &format!("restart {kill}"),
                ));
                d
            }
            Err(e) => {
                report.violations.push(format!(
                    "restart {kill}: the daemon did not start{}: {e}; its log ends:\n{}",
                    if carried.is_some() {
                        " on a full disk"
                    } else {
                        ""
                    },
                    log_tail(&env)
                ));
                break;
            }
        };
        // The kill comes from a timer of its own, whatever the clients
        // are doing: mostly after a stretch of work, sometimes at once.
        let budget = if rng.random_bool(0.15) {
            Duration::from_millis(rng.random_range(0..40))
        } else {
            Duration::from_millis(rng.random_range(100..900))
        } + if fill.is_some() {
            Duration::from_secs(2)
        } else {
            Duration::ZERO
        };
        let pid = nix::unistd::Pid::from_raw(daemon.pid());
        let (found, killer) = rt.block_on(async {
            let mut client = match agentd_shared::client::agent_client(&env.socket()).await {
                Ok(c) => c,
                Err(e) => return (vec![format!("restart {kill}: cannot connect: {e}")], None),
            };
            let mut v = after_restart(
                &mut client,
                &ledger,
                carried.is_some(),
                &mut report.full_disk_reads,
                &env.project(),
                kill,
            )
            .await;
            if let Some(ballast) = carried.take() {
                let _ = std::fs::remove_file(ballast);
            }
            let killer = std::thread::spawn(move || {
                std::thread::sleep(budget);
                let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL);
            });
            let mut cycle = Cycle::new(
                client,
                ledger.clone(),
                &env.socket(),
                &env.project(),
                &merge_repo,
            );
            cycle.disk_fills = opts.disk_full;
            let ballast = fill.and_then(|leave| disk.as_ref().map(|d| d.fill(leave)));
            while !killer.is_finished() {
                // The daemon answers everyone, whoever stopped reading.
                let listed = tokio::time::timeout(ANSWER, list(&mut cycle.client)).await;
                let Ok(listed) = listed else {
                    v.push(format!("restart {kill}: ListAgents took over {ANSWER:?}"));
                    break;
                };
                let agents = listed.unwrap_or_default();
                if ballast.is_some() {
                    report.disk_full_waits = report.disk_full_waits.max(
                        agents
                            .iter()
                            .filter(|a| a.waiting_for.contains("disk"))
                            .count(),
                    );
                    if !agents.is_empty() && !killer.is_finished() {
                        report.full_disk_answers += 1;
                    }
                }
                report.survivors_seen = report.survivors_seen.max(survivors(&survivor).len());
                let live = agents
                    .iter()
                    .filter(|a| a.parent_id.is_empty() && !settled(a.status))
                    .count();
                let acted = cycle.act(&mut rng, &agents, live < opts.max_live);
                if tokio::time::timeout(ANSWER, acted).await.is_err() {
                    v.push(format!("restart {kill}: a request took over {ANSWER:?}"));
                    break;
                }
                tokio::time::sleep(Duration::from_millis(rng.random_range(5..60))).await;
            }
            if let Some(ballast) = ballast {
                // Half the time the next daemon starts on the full disk.
                if rng.random_bool(0.5) {
                    carried = Some(ballast);
                    report.full_disk_starts += 1;
                } else {
                    let _ = std::fs::remove_file(ballast);
                }
            }
            report.pauses += cycle.pauses;
            report.attaches += cycle.attaches;
            report.stalled_attaches += cycle.stalled_attaches;
            report.refusals.append(&mut cycle.refusals);
            report.disk_full_refusals += cycle.disk_refusals;
            report.merges += cycle.merges;
            report.merged += cycle.merged;
            report.rewinds += cycle.rewinds;
            report.rewound += cycle.rewound;
            cycle.abort();
            (v, Some(killer))
        });
        if let Some(killer) = killer {
            let _ = killer.join();
        }
        let running = survivors(&survivor).len();
        report.survivors_at_kills += running;
        daemon.kill9();
        report.kills += 1;
        if let Some(v) = outlived(&survivor, "the killed daemon") {
            report.violations.push(format!("restart {kill}: {v}"));
        }
        if opts.verbose || !found.is_empty() {
            println!(
                "kill {kill}: {} agents created, {} violations",
                ledger.lock().created.len(),
                found.len()
            );
            for v in found.iter().take(5) {
                println!("  {v}");
            }
        }
        report.violations.extend(found);
    }

    // The end: no more faults or kills; everything must settle.
    faults_on.store(false, Ordering::Relaxed);
    if let Some(ballast) = carried.take() {
        let _ = std::fs::remove_file(ballast);
    }
    match env.try_start_daemon() {
        Ok(daemon) => {
            if let Some(dirty) = merge_repo_dirty(&merge_repo) {
                report.violations.push(format!(
                    "final start: the merged checkout is not clean: {dirty}"
                ));
            }
            report
                .violations
                .extend(git_kept(&merge_repo, &env.data_dir(), "final start"));
            let found = rt.block_on(finish(&env, &ledger, opts, &mut report));
            report.violations.extend(found);
            report.violations.extend(ledger.lock().conflicts.clone());
            // Every agent has settled: every run has ended, and with it
            // everything its tools started.
            if let Some(v) = outlived(&survivor, "its agent's run") {
                report.violations.push(format!("final: {v}"));
            }
            drop(daemon);
            if let Some(v) = outlived(&survivor, "the daemon") {
                report.violations.push(format!("final: {v}"));
            }
        }
        Err(e) => report.violations.push(format!(
            "final start: the daemon did not start: {e}; its log ends:\n{}",
            log_tail(&env)
        )),
    }
    let refused: Vec<String> = report
        .refusals
        .iter()
        .map(|r| format!("refused: {r}"))
        .collect();
    report.violations.extend(refused);
    report.model_requests = mock.requests().len();
    report.summary_requests = mock
        .requests()
        .iter()
        .filter(|r| model::is_summary_request(r))
        .count();
    report.faults_injected = faults.injected.load(Ordering::Relaxed);
    {
        let ledger = ledger.lock();
        report.entries_shown = ledger.deliveries;
        report.entries_shown_attached = ledger.attached_deliveries;
    }
    report.merges_cut_short = env
        .daemon_log_text()
        .matches("a merge a crash had cut short")
        .count();
    report.elapsed = started.elapsed();
    if !report.violations.is_empty() {
        drop(disk);
        report.kept = Some(env.keep());
    }
    report
}

fn log_tail(env: &Env) -> String {
    let log = env.daemon_log_text();
    let lines: Vec<&str> = log.lines().collect();
    lines[lines.len().saturating_sub(6)..].join("\n")
}

async fn list(client: &mut ApiClient) -> Result<Vec<pb::Agent>, tonic::Status> {
    Ok(client
        .list_agents(pb::ListAgentsRequest {
            all: true,
            parent_id: String::new(),
        })
        .await?
        .into_inner()
        .agents)
}

/// After a restart: every interrupted agent resumed or is blocked with a
/// reason, and every transcript a client has seen is whole.
/// `on_full_disk`: the daemon started on a full disk. sled may then refuse
/// a read that needs it to write (RESOURCE_EXHAUSTED, "out of disk space"):
/// counted in `full_disk_reads`, not a violation — nothing is lost, and the
/// same reads are checked once space is back (the next restart, the end).
async fn after_restart(
    client: &mut ApiClient,
    ledger: &SharedLedger,
    on_full_disk: bool,
    full_disk_reads: &mut u64,
    project: &Path,
    kill: usize,
) -> Vec<String> {
    let mut v = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    let agents = loop {
        let agents = match list(client).await {
            Ok(a) => a,
            Err(e) => return vec![format!("restart {kill}: ListAgents: {}", e.message())],
        };
        let stuck: Vec<&pb::Agent> = agents
            .iter()
            .filter(|a| {
                a.status == pb::AgentStatus::Interrupted as i32
                    && a.resume_blocked_reason == 0
                    && !a.waiting_for.starts_with("disk space")
            })
            .collect();
        if stuck.is_empty() {
            break agents;
        }
        if Instant::now() > deadline {
            for a in stuck {
                v.push(format!(
                    "restart {kill}: agent {} stayed interrupted with no resume_blocked_reason",
                    a.short_id
                ));
            }
            break agents;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    for a in &agents {
        if a.resume_blocked_reason != 0 {
            v.push(format!(
                "restart {kill}: agent {} cannot resume: {}",
                a.short_id, a.resume_blocked_detail
            ));
        }
    }
    // Transcripts of live agents, of those a client has seen, and of
    // those in worktrees.
    let shown: Vec<String> = {
        let ledger = ledger.lock();
        ledger
            .shown
            .keys()
            .chain(ledger.paused.keys())
            .cloned()
            .collect()
    };
    let mut ids: Vec<String> = agents
        .iter()
        .filter(|a| !settled(a.status) || !a.worktree_path.is_empty())
        .map(|a| a.id.clone())
        .collect();
    ids.extend(shown);
    ids.sort();
    ids.dedup();
    let mut transcripts = HashMap::new();
    for id in ids {
        match transcript(client, &id).await {
            Ok(t) => {
                let ledger = ledger.lock();
                check::structure(&id, &t, &ledger, &mut v);
                if let Some(pauses) = ledger.paused.get(&id) {
                    check::pause_held(&id, &t, pauses, &ledger.sent, None, &mut v);
                }
                drop(ledger);
                transcripts.insert(id, t);
            }
            Err(e) if on_full_disk && e.contains("out of disk space") => *full_disk_reads += 1,
            Err(e) => v.push(format!("restart {kill}: {e}")),
        }
    }
    // No side effect twice; no worktree with work gone.
    let mut dirs: Vec<(&Path, Option<&str>)> = vec![(project, None)];
    dirs.extend(
        agents
            .iter()
            .filter(|a| !a.worktree_path.is_empty())
            .map(|a| {
                let key = (!a.name.is_empty()).then_some(a.name.as_str());
                (Path::new(&a.worktree_path), key)
            }),
    );
    for (line, n) in check::side_effects(&dirs) {
        if n > 1 {
            v.push(format!("Bash side effect {line} ran {n} times"));
        }
    }
    for a in agents.iter().filter(|a| !a.worktree_path.is_empty()) {
        let worked = transcripts
            .get(&a.id)
            .is_some_and(|t| !check::bash_markers(t).0.is_empty());
        if worked && !Path::new(&a.worktree_path).join(model::SIDE_LOG).exists() {
            v.push(format!(
                "agent {}: its worktree with work is gone ({})",
                a.short_id, a.worktree_path
            ));
        }
    }
    let at = if kill == usize::MAX {
        "final".to_string()
    } else {
        format!("restart {kill}")
    };
    v.iter_mut().for_each(|m| {
        if !m.starts_with("restart") {
            *m = format!("{at}: {m}");
        }
    });
    v
}

/// Processes (this namespace's ids) whose command line holds `tag`, not
/// counting zombies.
fn survivors(tag: &str) -> Vec<i32> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return out;
    };
    for e in entries.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
            continue;
        };
        let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        let zombie = stat
            .rsplit_once(')')
            .is_some_and(|(_, r)| r.trim_start().starts_with(['Z', 'X']));
        if !zombie && String::from_utf8_lossy(&cmdline).contains(tag) {
            out.push(pid);
        }
    }
    out
}

/// A violation if processes tagged `tag` still run 3 s after `what` ended
/// (then they are killed, so the run goes on).
fn outlived(tag: &str, what: &str) -> Option<String> {
    let deadline = Instant::now() + Duration::from_secs(3);
    let mut left = survivors(tag);
    while !left.is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
        left = survivors(tag);
    }
    if left.is_empty() {
        return None;
    }
    for pid in &left {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(*pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    Some(format!(
        "{} processes a tool started outlived {what} (pids {left:?})",
        left.len()
    ))
}

/// What makes the merge lane's checkout other than clean: a half-done
/// merge (changed files, a stray temporary file); None when clean.
fn merge_repo_dirty(repo: &Path) -> Option<String> {
    let out = std::process::Command::new("git")
        .args(["status", "--porcelain"])
        .current_dir(repo)
        .output()
        .ok()?;
    let status = String::from_utf8_lossy(&out.stdout).into_owned();
    (!status.trim().is_empty()).then(|| status.chars().take(300).collect())
}

/// After a start (recovery has run): the merge lane's repository has no
/// ref whose objects are missing (the quarantine's objects go in before its
/// ref moves, whatever the kill cut short), and no rewind is left half done
/// (its journal finished).
fn git_kept(repo: &Path, data_dir: &Path, at: &str) -> Vec<String> {
    let mut v = Vec::new();
    let fsck = std::process::Command::new("git")
        .args(["fsck", "--no-dangling", "--no-progress"])
        .current_dir(repo)
        .output();
    match fsck {
        Ok(out) if out.status.success() => {}
        Ok(out) => v.push(format!(
            "{at}: the merge lane's repository does not check: {}",
            String::from_utf8_lossy(&out.stderr)
                .chars()
                .take(300)
                .collect::<String>()
        )),
        Err(e) => v.push(format!("{at}: cannot run git fsck: {e}")),
    }
    let stores = std::fs::read_dir(data_dir.join("checkpoints"))
        .map(|d| d.flatten().map(|e| e.path()).collect::<Vec<_>>())
        .unwrap_or_default();
    for store in stores {
        if store.join("rewind.json").exists() {
            v.push(format!(
                "{at}: a rewind was left unfinished ({})",
                store.display()
            ));
        }
    }
    v
}

/// The end of the run: wait for every agent to settle, then check it all.
async fn finish(
    env: &Env,
    ledger: &SharedLedger,
    opts: &Options,
    report: &mut Report,
) -> Vec<String> {
    let mut v = Vec::new();
    let mut client = match agentd_shared::client::agent_client(&env.socket()).await {
        Ok(c) => c,
        Err(e) => return vec![format!("final: cannot connect: {e}")],
    };
    let mut refused = 0;
    v.extend(
        after_restart(
            &mut client,
            ledger,
            false,
            &mut refused,
            &env.project(),
            usize::MAX,
        )
        .await,
    );
    // Settled twice in a row, half a second apart, nothing moving.
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut last: Option<Vec<(String, i32, u64)>> = None;
    let agents = loop {
        let agents = list(&mut client).await.unwrap_or_default();
        let now: Vec<(String, i32, u64)> = agents
            .iter()
            .map(|a| (a.id.clone(), a.status, a.transcript_len))
            .collect();
        let all_settled = agents.iter().all(|a| settled(a.status));
        if all_settled && last.as_ref() == Some(&now) {
            break agents;
        }
        if Instant::now() > deadline {
            for a in agents.iter().filter(|a| !settled(a.status)) {
                v.push(format!(
                    "final: agent {} still {} after 120 s (waiting for: {:?})",
                    a.short_id,
                    pb::AgentStatus::try_from(a.status)
                        .map(|s| s.as_str_name())
                        .unwrap_or("?"),
                    a.waiting_for
                ));
            }
            break agents;
        }
        last = all_settled.then_some(now);
        tokio::time::sleep(Duration::from_millis(500)).await;
    };

    let mut transcripts: HashMap<String, Transcript> = HashMap::new();
    for a in &agents {
        match transcript(&mut client, &a.id).await {
            Ok(t) => {
                check::structure(&a.id, &t, &ledger.lock(), &mut v);
                if settled(a.status) {
                    check::all_answered(&a.short_id, &t, &mut v);
                }
                check::plan_followed(&a.short_id, &t, a.status, &mut v);
                // A read-only agent's message to a less confined sibling
                // is refused, never delivered.
                report.confined_messages_refused +=
                    t.count_in_tool_results("less confined than you");
                if t.count_in_user_texts(model::ESCAPE_MARK) > 0 {
                    v.push(format!(
                        "final: agent {} was given a message from a more confined agent",
                        a.short_id
                    ));
                }
                let (made, asked) = check::compactions(&a.short_id, &t, a.status, &mut v);
                report.compactions += made;
                report.compactions_asked += asked;
                let ledger = ledger.lock();
                if let Some(pauses) = ledger.paused.get(&a.id) {
                    check::pause_held(&a.id, &t, pauses, &ledger.sent, Some(a.status), &mut v);
                }
                drop(ledger);
                // Nothing fails in this workload but a model that keeps
                // failing (faults only): a request the mock refused as
                // malformed, or anything else, fails an agent.
                if a.status == pb::AgentStatus::Failed as i32
                    && !(opts.fault_rate > 0.0 && a.error.contains("gave up after"))
                {
                    v.push(format!("final: agent {} failed: {}", a.short_id, a.error));
                }
                report.entries += t.entries.len() as u64;
                transcripts.insert(a.id.clone(), t);
            }
            Err(e) => v.push(format!("final: {e}")),
        }
    }
    report.agents = agents.len();
    report.pauses_held = ledger.lock().paused.values().map(Vec::len).sum();
    for (key, why) in &ledger.lock().refused_keys {
        if let Some(a) = agents.iter().find(|a| &a.name == key) {
            v.push(format!(
                "final: agent {} ({key}) exists though its creation was refused: {why}",
                a.short_id
            ));
        }
    }
    report.tool_calls = agents.iter().map(|a| u64::from(a.tool_uses)).sum();

    // Notifications: an ended background child's reached its parent once.
    for child in agents.iter().filter(|a| !a.parent_id.is_empty()) {
        if child.subagent_type == "fork" {
            report.forks += 1;
        } else {
            report.children += 1;
        }
        let Some(parent) = transcripts.get(&child.parent_id) else {
            continue;
        };
        let notes = parent.notifications_about(&child.id);
        report.notifications += notes.len();
        // Each run of the child that ended is reported once: a revived
        // child ends again and is reported again, never the same end twice.
        let mut distinct = notes.clone();
        distinct.sort_unstable();
        distinct.dedup();
        if distinct.len() != notes.len() {
            v.push(format!(
                "final: child {}: a notification reached its parent twice",
                child.short_id
            ));
        }
        let runs = transcripts.get(&child.id).map_or(0, Transcript::ended_runs)
            + usize::from(ended(child.status) && child.status != pb::AgentStatus::Completed as i32);
        // At most one per ended run: a message queued while the child
        // ran continues the same run past an end of turn, so ends of turn
        // only bound the runs from above; the newest end is checked below.
        if notes.len() > runs {
            v.push(format!(
                "final: child {}: {} notifications for {runs} ended runs",
                child.short_id,
                notes.len()
            ));
        }
        if ended(child.status) && child.background {
            let status = pb::AgentStatus::try_from(child.status)
                .map(|s| {
                    s.as_str_name()
                        .trim_start_matches("AGENT_STATUS_")
                        .to_lowercase()
                })
                .unwrap_or_default();
            let last_says = notes
                .last()
                .is_some_and(|n| n.contains(&format!("<status>{status}</status>")));
            if !last_says {
                v.push(format!(
                    "final: child {} ended {status}; its parent was not told (notifications: {})",
                    child.short_id,
                    notes.len()
                ));
            }
        }
    }

    // Messages: each at most once; an acknowledged one exactly once.
    for sent in &ledger.lock().sent {
        let Some(t) = transcripts.get(&sent.agent) else {
            continue;
        };
        if let Some(code) = sent.refused
            && !matches!(
                code,
                tonic::Code::FailedPrecondition
                    | tonic::Code::Unavailable
                    | tonic::Code::ResourceExhausted
                    | tonic::Code::Unknown
                    | tonic::Code::Cancelled
            )
        {
            v.push(format!(
                "final: message {} to agent {} refused with {code:?}",
                sent.nonce,
                &sent.agent[..8]
            ));
        }
        let n = t.count_in_user_texts(&format!("{}:", sent.nonce));
        if n > 1 || (sent.refused.is_none() && n != 1) {
            v.push(format!(
                "final: message {} ({}) to agent {} delivered {n} times",
                sent.nonce,
                if sent.refused.is_none() {
                    "acknowledged"
                } else {
                    "refused"
                },
                &sent.agent[..8]
            ));
        }
    }
    report.sends_acknowledged = ledger
        .lock()
        .sent
        .iter()
        .filter(|s| s.refused.is_none())
        .count();

    // Side effects and worktrees (each tree counted for its own agent's
    // lines: see `check::side_effects`).
    let trees: Vec<(PathBuf, Option<&str>)> = agents
        .iter()
        .filter(|a| !a.worktree_path.is_empty())
        .map(|a| {
            let key = (!a.name.is_empty()).then_some(a.name.as_str());
            (PathBuf::from(&a.worktree_path), key)
        })
        .collect();
    report.worktrees = trees.len();
    let project = env.project();
    let mut dirs: Vec<(&Path, Option<&str>)> = vec![(&project, None)];
    dirs.extend(trees.iter().map(|(p, k)| (p.as_path(), *k)));
    let on_disk = check::side_effects(&dirs);
    if dirs.iter().any(|(d, _)| d.join("ESCAPED").exists()) {
        v.push("final: a read-only agent's message was run by a less confined one".into());
    }
    for (line, n) in &on_disk {
        if *n > 1 {
            v.push(format!("final: Bash side effect {line} ran {n} times"));
        }
    }
    let (rewound, rewinding) = {
        let l = ledger.lock();
        (l.rewound.clone(), l.rewind_lane.clone())
    };
    for (id, dir) in &rewound {
        if Some(id) != rewinding.as_ref() && dir.join(model::SIDE_LOG).exists() {
            v.push(format!(
                "final: agent {}: rewound to its first turn, but its side log is still there",
                &id[..8]
            ));
        }
    }
    report.rewound_dirs = rewound.len();
    let history = std::process::Command::new("git")
        .args(["log", "--all", "--format=%s"])
        .current_dir(env.root.path().join("merge-repo"))
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    for a in &agents {
        let Some(t) = transcripts.get(&a.id) else {
            continue;
        };
        // The rewind lane's directories are not among `dirs`, and their
        // side logs go with the rewind: checked above.
        if a.cwd.contains("/rewind-") {
            continue;
        }
        let (ran, _) = check::bash_markers(t);
        // A merge-lane agent's commit step that ran is in the repository.
        let commit = format!("{}.0", a.name);
        if a.name.starts_with('m') && ran.contains(&commit) && !history.lines().any(|l| l == commit)
        {
            v.push(format!(
                "final: agent {}: its commit {commit} is not in the repository",
                a.short_id
            ));
        }
        for marker in &ran {
            if !on_disk.contains_key(marker) {
                v.push(format!(
                    "final: agent {}: Bash {marker} reported as run but not on disk",
                    a.short_id
                ));
            }
        }
        report.bash_run += ran.len();
        if !a.worktree_path.is_empty() && !ran.is_empty() {
            let tree = Path::new(&a.worktree_path);
            if !tree.join(model::SIDE_LOG).exists() {
                v.push(format!(
                    "final: agent {}: its worktree with work is gone ({})",
                    a.short_id, a.worktree_path
                ));
            }
        }
    }
    v
}
