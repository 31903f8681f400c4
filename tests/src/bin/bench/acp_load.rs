//! `bench acp-load`: the editor bridge's memory with a long session loaded.
//! One session is built through `agentctl acp` (bypass mode, a scripted
//! model answering at once), turn by turn: each turn a prompt, a Write of a
//! small file (so the replay carries a recorded diff), and an answer. At
//! the checkpoints (0 turns: the baseline, an empty session loaded; then
//! every `--every` turns up to `--turns`), a fresh bridge process
//! `session/load`s it, and its VmRSS (and VmHWM, the peak) is read from
//! /proc once the replay has been answered. The same fresh bridge after
//! `initialize` alone is shown too. Each figure is the median of `--runs`
//! fresh bridges.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Stdio};
use std::time::{Duration, Instant};

use agentd_e2e::Env;
use agentd_e2e::script::{script, text, tool, turn};
use serde_json::{Value, json};

use super::{arg, ms, status_kb};

/// A bridge process and its JSON-RPC stream, as an editor holds it.
struct Bridge {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

/// What one request brought: its response and the notifications before it.
struct Answer {
    response: Value,
    updates: usize,
    update_bytes: usize,
}

impl Bridge {
    fn start(env: &Env, extra: &[&str]) -> Bridge {
        let mut args = vec!["acp"];
        args.extend_from_slice(extra);
        let mut child = env
            .ctl_command(&args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut bridge = Bridge {
            child,
            stdin,
            stdout,
            next_id: 0,
        };
        bridge.call("initialize", json!({"protocolVersion": 1}));
        bridge
    }

    fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// Sends a request and reads until its response, counting the
    /// `session/update`s on the way (the bridge asks nothing in bypass).
    fn call(&mut self, method: &str, params: Value) -> Answer {
        let id = self.next_id;
        self.next_id += 1;
        let request = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        writeln!(self.stdin, "{request}").unwrap();
        self.stdin.flush().unwrap();
        let (mut updates, mut update_bytes) = (0, 0);
        let mut line = String::new();
        loop {
            line.clear();
            assert!(
                self.stdout.read_line(&mut line).unwrap() > 0,
                "bridge ended"
            );
            let m: Value = serde_json::from_str(&line).unwrap();
            if m["method"] == "session/update" {
                updates += 1;
                update_bytes += line.len();
            } else if m["id"] == id && m.get("method").is_none() {
                assert!(m.get("error").is_none(), "{method}: {m}");
                return Answer {
                    response: m,
                    updates,
                    update_bytes,
                };
            } else {
                panic!("the bridge asked something in bypass mode: {m}");
            }
        }
    }

    fn close(mut self) {
        drop(self.stdin);
        let _ = self.child.wait();
    }
}

/// One fresh bridge's figures, in KiB: after `initialize`, then after the
/// session's replay was answered (VmRSS, VmHWM); and the replay's size.
struct Loaded {
    idle_kb: u64,
    rss_kb: u64,
    hwm_kb: u64,
    updates: usize,
    update_bytes: usize,
    took: Duration,
}

fn load_fresh(env: &Env, session: &str) -> Loaded {
    let mut bridge = Bridge::start(env, &["--permission-mode", "bypass"]);
    let idle_kb = status_kb(bridge.pid(), "VmRSS:");
    let t = Instant::now();
    let answer = bridge.call(
        "session/load",
        json!({"sessionId": session, "cwd": env.project().display().to_string(), "mcpServers": []}),
    );
    let took = t.elapsed();
    let loaded = Loaded {
        idle_kb,
        rss_kb: status_kb(bridge.pid(), "VmRSS:"),
        hwm_kb: status_kb(bridge.pid(), "VmHWM:"),
        updates: answer.updates,
        update_bytes: answer.update_bytes,
        took,
    };
    bridge.close();
    loaded
}

fn median<T: Copy + Ord>(mut v: Vec<T>) -> T {
    v.sort();
    v[v.len() / 2]
}

fn mib(kb: u64) -> f64 {
    kb as f64 / 1024.0
}

/// The median figures of `runs` fresh bridges loading `session`.
fn measure(env: &Env, session: &str, runs: usize) -> Loaded {
    let all: Vec<Loaded> = (0..runs).map(|_| load_fresh(env, session)).collect();
    Loaded {
        idle_kb: median(all.iter().map(|l| l.idle_kb).collect()),
        rss_kb: median(all.iter().map(|l| l.rss_kb).collect()),
        hwm_kb: median(all.iter().map(|l| l.hwm_kb).collect()),
        updates: all[0].updates,
        update_bytes: all[0].update_bytes,
        took: median(all.iter().map(|l| l.took).collect()),
    }
}

/// The scripted model's two answers for each turn: a Write, then text.
fn model_script(turns: usize) -> Value {
    let per_turn = |i: usize| {
        let content = format!("turn {i}: {}\n", "notes of this turn ".repeat(4));
        [
            turn(vec![
                text(&format!("Writing the notes of turn {i}.")),
                tool(
                    "Write",
                    json!({"file_path": "notes.txt", "content": content}),
                ),
            ]),
            turn(vec![text(&format!(
                "Turn {i} is done: the notes are written, and this answer is about as long as a short reply."
            ))]),
        ]
    };
    script((0..turns).flat_map(per_turn).collect())
}

pub fn bench_acp_load(args: &[String]) {
    let turns: usize = arg(args, "--turns", "1000").parse().unwrap();
    let every: usize = arg(args, "--every", "250").parse().unwrap();
    let runs: usize = arg(args, "--runs", "3").parse().unwrap();
    let env = Env::new();
    let _daemon = env.start_daemon();
    let model = env.script("load.json", &model_script(turns));
    let cwd = env.project().display().to_string();

    let mut builder = Bridge::start(&env, &["--permission-mode", "bypass", "--model", &model]);
    let session = builder
        .call("session/new", json!({"cwd": cwd, "mcpServers": []}))
        .response["result"]["sessionId"]
        .as_str()
        .unwrap()
        .to_string();
    println!(
        "{:>6}  {:>10}  {:>9}  {:>10}  {:>10}  {:>10}  {:>9}  {:>8}",
        "turns", "idle MiB", "updates", "upd. MiB", "RSS MiB", "HWM MiB", "RSS/base", "load ms"
    );
    let (mut done, mut base) = (0, None);
    let built = Instant::now();
    loop {
        let l = measure(&env, &session, runs);
        let base_kb = *base.get_or_insert(l.rss_kb);
        println!(
            "{done:>6}  {:>10.2}  {:>9}  {:>10.2}  {:>10.2}  {:>10.2}  {:>8.2}×  {:>8.1}",
            mib(l.idle_kb),
            l.updates,
            l.update_bytes as f64 / 1048576.0,
            mib(l.rss_kb),
            mib(l.hwm_kb),
            l.rss_kb as f64 / base_kb as f64,
            ms(l.took)
        );
        if done > 0 {
            let added = l.rss_kb as f64 - base_kb as f64;
            println!(
                "        over the empty session: {:+.2} MiB = {:.2} KiB per turn, {:.3} bytes of RSS per byte of updates",
                added / 1024.0,
                added / done as f64,
                added * 1024.0 / l.update_bytes as f64
            );
        }
        if done >= turns {
            break;
        }
        let t = Instant::now();
        for _ in 0..every.min(turns - done) {
            let r = builder.call(
                "session/prompt",
                json!({"sessionId": session, "prompt": [{"type": "text", "text": format!("note turn {done}")}]}),
            );
            assert_eq!(r.response["result"]["stopReason"], "end_turn");
            done += 1;
        }
        eprintln!(
            "  built to {done} turns ({:.1} s for this step, {:.1} s in all)",
            t.elapsed().as_secs_f64(),
            built.elapsed().as_secs_f64()
        );
    }
    builder.close();
}
