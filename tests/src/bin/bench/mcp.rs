//! `bench mcp`: what agentd adds to an MCP tool call, and what a running
//! stdio server costs (DESIGN §18).
//!
//! The call. One agent, driven by the mock model, makes 2N tool calls that
//! alternate between `mcp__fx__echo` (tests/mcp/server.py over stdio, under
//! the agent's sandbox unless `--server-sandbox off`) and a call of a tool
//! that does not exist, which the daemon answers with an error without
//! running anything. The mock times each gap between the end of a response
//! and the next request: the daemon parsing the message, running the call,
//! writing the result durably and building the next request. The difference
//! between the two kinds of gap is what the MCP call costs inside a turn.
//! Both kinds share one agent and alternate, so the transcript's growth and
//! the machine's noise fall on both alike; the first call of each kind (the
//! first MCP call starts the server) is not counted.
//!
//! The baseline is the server's own round trip: the same server, started by
//! this binary with no sandbox, called N times through the MCP client the
//! daemon uses (`agentd::mcp::Session`, rmcp). Under agentd the server sits
//! idle between calls (the rest of each turn), and a process woken from
//! idle answers more slowly than one called back to back (on this VM by
//! about a millisecond), so each baseline call comes after the same idle
//! time as the agent's calls had (measured from the mock's timings); calls
//! made back to back are shown too, alternating with them. What agentd adds
//! is the call's cost inside a turn minus the paced round trip.
//!
//! The server. K agents each hold a call of the fixture's `sleep` tool:
//! first of a definition with `shared = false`, so K servers run at once,
//! then of the same server shared, so one does. The RSS (and PSS, shared
//! pages divided among their users) of the server processes and of the
//! sandbox processes of the agents' runs are read from /proc, with the
//! daemon's RSS growth, against the directly started server's; per agent.

use std::collections::HashMap;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use agentd::mcp::{ServerName, Session};
use agentd_e2e::Env;
use agentd_e2e::mcp_fixtures::{self, McpFixtures};
use agentd_e2e::mock::{Block, MockMessage, MockServer, Reply};
use agentd_shared::proto as pb;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::{arg, ms, percentile, status_kb};

const ECHO: &str = "mcp__fx__echo";
const NOOP: &str = "bench_no_such_tool";

fn call(i: usize, tool: &str) -> Reply {
    let input = if tool == ECHO {
        json!({"text": format!("ping {i}")})
    } else {
        json!({})
    };
    Reply::Message(MockMessage::text("Again.").with(Block::ToolUse {
        id: format!("toolu_{i:05}"),
        name: tool.into(),
        input,
    }))
}

fn line(name: &str, sorted: &[Duration]) {
    println!(
        "{name:<58} p50 {:>7.3} ms   p90 {:>7.3} ms   (n={})",
        ms(percentile(sorted, 0.5)),
        ms(percentile(sorted, 0.9)),
        sorted.len()
    );
}

pub fn bench_mcp(args: &[String]) {
    let calls: usize = arg(args, "--calls", "200").parse().unwrap();
    let servers: usize = arg(args, "--servers", "4").parse().unwrap();
    // "off": the server runs unconfined (`sandbox = "off"`), to tell the
    // sandbox's share of the cost from the daemon's.
    let sandbox = arg(args, "--server-sandbox", "agent");
    let fx = mcp_fixtures::setup().unwrap_or_else(|e| panic!("MCP fixtures: {e}"));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let direct = rt.block_on(DirectServer::start(&fx));

    let mock = MockServer::start();
    let env = Env::with_mock(&mock);
    let log = env.project().join("fixture.log");
    let (command, cmd_args) = fx.python_stdio_command();
    let server = |name: &str, extra: &str| {
        format!(
            "[mcp_servers.{name}]\ncommand = {}\nargs = {}\nsandbox = {}\nenv = {{ MCP_FIXTURE_LOG = {} }}\n{extra}\n",
            json!(command),
            json!(cmd_args),
            json!(sandbox),
            json!(log.display().to_string()),
        )
    };
    env.write_config(&format!(
        "max_running_agents = {}\n{}{}",
        servers + 8,
        server("fx", ""),
        server("fxsolo", "shared = false"),
    ));
    let daemon = env.start_daemon();

    let agent = through_agentd(&rt, &env, &mock, calls);
    // The server under agentd is idle between calls (the rest of each
    // turn): the direct calls get the same idle time before each, and, for
    // reference, are made back to back too, alternating.
    let cost_p50 = agent.mcp[agent.mcp.len() / 2].saturating_sub(agent.noop[agent.noop.len() / 2]);
    let idle = agent.spacing.saturating_sub(cost_p50);
    let (paced, hot) = rt.block_on(direct.calls(calls, idle));

    println!(
        "MCP tool call, {calls} calls of each kind (tests/mcp/server.py echo over stdio; server sandbox {sandbox}):"
    );
    line("direct: the server's round trip, calls back to back", &hot);
    line(
        &format!(
            "direct: the same, each after {:.1} ms idle (baseline)",
            ms(idle)
        ),
        &paced,
    );
    line("agentd turn gap after an MCP echo call", &agent.mcp);
    line("agentd turn gap after a tool answered at once", &agent.noop);
    let cost = |p: f64| ms(percentile(&agent.mcp, p)) - ms(percentile(&agent.noop, p));
    let base = |p: f64| ms(percentile(&paced, p));
    for (name, p) in [("p50", 0.5), ("p90", 0.9)] {
        println!(
            "  {name}: the MCP call inside a turn {:.3} ms = {:.2}x the direct round trip {:.3} ms; agentd adds {:.3} ms",
            cost(p),
            cost(p) / base(p),
            base(p),
            cost(p) - base(p)
        );
    }

    let fleet = Fleet {
        rt: &rt,
        env: &env,
        mock: &mock,
        log: &log,
        daemon: daemon.pid(),
        k: servers,
        direct: &direct,
    };
    let own = fleet.run("fxsolo", servers);
    let shared = fleet.run("fx", 1);
    println!(
        "  {servers} agents sharing one server: its RSS {:.1} MiB against {:.1} MiB for a server each = {:.2}x",
        mib(shared),
        mib(own),
        mib(shared) / mib(own)
    );
    drop(direct);
}

/// What the mock saw of the agent's calls.
struct AgentRun {
    /// The turn gaps after MCP calls, sorted.
    mcp: Vec<Duration>,
    /// The turn gaps after calls answered at once, sorted.
    noop: Vec<Duration>,
    /// The median time from one MCP call's response to the next's.
    spacing: Duration,
}

fn through_agentd(
    rt: &tokio::runtime::Runtime,
    env: &Env,
    mock: &MockServer,
    calls: usize,
) -> AgentRun {
    // Warm-up calls of each kind first (the first MCP call starts the
    // server), then the measured ones, alternating.
    let kinds: Vec<&str> = (0..calls + 1).flat_map(|_| [ECHO, NOOP]).collect();
    mock.enqueue_all(kinds.iter().enumerate().map(|(i, k)| call(i, k)));
    mock.enqueue(Reply::text("done"));
    let id = rt.block_on(async {
        let mut client = agentd_shared::client::agent_client(&env.socket())
            .await
            .unwrap();
        client
            .create_agent(pb::CreateAgentRequest {
                prompt: "Call the tools.".into(),
                model: "anthropic:claude-bench".into(),
                cwd: env.project().display().to_string(),
                max_turns: kinds.len() as u32 + 10,
                background: true,
                ..Default::default()
            })
            .await
            .unwrap()
            .into_inner()
            .id
    });
    env.ctl(&["wait", &id]).expect_code(0);
    let requests = mock.requests();
    assert_eq!(requests.len(), kinds.len() + 1);
    let (mut mcp, mut noop, mut spacing) = (Vec::new(), Vec::new(), Vec::new());
    for (k, kind) in kinds.iter().enumerate().skip(2) {
        let gap = requests[k + 1].received_at - requests[k].completed_at.unwrap();
        if *kind == ECHO { &mut mcp } else { &mut noop }.push(gap);
        if *kind == ECHO && k + 2 < kinds.len() {
            spacing.push(requests[k + 2].completed_at.unwrap() - requests[k].completed_at.unwrap());
        }
    }
    spacing.sort();
    let last = requests.last().unwrap();
    let results = agentd_e2e::tool_results(last.messages());
    assert!(
        results.iter().any(|(e, t)| !e && t.starts_with("ping")),
        "the echo answered"
    );
    mcp.sort();
    noop.sort();
    AgentRun {
        mcp,
        noop,
        spacing: spacing[spacing.len() / 2],
    }
}

/// server.py over stdio, started here and spoken to through the client the
/// daemon uses.
struct DirectServer {
    child: tokio::process::Child,
    session: Session,
}

impl DirectServer {
    async fn start(fx: &McpFixtures) -> DirectServer {
        let (command, args) = fx.python_stdio_command();
        let mut child = tokio::process::Command::new(command)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let (stdin, stdout) = (child.stdin.take().unwrap(), child.stdout.take().unwrap());
        let name = ServerName::parse("fx").unwrap();
        let session = Session::over_stdio(name, stdout, stdin, Duration::from_secs(30))
            .await
            .unwrap();
        DirectServer { child, session }
    }

    /// One echo call, timed.
    async fn call(&self, i: usize) -> Duration {
        let t = Instant::now();
        let out = self
            .session
            .call(
                "echo",
                json!({"text": format!("ping {i}")}),
                Duration::from_secs(30),
                CancellationToken::new(),
            )
            .await
            .unwrap();
        let took = t.elapsed();
        assert!(!out.is_error);
        took
    }

    /// `n` echo calls made after `idle` and `n` made right after another,
    /// alternating (after one untimed call): both sorted.
    async fn calls(&self, n: usize, idle: Duration) -> (Vec<Duration>, Vec<Duration>) {
        self.call(0).await;
        let (mut paced, mut hot) = (Vec::with_capacity(n), Vec::with_capacity(n));
        for i in 0..n {
            tokio::time::sleep(idle).await;
            paced.push(self.call(2 * i + 1).await);
            hot.push(self.call(2 * i + 2).await);
        }
        paced.sort();
        hot.sort();
        (paced, hot)
    }

    fn pid(&self) -> i32 {
        self.child.id().unwrap() as i32
    }
}

/// Every process's parent, from /proc.
fn parents() -> HashMap<i32, i32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            let ppid = stat.rsplit(") ").next()?.split_whitespace().nth(1)?;
            Some((pid, ppid.parse().ok()?))
        })
        .collect()
}

fn descendants(root: i32) -> Vec<i32> {
    let parents = parents();
    let mut found = vec![root];
    let mut i = 0;
    while i < found.len() {
        let p = found[i];
        found.extend(parents.iter().filter(|(_, pp)| **pp == p).map(|(c, _)| *c));
        i += 1;
    }
    found.remove(0);
    found
}

fn comm(pid: i32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .map(|c| c.trim().to_string())
        .unwrap_or_default()
}

fn is_server(pid: i32) -> bool {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|c| String::from_utf8_lossy(&c).contains("server.py"))
        .unwrap_or(false)
}

/// A KiB figure of /proc/PID/smaps_rollup (`Pss:`, `Rss:`).
fn rollup_kb(pid: i32, key: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup"))
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with(key))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn mib(kb: u64) -> f64 {
    kb as f64 / 1024.0
}

fn starts(log: &Path) -> usize {
    std::fs::read_to_string(log)
        .map(|t| t.lines().filter(|l| l.starts_with("started")).count())
        .unwrap_or(0)
}

/// K agents each in a 60 s `sleep` call of one server.
struct Fleet<'a> {
    rt: &'a tokio::runtime::Runtime,
    env: &'a Env,
    mock: &'a MockServer,
    log: &'a Path,
    daemon: i32,
    k: usize,
    direct: &'a DirectServer,
}

impl Fleet<'_> {
    /// K agents each in a call of `server`'s `sleep`, which runs as
    /// `processes` processes; prints what they cost, per agent. The RSS of
    /// the server processes, in KiB.
    fn run(&self, server: &str, processes: usize) -> u64 {
        let (k, env) = (self.k, self.env);
        std::thread::sleep(Duration::from_millis(500));
        let daemon_before = status_kb(self.daemon, "VmRSS:");
        let before = starts(self.log);
        for i in 0..k {
            self.mock
                .enqueue(Reply::Message(MockMessage::text("Sleeping.").with(
                    Block::ToolUse {
                        id: format!("toolu_s{i}"),
                        name: format!("mcp__{server}__sleep"),
                        input: json!({"seconds": 60}),
                    },
                )));
        }
        let ids: Vec<String> = (0..k)
            .map(|i| {
                self.rt.block_on(async {
                    let mut client = agentd_shared::client::agent_client(&env.socket())
                        .await
                        .unwrap();
                    client
                        .create_agent(pb::CreateAgentRequest {
                            prompt: format!("Sleep {i}."),
                            model: "anthropic:claude-bench".into(),
                            cwd: env.project().display().to_string(),
                            background: true,
                            ..Default::default()
                        })
                        .await
                        .unwrap()
                        .into_inner()
                        .id
                })
            })
            .collect();
        // Each agent's listing of both servers at creation, then the
        // calls' servers.
        let deadline = Instant::now() + Duration::from_secs(120);
        while starts(self.log) < before + 2 * k + processes {
            assert!(Instant::now() < deadline, "the servers did not start");
            std::thread::sleep(Duration::from_millis(100));
        }
        std::thread::sleep(Duration::from_secs(2));
        let daemon_during = status_kb(self.daemon, "VmRSS:");
        let family = descendants(self.daemon);
        let servers: Vec<i32> = family.iter().copied().filter(|p| is_server(*p)).collect();
        let helpers: Vec<i32> = family.iter().copied().filter(|p| !is_server(*p)).collect();
        assert_eq!(servers.len(), processes, "running servers: {servers:?}");
        let sum = |pids: &[i32], f: &dyn Fn(i32) -> u64| pids.iter().map(|p| f(*p)).sum::<u64>();
        let rss = |p| status_kb(p, "VmRSS:");
        let pss = |p| rollup_kb(p, "Pss:");
        let per = |total: u64| mib(total) / k as f64;
        let direct = self.direct.pid();
        let (direct_rss, direct_pss) = (rss(direct), pss(direct));
        println!(
            "{k} agents each in a call of `sleep` of {server}: {processes} server process(es) running:"
        );
        println!(
            "  direct server.py, no daemon (baseline)      RSS {:>6.1} MiB   PSS {:>6.1} MiB",
            mib(direct_rss),
            mib(direct_pss)
        );
        let server_rss = sum(&servers, &rss);
        println!(
            "  per agent under agentd: server.py           RSS {:>6.1} MiB   PSS {:>6.1} MiB   ({:.2}x baseline RSS)",
            per(server_rss),
            per(sum(&servers, &pss)),
            per(server_rss) / mib(direct_rss)
        );
        let mut names: std::collections::BTreeMap<String, usize> = Default::default();
        for p in &helpers {
            *names.entry(comm(*p)).or_default() += 1;
        }
        let names: Vec<String> = names.iter().map(|(n, c)| format!("{c} x {n}")).collect();
        println!(
            "  per agent under agentd: sandbox processes   RSS {:>6.1} MiB   PSS {:>6.1} MiB   ({})",
            per(sum(&helpers, &rss)),
            per(sum(&helpers, &pss)),
            names.join(", ")
        );
        println!(
            "  daemon RSS {:.1} MiB before, {:.1} MiB with them: {:.2} MiB per running agent",
            mib(daemon_before),
            mib(daemon_during),
            (mib(daemon_during) - mib(daemon_before)) / k as f64
        );
        for id in ids {
            env.ctl(&["stop", &id]).expect_code(0);
        }
        // The stopped agents' servers end before the next fleet is counted.
        let deadline = Instant::now() + Duration::from_secs(30);
        while descendants(self.daemon).iter().any(|p| is_server(*p)) {
            assert!(Instant::now() < deadline, "the servers did not end");
            std::thread::sleep(Duration::from_millis(100));
        }
        server_rss
    }
}
