//! `bench pueue`: `agentctl list --json` with 1,000 completed agents
//! against pueue's `pueue status --json` with 1,000 completed tasks, the
//! nearest thing another task supervisor does, alternating in one run.
//!
//! pueue is installed by this bench (`cargo install pueue --locked`) into
//! `bench-tools/` in the target directory, once; its daemon runs with a
//! config of its own (directories and socket in a temp dir), and its tasks
//! are `true` run 16 at a time, so both listings are of finished work.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use agentd_e2e::Env;
use agentd_e2e::script::{script, text, turn};
use agentd_shared::proto as pb;

use super::{arg, ms, percentile};

/// The pueue release measured; pinned so reruns compare like with like.
const PUEUE_VERSION: &str = "4.0.4";

pub fn bench_pueue(args: &[String]) {
    let tasks: usize = arg(args, "--tasks", "1000").parse().unwrap();
    let runs: usize = arg(args, "--runs", "100").parse().unwrap();
    let bin = install_pueue();
    let pueue = Pueue::start(&bin);

    let t = Instant::now();
    assert!(pueue.run(&["parallel", "16"]).status.success());
    for _ in 0..tasks {
        let out = pueue.run(&["add", "--", "true"]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let deadline = Instant::now() + Duration::from_secs(120);
    let pueue_bytes = loop {
        let (done, total, bytes) = pueue.done_tasks();
        if done == tasks {
            assert_eq!(total, tasks, "pueue lists every task");
            break bytes;
        }
        assert!(
            Instant::now() < deadline,
            "pueue finished {done} of {tasks} tasks in 120 s"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    println!(
        "pueue {PUEUE_VERSION}: {tasks} tasks (`true`, 16 in parallel) added and done in {:.1} s",
        t.elapsed().as_secs_f64()
    );

    let env = Env::new();
    let _daemon = env.start_daemon();
    let model = env.script("s.json", &script(vec![turn(vec![text("ok")])]));
    let t = Instant::now();
    env.rpc(async |client| {
        let mut ids = Vec::with_capacity(tasks);
        for i in 0..tasks {
            let a = client
                .create_agent(pb::CreateAgentRequest {
                    prompt: format!("agent number {i}: summarize the repository"),
                    model: model.clone(),
                    cwd: env.project().display().to_string(),
                    background: true,
                    ..Default::default()
                })
                .await
                .unwrap()
                .into_inner();
            ids.push(a.id);
        }
        for id in ids {
            let a = client
                .wait_agent(pb::WaitAgentRequest { id })
                .await
                .unwrap()
                .into_inner();
            assert_eq!(a.status, pb::AgentStatus::Completed as i32);
        }
    });
    println!(
        "agentd: {tasks} agents (a scripted one-turn answer) created and completed in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    let listed = env.ctl(&["list", "--json"]);
    assert_eq!(listed.json().as_array().unwrap().len(), tasks);

    let (mut p, mut a) = (Vec::with_capacity(runs), Vec::with_capacity(runs));
    for _ in 0..runs {
        let t = Instant::now();
        let out = pueue.run(&["status", "--json"]);
        p.push(t.elapsed());
        assert!(out.status.success());
        let t = Instant::now();
        let out = env.ctl(&["list", "--json"]);
        a.push(t.elapsed());
        assert_eq!(out.code, 0, "{}", out.stderr);
    }
    p.sort();
    a.sort();
    let row = |what: &str, v: &[Duration], bytes: usize| {
        println!(
            "  {what:<44} {bytes:>9} {:>9.2} {:>9.2}",
            ms(percentile(v, 0.5)),
            ms(percentile(v, 0.99))
        );
    };
    println!(
        "{tasks} finished each, whole client processes, alternating ({runs} runs each):\n  {:<44} {:>9} {:>9} {:>9}",
        "what", "bytes", "p50 ms", "p99 ms"
    );
    row("pueue status --json (baseline)", &p, pueue_bytes);
    row("agentctl list --json", &a, listed.stdout.len());
    println!(
        "  ratio agentctl / pueue: p50 {:.2}x, p99 {:.2}x",
        percentile(&a, 0.5).as_secs_f64() / percentile(&p, 0.5).as_secs_f64(),
        percentile(&a, 0.99).as_secs_f64() / percentile(&p, 0.99).as_secs_f64()
    );
}

/// `pueue` and `pueued`, installed into the target directory by cargo
/// when they are not there yet.
fn install_pueue() -> PathBuf {
    let root = agentd_e2e::bin_dir()
        .parent()
        .expect("the target directory")
        .join("bench-tools")
        .join(format!("pueue-{PUEUE_VERSION}"));
    let bin = root.join("bin");
    if bin.join("pueue").is_file() && bin.join("pueued").is_file() {
        return bin;
    }
    println!("installing pueue {PUEUE_VERSION} into {}", root.display());
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let status = Command::new(cargo)
        .args(["install", "pueue", "--locked", "--version", PUEUE_VERSION])
        .arg("--root")
        .arg(&root)
        .status()
        .expect("run cargo install");
    assert!(status.success(), "cargo install pueue failed");
    bin
}

/// A `pueued` of our own: its state, socket and config in a temp dir.
struct Pueue {
    bin: PathBuf,
    dir: tempfile::TempDir,
    daemon: Child,
}

impl Pueue {
    fn start(bin: &Path) -> Pueue {
        let dir = tempfile::Builder::new()
            .prefix("bench-pueue-")
            .tempdir()
            .unwrap();
        let d = dir.path();
        for sub in ["home", "data", "run"] {
            std::fs::create_dir_all(d.join(sub)).unwrap();
        }
        std::fs::write(
            d.join("pueue.yml"),
            format!(
                "shared:\n  pueue_directory: {data}\n  runtime_directory: {run}\n  alias_file: {home}/aliases.yml\n  use_unix_socket: true\n  unix_socket_path: {run}/pueue.socket\n  pid_path: {run}/pueue.pid\n",
                data = d.join("data").display(),
                run = d.join("run").display(),
                home = d.join("home").display(),
            ),
        )
        .unwrap();
        let mut cmd = Command::new(bin.join("pueued"));
        Pueue::apply(d, &mut cmd);
        let daemon = cmd
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(d.join("pueued.log")).unwrap())
            .spawn()
            .expect("start pueued");
        let pueue = Pueue {
            bin: bin.to_path_buf(),
            dir,
            daemon,
        };
        agentd_e2e::wait_until("pueued answers", Duration::from_secs(20), || {
            pueue.run(&["status", "--json"]).status.success()
        });
        pueue
    }

    /// The same small environment for the daemon and every client (pueue
    /// copies a client's environment into each task it adds).
    fn apply(dir: &Path, cmd: &mut Command) {
        cmd.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", dir.join("home"))
            .env("XDG_CONFIG_HOME", dir.join("home/.config"))
            .env("XDG_DATA_HOME", dir.join("home/.local/share"))
            .env("XDG_RUNTIME_DIR", dir.join("run"))
            .env("PUEUE_CONFIG_PATH", dir.join("pueue.yml"))
            .stdin(Stdio::null());
    }

    fn run(&self, args: &[&str]) -> std::process::Output {
        let mut cmd = Command::new(self.bin.join("pueue"));
        Pueue::apply(self.dir.path(), &mut cmd);
        cmd.args(args).output().expect("run pueue")
    }

    /// (tasks done, tasks listed, bytes of `status --json`).
    fn done_tasks(&self) -> (usize, usize, usize) {
        let out = self.run(&["status", "--json"]);
        assert!(out.status.success());
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let tasks = v["tasks"].as_object().expect("status has tasks");
        let done = tasks
            .values()
            .filter(|t| t["status"].get("Done").is_some())
            .count();
        (done, tasks.len(), out.stdout.len())
    }
}

impl Drop for Pueue {
    fn drop(&mut self) {
        let _ = self.daemon.kill();
        let _ = self.daemon.wait();
    }
}
