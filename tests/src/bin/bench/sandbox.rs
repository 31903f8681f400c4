//! `bench sandbox`: what the tool sandbox costs a Bash call — `true`, and
//! a `find` over 1,000 files — confined (Landlock ruleset built in the
//! daemon, applied in the child before exec) against unconfined, calls
//! alternating so noise hits both.

use std::time::{Duration, Instant};

use agentd::domain::{SandboxMode, ToolName};
use agentd::sandbox::Policy;
use agentd::tools::{ToolContext, run_tool};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::{arg, ms, percentile};

pub fn bench_sandbox(args: &[String]) {
    let runs: usize = arg(args, "--runs", "300").parse().unwrap();
    let files: usize = arg(args, "--files", "1000").parse().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("project");
    for i in 0..files {
        let sub = project.join(format!("d{:02}", i % 50));
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::write(sub.join(format!("f{i}.txt")), "x").unwrap();
    }
    let project = project.canonicalize().unwrap();
    let tmp = dir.path().join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let plain = ToolContext::new(project.clone(), CancellationToken::new());
    let mut confined = plain.clone();
    confined.sandbox = Some(Policy {
        mode: SandboxMode::WorkspaceWrite,
        no_network: false,
        workspace: project.clone(),
        tmpdir: tmp,
        also_writable: Vec::new(),
    });
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    agentd::sandbox::pid_namespace::set_helper().unwrap();
    println!(
        "Landlock ABI {}; commands contained in {}; {files} files; Bash tool calls through agentd::tools::run_tool, alternating.",
        agentd::sandbox::kernel_abi(),
        agentd::sandbox::pid_namespace::support()
            .map(|m| m.describe())
            .unwrap_or("nothing")
    );
    println!(
        "| command | runs | unconfined p50 | confined p50 | unconfined p90 | confined p90 | confined / unconfined (p50) |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- |");
    for (label, command, n) in [
        ("true", "true".to_string(), runs),
        (
            "find, 1,000 files",
            "find . -type f | wc -l".to_string(),
            runs / 3,
        ),
    ] {
        let input = json!({"command": command});
        let mut times = [Vec::new(), Vec::new()];
        for i in 0..n + 5 {
            for (k, ctx) in [&plain, &confined].into_iter().enumerate() {
                // Alternate which goes first.
                let (k, ctx) = if i % 2 == 0 {
                    (k, ctx)
                } else if k == 0 {
                    (1, &confined)
                } else {
                    (0, &plain)
                };
                let started = Instant::now();
                let out = rt.block_on(run_tool(ToolName::Bash, &input, ctx));
                let took = started.elapsed();
                assert!(!out.is_error, "{}", out.content);
                if i >= 5 {
                    times[k].push(took);
                }
            }
        }
        for t in &mut times {
            t.sort();
        }
        let p = |t: &[Duration], q| ms(percentile(t, q));
        println!(
            "| {label} | {n} | {:.3} ms | {:.3} ms | {:.3} ms | {:.3} ms | {:.2}x |",
            p(&times[0], 0.5),
            p(&times[1], 0.5),
            p(&times[0], 0.9),
            p(&times[1], 0.9),
            p(&times[1], 0.5) / p(&times[0], 0.5)
        );
    }
}
