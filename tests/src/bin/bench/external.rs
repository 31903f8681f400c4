//! `bench external`: what agentd adds to a turn of an external agent
//! (DESIGN §19) against the same turn driven directly by an ACP client.
//!
//! The agent is the scripted ACP agent of tests/acp-agent (node, the
//! official TypeScript SDK). In one run, three copies of it:
//! - direct: started by this binary, unconfined, and driven over its stdio
//!   by a plain JSON-RPC client (`agentd_e2e::acp_stdio::AcpAgent`): a turn
//!   is `session/prompt` until its response (the baseline);
//! - under agentd, `[agents.confined]` (the default sandbox, as in real
//!   use) and `[agents.open]` (`sandbox = "off"`, to tell the sandbox's
//!   share from the daemon's): each created idle, attached once, and a turn
//!   is SendMessage until the Attach stream shows the agent completed with
//!   the turn's result. "answer" is the earlier point where the stream
//!   delivers the assistant entry holding the turn's last text;
//! - for reference, agentd's own agent on a scripted model that answers
//!   each plain prompt at once with the agent's text: the daemon's floor
//!   for a turn with no external process.
//!
//! The three are driven in turn, one turn each, so the machine's noise and
//! the idle time between turns fall on all alike. Three kinds of turn:
//! - plain: a short prompt the agent echoes in one chunk;
//! - chunked: an answer in 20 chunks (agentd gathers them into one entry);
//! - tools: 10 steps of a text and a tool call, then a text: agentd writes
//!   each text, each call and each result as its own durable entry.
//!
//! The first turn of each (it starts the agent's process, and under agentd
//! its sandbox) is shown apart and not counted. Besides the times, the CPU
//! time a turn costs, which the machine's load does not inflate: the agent
//! process's in a direct turn, agentd's daemon's (its threads, not the
//! agent's) in the others.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use agentd_e2e::Env;
use agentd_e2e::acp_agent;
use agentd_e2e::acp_stdio::{self, AcpAgent};
use agentd_e2e::script;
use agentd_shared::proto as pb;
use serde_json::{Value, json};

use super::{arg, ms, percentile};

/// How long one turn may take before the bench gives up.
const TURN_LIMIT: Duration = Duration::from_secs(60);

/// The kinds of turn measured.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Plain,
    Chunked,
    Tools,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Plain => "plain (1 chunk)",
            Kind::Chunked => "chunked (20 chunks)",
            Kind::Tools => "tools (10 calls between 11 texts)",
        }
    }
}

/// Turn `i` of `kind`: the prompt and the result the turn must end with.
fn prompt(kind: Kind, i: usize) -> (String, String) {
    match kind {
        Kind::Plain => (format!("q{i}"), format!("echo: q{i}")),
        Kind::Chunked => {
            let parts: Vec<String> = (0..10)
                .map(|k| format!("Part {k} of answer {i}, a line of text. "))
                .collect();
            let steps: Vec<Value> = parts.iter().map(|p| json!({"say": p})).collect();
            (acp_agent::script(&json!(steps)), parts.concat())
        }
        Kind::Tools => {
            let mut steps: Vec<Value> = (0..10)
                .flat_map(|k| {
                    [
                        json!({"say": format!("Step {k}: reading.")}),
                        json!({"tool": {"id": format!("t{i}-{k}"), "title": format!("Read part {k}"),
                                        "kind": "read", "rawInput": {"part": k}},
                               "then": {"text": format!("part {k}")}}),
                    ]
                })
                .collect();
            let last = format!("Done with answer {i}.");
            steps.push(json!({"say": last}));
            (acp_agent::script(&json!(steps)), last)
        }
    }
}

/// Fails the bench with a message saying what is missing.
fn need_node() -> PathBuf {
    match Command::new("node").arg("--version").output() {
        Ok(out) if out.status.success() => {}
        Ok(out) => panic!(
            "bench external needs node (Node.js 18 or newer) on PATH: `node --version` failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ),
        Err(e) => panic!(
            "bench external needs node (Node.js 18 or newer) and npm on PATH: cannot run node ({e})"
        ),
    }
    acp_agent::setup().unwrap_or_else(|e| panic!("bench external cannot set up its agent: {e}"))
}

pub fn bench_external(args: &[String]) {
    let turns: usize = arg(args, "--turns", "200").parse().unwrap();
    let busy: usize = arg(args, "--busy-turns", &(turns / 4).max(1).to_string())
        .parse()
        .unwrap();
    let agent = need_node();
    let env = Env::new();
    let root = env.home().join("scripted");
    let state = |name: &str| root.join(name).display().to_string();
    std::fs::create_dir_all(&root).unwrap();
    let entry = |name: &str, extra: &str| {
        format!(
            "[agents.{name}]\ncommand = \"node\"\nargs = [{agent:?}]\n\
             env = {{ TEST_AGENT_STATE = {state:?} }}\nwritable = [{root:?}]\n{extra}\n",
            agent = agent.display().to_string(),
            state = state(name),
            root = root.display().to_string(),
        )
    };
    env.write_config(&format!(
        "{}{}",
        entry("confined", ""),
        entry("open", "sandbox = \"off\"")
    ));
    let daemon = env.start_daemon();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();

    // agentd's own agent on a scripted model answering each plain prompt
    // at once as the agent does: the daemon's floor for a turn.
    let answers: Vec<Value> = (0..=turns)
        .map(|i| script::turn(vec![script::text(&prompt(Kind::Plain, i).1)]))
        .collect();
    let model = env.script("own.json", &script::script(answers));
    let mut ways = Ways {
        direct: Direct::start(&agent, &root.join("direct"), &env.project()),
        confined: rt.block_on(Supervised::create(&env, "confined", "")),
        open: rt.block_on(Supervised::create(&env, "open", "")),
        own: rt.block_on(Supervised::create(&env, "", &model)),
        daemon: daemon.pid(),
    };
    let (first_prompt, first_result) = prompt(Kind::Plain, 0);
    let first = ways.turn(&rt, &first_prompt, &first_result, true);
    // What the daemon spends with nothing to do, against which its CPU
    // time in a turn is read.
    let idle = cpu_time(ways.daemon);
    std::thread::sleep(Duration::from_secs(1));
    let idle = cpu_time(ways.daemon).saturating_sub(idle);
    println!(
        "External agent turns (tests/acp-agent/agent.mjs on node; agentd's sandbox confined = the default, open = sandbox off):"
    );
    println!(
        "  first turn, starting the agent (one each): direct (spawn, initialize, session/new, prompt) {:.1} ms; agentd confined {:.1} ms, open {:.1} ms (agentd's own agent {:.1} ms)",
        ms(ways.direct.startup + first.direct),
        ms(first.confined.done),
        ms(first.open.done),
        first.own.map_or(0.0, |t| ms(t.done))
    );

    println!(
        "  agentd's daemon idle, its agents' processes waiting: {:.2} ms CPU a second",
        ms(idle)
    );
    for (kind, n) in [
        (Kind::Plain, turns),
        (Kind::Chunked, busy),
        (Kind::Tools, busy),
    ] {
        let mut times = Times::default();
        for i in 1..=n {
            let (text, result) = prompt(kind, i);
            times.push(ways.turn(&rt, &text, &result, kind == Kind::Plain));
        }
        times.report(kind, n);
    }
}

/// The ways a turn is driven.
struct Ways {
    direct: Direct,
    confined: Supervised,
    open: Supervised,
    /// agentd's own agent, for plain turns.
    own: Supervised,
    /// The daemon's pid, for its CPU time.
    daemon: i32,
}

/// One turn through each way.
struct Round {
    direct: Duration,
    /// The agent process's CPU time in the direct turn.
    direct_cpu: Duration,
    confined: Through,
    open: Through,
    own: Option<Through>,
}

impl Ways {
    /// One turn each, in turn; `own` too when `with_own`.
    fn turn(
        &mut self,
        rt: &tokio::runtime::Runtime,
        text: &str,
        result: &str,
        with_own: bool,
    ) -> Round {
        let agent = self.direct.agent.pid() as i32;
        let cpu = cpu_time(agent);
        let direct = self.direct.turn(text, result);
        let direct_cpu = cpu_time(agent).saturating_sub(cpu);
        let daemon = self.daemon;
        let through = |way: &mut Supervised| {
            let cpu = cpu_time(daemon);
            let mut t = rt.block_on(way.turn(text, result));
            t.cpu = cpu_time(daemon).saturating_sub(cpu);
            t
        };
        let confined = through(&mut self.confined);
        let open = through(&mut self.open);
        let own = with_own.then(|| through(&mut self.own));
        Round {
            direct,
            direct_cpu,
            confined,
            open,
            own,
        }
    }
}

/// The rounds of one kind of turn.
#[derive(Default)]
struct Times {
    direct: Vec<Duration>,
    confined: Vec<Duration>,
    confined_answer: Vec<Duration>,
    open: Vec<Duration>,
    open_answer: Vec<Duration>,
    own: Vec<Duration>,
    entries: Vec<usize>,
    /// CPU time: the agent's in direct turns, the daemon's in the others.
    cpu: [Vec<Duration>; 4],
}

impl Times {
    fn push(&mut self, round: Round) {
        self.direct.push(round.direct);
        self.confined.push(round.confined.done);
        self.confined_answer.push(round.confined.answer);
        self.open.push(round.open.done);
        self.open_answer.push(round.open.answer);
        self.entries.push(round.confined.entries);
        self.cpu[0].push(round.direct_cpu);
        self.cpu[1].push(round.confined.cpu);
        self.cpu[2].push(round.open.cpu);
        self.cpu[3].extend(round.own.as_ref().map(|t| t.cpu));
        self.own.extend(round.own.map(|t| t.done));
    }

    fn report(mut self, kind: Kind, n: usize) {
        for v in [
            &mut self.direct,
            &mut self.confined,
            &mut self.confined_answer,
            &mut self.open,
            &mut self.open_answer,
            &mut self.own,
        ] {
            v.sort();
        }
        self.entries.sort();
        println!(
            "  {} turns, n={n} each, {} transcript entries a turn under agentd:",
            kind.name(),
            self.entries[self.entries.len() / 2]
        );
        line(
            "direct ACP client: prompt -> response (baseline)",
            &self.direct,
            None,
        );
        let base = Some(self.direct.as_slice());
        line(
            "agentd confined: send -> answer entry seen",
            &self.confined_answer,
            base,
        );
        line(
            "agentd confined: send -> completed with result",
            &self.confined,
            base,
        );
        line(
            "agentd open: send -> answer entry seen",
            &self.open_answer,
            base,
        );
        line(
            "agentd open: send -> completed with result",
            &self.open,
            base,
        );
        if !self.own.is_empty() {
            line(
                "agentd's own agent, scripted model: completed",
                &self.own,
                base,
            );
        }
        let mean = |v: &[Duration]| ms(v.iter().sum::<Duration>()) / v.len().max(1) as f64;
        println!(
            "    CPU a turn (mean): the agent process, direct {:.2} ms; agentd's daemon: confined {:.2} ms, open {:.2} ms{}",
            mean(&self.cpu[0]),
            mean(&self.cpu[1]),
            mean(&self.cpu[2]),
            if self.cpu[3].is_empty() {
                String::new()
            } else {
                format!(", own agent {:.2} ms", mean(&self.cpu[3]))
            }
        );
    }
}

/// One line of figures; with a baseline, the ratio of the p50s and what
/// agentd adds at p50 and p90.
fn line(name: &str, sorted: &[Duration], base: Option<&[Duration]>) {
    let p = |v: &[Duration], q: f64| ms(percentile(v, q));
    let mut out = format!(
        "    {name:<50} p50 {:>7.2} ms  p90 {:>7.2} ms  p99 {:>7.2} ms",
        p(sorted, 0.5),
        p(sorted, 0.9),
        p(sorted, 0.99)
    );
    if let Some(base) = base {
        out.push_str(&format!(
            "  = {:.2}x; {:+.2} ms at p50, {:+.2} ms at p90",
            p(sorted, 0.5) / p(base, 0.5),
            p(sorted, 0.5) - p(base, 0.5),
            p(sorted, 0.9) - p(base, 0.9)
        ));
    }
    println!("{out}");
}

/// The agent driven directly over its stdio.
struct Direct {
    agent: AcpAgent,
    session: String,
    /// Spawn, initialize and session/new.
    startup: Duration,
    /// The messages of `agent.received` already checked.
    seen: usize,
}

impl Direct {
    /// Spawns the agent, initializes it and opens a session in `cwd`.
    fn start(script: &Path, state: &Path, cwd: &Path) -> Direct {
        let mut cmd = Command::new("node");
        cmd.arg(script)
            .env("TEST_AGENT_STATE", state)
            .current_dir(cwd);
        let stderr = state.with_extension("stderr");
        let started = Instant::now();
        let mut agent = AcpAgent::spawn(cmd, stderr).expect("node starts");
        let init = agent.request(
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": {}}),
            TURN_LIMIT,
            &mut acp_stdio::refuse,
        );
        assert_eq!(init.expect("initialize")["protocolVersion"], 1);
        let session = agent
            .request(
                "session/new",
                json!({"cwd": cwd.display().to_string(), "mcpServers": []}),
                TURN_LIMIT,
                &mut acp_stdio::refuse,
            )
            .expect("session/new")["sessionId"]
            .as_str()
            .expect("a session id")
            .to_string();
        Direct {
            agent,
            session,
            startup: started.elapsed(),
            seen: 0,
        }
    }

    /// One prompt until its response. The text the agent sent must be
    /// `result`.
    fn turn(&mut self, text: &str, result: &str) -> Duration {
        let t = Instant::now();
        let answer = self
            .agent
            .request(
                "session/prompt",
                json!({"sessionId": self.session, "prompt": [{"type": "text", "text": text}]}),
                TURN_LIMIT,
                &mut acp_stdio::refuse,
            )
            .expect("session/prompt");
        let took = t.elapsed();
        assert_eq!(answer["stopReason"], "end_turn", "{answer}");
        let updates: Vec<Value> = self.agent.received[self.seen..]
            .iter()
            .filter(|m| m["method"] == "session/update")
            .map(|m| m["params"]["update"].clone())
            .collect();
        self.seen = self.agent.received.len();
        // The turn's answer: its text after its last tool call.
        let last_call = updates
            .iter()
            .rposition(|u| u["sessionUpdate"] == "tool_call");
        let after = last_call.map_or(&updates[..], |k| &updates[k..]);
        assert_eq!(acp_stdio::agent_text(after), result);
        took
    }
}

/// An agent run by agentd, followed on one Attach stream.
struct Supervised {
    client: agentd_e2e::ApiClient,
    id: String,
    /// Keeps the stream open.
    _tx: tokio::sync::mpsc::Sender<pb::AttachRequest>,
    events: tonic::Streaming<pb::AttachEvent>,
}

/// One turn under agentd.
struct Through {
    /// Until the stream delivered the assistant entry with the result.
    answer: Duration,
    /// Until the stream said the agent completed with the result.
    done: Duration,
    /// The entries the turn wrote.
    entries: usize,
    /// The daemon's CPU time in the turn (set by [`Ways::turn`]).
    cpu: Duration,
}

impl Supervised {
    /// Creates an idle agent run by `executor` (or, with none, agentd's
    /// own on `model`) and attaches to it.
    async fn create(env: &Env, executor: &str, model: &str) -> Supervised {
        let mut client = agentd_shared::client::agent_client(&env.socket())
            .await
            .unwrap();
        let id = client
            .create_agent(pb::CreateAgentRequest {
                idle: true,
                executor: executor.into(),
                model: model.into(),
                name: format!(
                    "bench-{}",
                    if executor.is_empty() { "own" } else { executor }
                ),
                cwd: env.project().display().to_string(),
                ..Default::default()
            })
            .await
            .unwrap_or_else(|e| panic!("CreateAgent with executor {executor}: {e}"))
            .into_inner()
            .id;
        let (tx, rx) = tokio::sync::mpsc::channel(4);
        tx.send(agentd_e2e::attach_start(&id, 0)).await.unwrap();
        let events = client
            .attach(tokio_stream::wrappers::ReceiverStream::new(rx))
            .await
            .unwrap()
            .into_inner();
        Supervised {
            client,
            id,
            _tx: tx,
            events,
        }
    }

    /// SendMessage, then the stream's events until the agent completed
    /// with `result`.
    async fn turn(&mut self, text: &str, result: &str) -> Through {
        let t = Instant::now();
        self.client
            .send_message(pb::SendMessageRequest {
                id: self.id.clone(),
                message: text.into(),
                ..Default::default()
            })
            .await
            .unwrap_or_else(|e| panic!("SendMessage to {}: {e}", self.id));
        let (mut answer, mut entries) = (None, 0);
        // The text of the assistant's entries since the turn's last call.
        let mut said = String::new();
        loop {
            let event = tokio::time::timeout(TURN_LIMIT, self.events.message())
                .await
                .unwrap_or_else(|_| panic!("no end of the turn of {} in time", self.id))
                .expect("the attach stream")
                .expect("the attach stream stays open");
            match event.event {
                Some(pb::attach_event::Event::Entry(e)) => {
                    entries += 1;
                    let blocks: Vec<Value> =
                        serde_json::from_slice(&e.content_json).unwrap_or_default();
                    for b in &blocks {
                        match b["type"].as_str() {
                            Some("tool_use" | "tool_result") => said.clear(),
                            Some("text") if e.role == pb::Role::Assistant as i32 => {
                                said.push_str(b["text"].as_str().unwrap_or_default());
                            }
                            _ => {}
                        }
                    }
                    if answer.is_none() && said == result {
                        answer = Some(t.elapsed());
                    }
                }
                Some(pb::attach_event::Event::Status(s)) => {
                    if s.status == pb::AgentStatus::Completed as i32 && s.result == result {
                        let done = t.elapsed();
                        return Through {
                            answer: answer.expect("the answer's entry came before the end"),
                            done,
                            entries,
                            cpu: Duration::ZERO,
                        };
                    }
                    assert!(
                        s.status != pb::AgentStatus::Failed as i32,
                        "the agent {} failed: {}",
                        self.id,
                        s.error
                    );
                }
                _ => {}
            }
        }
    }
}

/// The CPU time the threads of process `pid` have run (their schedstat,
/// in nanoseconds; a thread that ended meanwhile is not counted).
fn cpu_time(pid: i32) -> Duration {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Duration::ZERO;
    };
    let ns: u64 = tasks
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum();
    Duration::from_nanos(ns)
}
